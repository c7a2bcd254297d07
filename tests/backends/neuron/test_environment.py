"""What a Neuron cell sets up before compiling, over the torch-neuronx STAND-IN: the profiling-mechanism conflict,
the package family, the compile options TorchNeuron refuses, and the debug-info switch with its fresh NEFF cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from helpers.neuron_standin.fixture import neuron_config
from neuronexp.backends import check_available, resolve_backend
from neuronexp.backends.neuron import sdk as neuron_sdk
from neuronexp.backends.neuron.process_env import inspect_conflict
from neuronexp.config import CompileConfig, ConfigError, NeuronDeviceConfig, NeuronProfilerConfig

DEBUG_VARS = (
    "XLA_IR_DEBUG",
    "XLA_HLO_DEBUG",
    "NEURON_FRAMEWORK_DEBUG",
    "NKI_DEBUG_INFO",
    "TORCH_NEURONX_NEFF_CACHE_DIR",
    "TORCH_NEURONX_DEBUG_DIR",
)


@pytest.fixture
def clean_debug_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DEBUG_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("value", ["1", "true", "TRUE", " True "])
def test_inspect_enable_with_torch_profiler_is_refused_in_one_line(
    standin, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("NEURON_RT_INSPECT_ENABLE", value)
    for attempt in (lambda: resolve_backend("neuron"), lambda: check_available("neuron")):
        with pytest.raises(ConfigError) as err:
            attempt()
        line = str(err.value)
        assert "\n" not in line and line.startswith(
            f"NEURON_RT_INSPECT_ENABLE={value}: conflicts with neuronexp's torch.profiler"
        )
        assert "unset it" in line


def test_the_inspect_refusal_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_RT_INSPECT_ENABLE", "1")
    assert str(inspect_conflict()) == (
        "NEURON_RT_INSPECT_ENABLE=1: conflicts with neuronexp's torch.profiler capture (Neuron Explorer docs: "
        '"Don\'t combine it with torch.profiler"); unset it, neuronexp captures through NeuronConfig '
        "(profiler.neuron.*)"
    )


@pytest.mark.parametrize("value", ["0", "false", ""])
def test_inspect_enable_switched_off_is_fine(standin, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NEURON_RT_INSPECT_ENABLE", value)
    assert inspect_conflict() is None
    assert resolve_backend("neuron").name == "neuron"


def test_inspect_enable_does_not_stop_auto_where_no_neuroncore_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_RT_INSPECT_ENABLE", "1")
    assert resolve_backend("auto").name in ("cuda", "cpu")  # no torch-neuronx here: the Neuron check never runs


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (
            "2.9.0.2.15.32035",
            "is the PyTorch/XLA-based library (PyTorch <= 2.9), not TorchNeuron; install torch-neuronx==",
        ),
        ("1.13.1.1.12.0", "is the PyTorch/XLA-based library"),
        ("2.10.1.0", "is built for PyTorch 2.10 but torch"),
    ],
)
def test_an_xla_era_or_mismatched_package_is_named_as_such(
    standin, monkeypatch: pytest.MonkeyPatch, version: str, expected: str
) -> None:
    monkeypatch.setattr(standin, "__version__", version)
    torch_mm = ".".join(torch.__version__.split(".")[:2])
    with pytest.raises(ConfigError) as err:
        resolve_backend("neuron")
    assert f"backend=neuron: torch-neuronx {version} {expected}" in str(err.value)
    assert f"torch-neuronx=={torch_mm}.*" in str(err.value) and "no NeuronCore" not in str(err.value)


def test_the_matching_family_and_the_april_source_pass(standin, monkeypatch: pytest.MonkeyPatch) -> None:
    torch_mm = ".".join(torch.__version__.split(".")[:2])
    for version in (f"{torch_mm}.3.0", "0.1.0"):
        assert neuron_sdk.family_problem(standin, version, torch.__version__) is None
    monkeypatch.setattr(standin, "xla_impl", object(), raising=False)  # the XLA library's module, whatever its version
    assert "PyTorch/XLA-based" in neuron_sdk.family_problem(standin, f"{torch_mm}.3.0", torch.__version__)


@pytest.mark.parametrize(
    ("compile_cfg", "message"),
    [
        (
            CompileConfig(enabled=True, dynamic=True),
            'compile.dynamic=True: torch.compile(backend="neuron") rejects dynamic=True',
        ),
        (
            CompileConfig(enabled=True, mode="max-autotune"),
            'compile.mode=max-autotune: torch.compile(backend="neuron") runs only the default mode',
        ),
    ],
)
def test_compile_options_neuron_refuses_are_config_errors(standin, compile_cfg: CompileConfig, message: str) -> None:
    backend = resolve_backend("neuron")
    with pytest.raises(ConfigError, match=r"^" + message.replace("(", r"\(").replace(")", r"\)")):
        backend.check_compile(compile_cfg)


def test_compile_notes_and_other_compile_backends(standin) -> None:
    backend = resolve_backend("neuron")
    backend.check_compile(CompileConfig(enabled=True, mode="default", fullgraph=False))
    assert any(n.startswith("compile.fullgraph=false: graph breaks run eagerly") for n in backend.notes)
    quiet = resolve_backend("neuron")
    quiet.check_compile(CompileConfig(enabled=True, fullgraph=True, dynamic=None))
    quiet.check_compile(
        CompileConfig(enabled=True, backend="inductor", dynamic=True, mode="max-autotune")
    )  # not Neuron's
    quiet.check_compile(CompileConfig(enabled=False, dynamic=True))
    assert quiet.notes == []


def test_debug_info_sets_the_compile_time_variables_and_a_fresh_cache_then_restores(
    standin, clean_debug_env: None, tmp_path: Path
) -> None:
    os.environ["TORCH_NEURONX_DEBUG_DIR"] = "/users/own/debug"
    backend = resolve_backend(
        "neuron",
        neuron_config(NeuronDeviceConfig(debug_info=True), NeuronProfilerConfig(neff_cache_dir=str(tmp_path / "c"))),
    )
    cache = Path(os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"])
    assert {k: os.environ[k] for k in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NEURON_FRAMEWORK_DEBUG")} == dict.fromkeys(
        ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NEURON_FRAMEWORK_DEBUG"), "1"
    )
    assert "NKI_DEBUG_INFO" not in os.environ  # NKI source lines cost compile time: their own switch
    assert cache.parent == tmp_path / "c" and cache.is_dir() and list(cache.iterdir()) == []  # fresh: nothing to reuse
    assert os.environ["TORCH_NEURONX_DEBUG_DIR"] == str(cache / "debug")
    assert backend.debug.label == "XLA_IR_DEBUG=1,XLA_HLO_DEBUG=1,NEURON_FRAMEWORK_DEBUG=1"
    second = resolve_backend(
        "neuron",
        neuron_config(NeuronDeviceConfig(debug_info=True), NeuronProfilerConfig(neff_cache_dir=str(tmp_path / "c"))),
    )
    assert second.debug.neff_cache != backend.debug.neff_cache  # every cell compiles afresh
    second.finish()
    backend.finish()
    backend.finish()  # a cell that ends twice (its error path, then its end) puts nothing back twice
    assert os.environ["TORCH_NEURONX_DEBUG_DIR"] == "/users/own/debug"
    # Back to the cache pinned for the process (profiler.neuron.neff_cache_dir), which the next cell shares.
    assert os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] == str(tmp_path / "c")
    assert not any(k in os.environ for k in DEBUG_VARS if not k.startswith("TORCH_NEURONX_"))


def test_nki_debug_info_alone(standin, clean_debug_env: None) -> None:
    backend = resolve_backend("neuron", neuron_config(NeuronDeviceConfig(nki_debug_info=True), NeuronProfilerConfig()))
    assert os.environ["NKI_DEBUG_INFO"] == "True" and "XLA_HLO_DEBUG" not in os.environ
    assert backend.debug.label == "NKI_DEBUG_INFO=True"
    backend.finish()
    Path(backend.debug.neff_cache).rmdir()


def test_a_debug_setting_other_than_the_process_firsts_is_refused_in_one_line(standin, clean_debug_env: None) -> None:
    """TorchNeuron reads its NEFF cache once per process: the first Neuron cell of a process fixes whether NEFFs carry
    debug names, so a later cell of that process asking otherwise is refused (its error row), not run nameless."""
    first = resolve_backend("neuron", neuron_config(NeuronDeviceConfig(), NeuronProfilerConfig()))
    first.finish()
    with pytest.raises(ConfigError) as refused:
        resolve_backend("neuron", neuron_config(NeuronDeviceConfig(debug_info=True), NeuronProfilerConfig()))
    assert str(refused.value) == (
        "neuron.debug_info=neuron.debug_info=True,neuron.nki_debug_info=False: this process's first Neuron cell ran "
        "with neuron.debug_info=False,neuron.nki_debug_info=False, and TorchNeuron reads its NEFF cache and the debug "
        "variables once per process: run the cell in a process of its own (a sweep runs each cell or comparison group "
        "in one; from Python, a new interpreter)"
    )
    assert not any(k in os.environ for k in DEBUG_VARS[:4])  # none of the refused cell's variables was set
    again = resolve_backend("neuron", neuron_config(NeuronDeviceConfig(), NeuronProfilerConfig()))  # as the first
    assert again.debug.label == "off"
    os.environ["NEURONEXP_NEURON_DEBUG"] = "1:" + os.environ["NEURONEXP_NEURON_DEBUG"].split(":", 1)[1]
    other = resolve_backend("neuron", neuron_config(NeuronDeviceConfig(debug_info=True), NeuronProfilerConfig()))
    assert other.debug.label.startswith("XLA_IR_DEBUG=1")  # another process's mark (a forked cell's parent) binds none
    other.finish()
    Path(other.debug.neff_cache).rmdir()


@pytest.mark.parametrize("standin", ["none"], indirect=True)
def test_a_backend_that_cannot_start_leaves_no_debug_state(standin, clean_debug_env: None, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        resolve_backend(
            "neuron",
            neuron_config(NeuronDeviceConfig(debug_info=True), NeuronProfilerConfig(neff_cache_dir=str(tmp_path))),
        )
    assert not any(k in os.environ for k in DEBUG_VARS)
    assert list(tmp_path.iterdir()) == []  # the empty cache folder it made is gone again


def test_neuron_keys_typed_as_overrides_reach_the_runtime_and_neuronconfig(
    standin, clean_debug_env: None, tmp_path: Path
) -> None:
    """The keys as a user types them, composed by real Hydra from conf/, then handed to the backend as a cell does."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from neuronexp.config.compose import to_run_config

    neffs = tmp_path / "neffs"
    overrides = [
        "backend=neuron",
        "neuron.visible_cores=2-3",
        "neuron.num_cores=2",
        "neuron.debug_info=true",
        "neuron.nki_debug_info=true",
        "profiler.neuron.modes=[DEVICE]",
        "profiler.neuron.capture_enabled_for_nc='2'",
        "profiler.neuron.max_events_per_nc=5000",
        f"profiler.neuron.neff_cache_dir={neffs}",
    ]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("neuronexp.conf", version_base="1.3"):
            cfg = to_run_config(compose("config", overrides=overrides))
    finally:
        GlobalHydra.instance().clear()
    backend = resolve_backend("neuron", cfg)
    assert standin.STATE.env_at_start == {"NEURON_RT_VISIBLE_CORES": "2-3", "NEURON_RT_NUM_CORES": "2"}
    assert os.environ["NKI_DEBUG_INFO"] == "True" and os.environ["XLA_HLO_DEBUG"] == "1"
    kwargs = neuron_sdk.neuron_config_kwargs(backend.api, backend.profiler_cfg, "/out", backend.config_neff_cache())
    assert kwargs == {
        "modes": [standin.profiling.ProfileMode.DEVICE],
        "profile_output_dir": "/out",
        "capture_enabled_for_nc": "2",
        "max_events_per_nc": 5000,
        "neff_cache_dir": backend.debug.neff_cache,  # nki_debug_info: a fresh folder under the named cache
        "correlate_device_time": True,
    }
    assert Path(backend.debug.neff_cache).parent == neffs == Path(backend.neff_cache.path)
    backend.finish()
