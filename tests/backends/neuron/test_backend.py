"""The Neuron backend's real code over the torch-neuronx STAND-IN: environment, NeuronConfig, API branches, sync."""

from __future__ import annotations

import enum
import os
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity

from helpers.neuron_standin.fixture import neuron_config
from neuronexp.backends import resolve_backend
from neuronexp.backends.neuron import sdk as neuron_sdk
from neuronexp.backends.neuron.neuron_backend import NeuronBackend
from neuronexp.cell.profiling import profile_callable, steps_needed
from neuronexp.config import (
    ConfigError,
    NeuronDeviceConfig,
    NeuronMode,
    NeuronProfilerConfig,
    ProfilerConfig,
    ScheduleConfig,
)


def _backend(device: NeuronDeviceConfig | None = None, **profiler: object) -> NeuronBackend:
    backend = resolve_backend("neuron", neuron_config(device or NeuronDeviceConfig(), NeuronProfilerConfig(**profiler)))
    assert isinstance(backend, NeuronBackend)
    return backend


def test_without_torch_neuronx_neuron_fails_in_one_line_saying_what_to_install() -> None:
    with pytest.raises(ConfigError) as err:
        resolve_backend("neuron")
    line = str(err.value)
    assert "\n" not in line and line.startswith("backend=neuron: torch-neuronx is not installed")
    assert "family matching your PyTorch" in line and "pip install -e .[neuron]" in line and "docs/neuron.md" in line


def test_core_selection_reaches_the_environment_before_the_runtime_starts(standin) -> None:
    backend = _backend(NeuronDeviceConfig(visible_cores="0-1", num_cores=2))
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == "0-1" and os.environ["NEURON_RT_NUM_CORES"] == "2"
    # The availability check started the (stand-in) runtime: it saw the values already set.
    assert standin.STATE.env_at_start == {"NEURON_RT_VISIBLE_CORES": "0-1", "NEURON_RT_NUM_CORES": "2"}
    assert backend.notes == []


def test_core_selection_after_the_runtime_started_is_reported_not_silently_ignored(standin) -> None:
    standin.device_count()  # e.g. an earlier cell of the same process already used the device
    backend = _backend(NeuronDeviceConfig(visible_cores="3"))
    (note,) = backend.notes
    assert note.startswith("neuron.visible_cores=3 not applied: the Neuron runtime already started")
    assert "NEURON_RT_VISIBLE_CORES=unset" in note


def test_the_row_records_the_cores_the_runtime_reads(standin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_RT_NUM_CORES", "4")  # the user's shell; the key overrides it before the runtime starts
    backend = _backend(NeuronDeviceConfig(visible_cores="0-1", num_cores=2))
    assert standin.STATE.env_at_start == {"NEURON_RT_VISIBLE_CORES": "0-1", "NEURON_RT_NUM_CORES": "2"}
    assert (
        backend.cores == "NEURON_RT_VISIBLE_CORES=0-1 (neuron.visible_cores), NEURON_RT_NUM_CORES=2 (neuron.num_cores)"
    )


def test_after_the_runtime_started_the_row_records_what_it_started_with(standin, monkeypatch) -> None:
    monkeypatch.setenv("NEURON_RT_NUM_CORES", "4")
    standin.device_count()  # an earlier cell of the process started the runtime: it reads no variable again
    backend = _backend(NeuronDeviceConfig(visible_cores="3", num_cores=2))
    assert backend.cores == (
        "NEURON_RT_VISIBLE_CORES=unset (the runtime started before neuron.visible_cores=3 could apply), "
        "NEURON_RT_NUM_CORES=4 (the runtime started before neuron.num_cores=2 could apply)"
    )
    assert [n.split(";")[0] for n in backend.notes] == [
        "neuron.visible_cores=3 not applied: the Neuron runtime already started in this process with "
        "NEURON_RT_VISIBLE_CORES=unset",
        "neuron.num_cores=2 not applied: the Neuron runtime already started in this process with NEURON_RT_NUM_CORES=4",
    ]
    same = _backend(NeuronDeviceConfig(num_cores=2))  # now the variable says 2, as the key: nothing to note
    assert same.notes == [] and same.cores == "NEURON_RT_NUM_CORES=2 (neuron.num_cores)"


@pytest.mark.parametrize(
    ("preset", "kept"),
    [("0-7", "NEURON_RT_VISIBLE_CORES=0-7 (a launcher slot within neuron.visible_cores=0-3,4-7)"), ("all", None)],
)
def test_a_core_list_in_the_environment_is_kept_only_within_the_key(standin, preset: str, kept: str | None) -> None:
    """The key's own list already there is kept as it is; a value the runtime could not read is replaced, and the
    other key still applies."""
    os.environ["NEURON_RT_VISIBLE_CORES"] = preset
    backend = _backend(NeuronDeviceConfig(visible_cores="0-3, 4-7", num_cores=2))
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == (preset if kept else "0-3,4-7")  # spaces dropped
    assert os.environ["NEURON_RT_NUM_CORES"] == "2"
    first = kept or "NEURON_RT_VISIBLE_CORES=0-3,4-7 (neuron.visible_cores)"
    assert backend.cores == f"{first}, NEURON_RT_NUM_CORES=2 (neuron.num_cores)"


DEFAULT_CORES = "NEURON_RT_NUM_CORES=1 (neuronexp's default: one NeuronCore per cell)"


def test_one_neuroncore_by_default_for_every_cell_of_the_process(standin) -> None:
    first = _backend()
    assert os.environ["NEURON_RT_NUM_CORES"] == "1" and first.cores == DEFAULT_CORES and first.notes == []
    assert _backend().cores == DEFAULT_CORES  # the next cell: the 1 is neuronexp's own, not the environment's


def test_the_default_after_the_runtime_started_is_a_note(standin) -> None:
    standin.device_count()  # an earlier use of the device in this process started the runtime with every core
    backend = _backend()
    assert backend.notes[0].startswith(
        "neuron.num_cores (default)=1 not applied: the Neuron runtime already started in this process with "
        "NEURON_RT_NUM_CORES=unset"
    )


def test_cores_the_environment_chose_are_recorded_as_its(standin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "2-3")
    monkeypatch.setenv("NEURON_RT_NUM_CORES", "2")
    assert _backend().cores == "NEURON_RT_VISIBLE_CORES=2-3, NEURON_RT_NUM_CORES=2 (the environment)"


def test_unset_core_keys_leave_the_users_environment_alone(standin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_RT_NUM_CORES", "4")
    _backend()
    assert os.environ["NEURON_RT_NUM_CORES"] == "4" and "NEURON_RT_VISIBLE_CORES" not in os.environ


@pytest.mark.parametrize(("preset", "expected"), [("2-3", "2-3"), ("4", "4"), ("8", "0-7"), ("6-9", "0-7")])
def test_a_narrower_core_list_already_in_the_environment_is_kept(standin, preset: str, expected: str) -> None:
    """A parallel launcher's slot (or the user) may have carved a few cores out of neuron.visible_cores."""
    os.environ["NEURON_RT_VISIBLE_CORES"] = preset
    _backend(NeuronDeviceConfig(visible_cores="0-7"))
    assert os.environ["NEURON_RT_VISIBLE_CORES"] == expected


def test_device_activities_compile_backend_and_warmup_floor(standin) -> None:
    backend = _backend()
    assert backend.activities() == [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
    assert backend.compile_backend() == "neuron"
    assert backend.min_warmup_calls == 3
    assert backend.device_name() == "NeuronCore stand-in (CPU)"
    assert backend.api.kind == neuron_sdk.DOCUMENTED and backend.api.version == standin.__version__


def test_neuron_config_is_built_from_profiler_neuron_keys(
    standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, probe_cache: Path
) -> None:
    backend = _backend(
        modes=[NeuronMode.DEVICE, NeuronMode.CPU_UTIL], capture_enabled_for_nc="0,1,2-5", max_events_per_nc=250_000
    )
    kwargs = backend.profiler_kwargs(tmp_path)
    config = kwargs["experimental_config"]
    (made,) = standin.STATE.configs
    P = standin.profiling.ProfileMode
    assert made["modes"] == [P.DEVICE, P.CPU_UTIL]
    assert made["capture_enabled_for_nc"] == "0,1,2-5" and made["max_events_per_nc"] == 250_000
    assert made["profile_output_dir"] == str((tmp_path / "neuron_profile").resolve())
    # Nothing names a cache: neuronexp's per-user one for this SDK ($NEURONEXP_CACHE_DIR/neff/<version> here), pinned
    # for the process.
    pinned = str(probe_cache / "neff" / f"torch-neuronx-{standin.__version__}")
    assert made["neff_cache_dir"] == pinned == os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"]
    assert backend.neff_cache.source == "neuronexp cache"
    # The study's own configuration, wherever the installed NeuronConfig takes it.
    assert made["correlate_device_time"] is True and backend.correlate == neuron_sdk.GIVEN
    # The framework trace is saved by NeuronProfiler(<the same config>).export_trace, given the profiler itself.
    calls = []
    monkeypatch.setattr(
        standin.profiling.NeuronProfiler, "export_trace", lambda self, prof: calls.append((self.config, prof))
    )
    prof = object()
    assert backend.save_trace(prof, None) is False
    assert calls == [(config, prof)]
    assert backend.trace_handlers(tmp_path) == [backend.observed.record]


def test_correlate_device_time_false_is_passed_as_false(standin, tmp_path: Path) -> None:
    backend = _backend(correlate_device_time=False)  # the user's answer, where the NeuronConfig takes it
    kwargs = neuron_sdk.neuron_config_kwargs(backend.api, backend.profiler_cfg, "/out", "/var/cache/neffs")
    assert set(kwargs) == {"modes", "profile_output_dir", "neff_cache_dir", "correlate_device_time"}
    assert kwargs["neff_cache_dir"] == "/var/cache/neffs" and kwargs["correlate_device_time"] is False
    backend.profiler_kwargs(tmp_path)
    assert standin.STATE.configs[-1]["correlate_device_time"] is False and backend.correlate == neuron_sdk.OFF
    no_copy = _backend(copy_neffs=False)
    assert no_copy.config_neff_cache() is None
    assert "neff_cache_dir" not in neuron_sdk.neuron_config_kwargs(no_copy.api, no_copy.profiler_cfg, "/out", None)


@pytest.mark.parametrize("standin", ["no_correlate"], indirect=True)
def test_a_signature_python_cannot_read_is_tried_and_a_refusal_is_recorded(
    standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A C++ binding hides its signature: correlate_device_time=True is tried, and a TypeError about it rebuilds the
    config without it (the row says refused); asked for explicitly, the same refusal is a config error."""
    monkeypatch.setattr(neuron_sdk, "accepts", lambda obj, name: None)
    backend = _backend()
    assert backend.api.correlate_supported is None
    backend.profiler_kwargs(tmp_path)
    assert backend.correlate == neuron_sdk.REFUSED and "correlate_device_time" not in standin.STATE.configs[-1]
    with pytest.raises(ConfigError, match=r"^profiler.neuron.correlate_device_time=True: not accepted by"):
        _backend(correlate_device_time=True).profiler_kwargs(tmp_path / "x")


@pytest.mark.parametrize("standin", ["no_correlate"], indirect=True)
def test_correlate_device_time_only_where_the_signature_has_it(standin, tmp_path: Path) -> None:
    backend = _backend()
    assert backend.api.correlate_supported is False
    backend.profiler_kwargs(tmp_path)
    assert "correlate_device_time" not in standin.STATE.configs[-1] and backend.correlate == neuron_sdk.NOT_PASSED
    with pytest.raises(ConfigError) as err:
        _backend(correlate_device_time=True)
    assert str(err.value).startswith(
        f"profiler.neuron.correlate_device_time=True: not accepted by the installed torch-neuronx {standin.__version__}"
    )


def test_a_profile_mode_the_installed_version_lacks_is_a_config_error(
    standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(standin.profiling, "ProfileMode", enum.Enum("ProfileMode", ["DEVICE", "RUNTIME"]))
    backend = _backend(modes=[NeuronMode.DEVICE, NeuronMode.HOST_MEMORY])
    with pytest.raises(
        ConfigError,
        match=r"^profiler.neuron.modes=HOST_MEMORY: .* has no ProfileMode.HOST_MEMORY; it has DEVICE, RUNTIME$",
    ):
        backend.profiler_kwargs(tmp_path)


@pytest.mark.parametrize("standin", ["legacy"], indirect=True)
def test_april_2026_api_wraps_the_profiled_pass_in_its_context_manager(standin, tmp_path: Path) -> None:
    backend = _backend(
        capture_enabled_for_nc="0,2-3", modes=[NeuronMode.DEVICE, NeuronMode.RUNTIME, NeuronMode.CPU_UTIL]
    )
    assert backend.api.kind == neuron_sdk.LEGACY and backend.api.correlate_supported is False
    assert backend.activities() == [ProfilerActivity.CPU]
    assert backend.profiler_kwargs(tmp_path) == {}
    session = backend.profile_session(tmp_path)
    assert isinstance(session, standin.profiling.AprilNeuronProfiler)
    assert session.pytorch_activities == [] and session.neuron_output_dir == str(
        (tmp_path / "neuron_profile").resolve()
    )
    assert session.event_filters == {"nc": ["0", "2-3"]}
    assert any("modes is not honoured" in n for n in backend.notes)
    assert backend.trace_handlers(tmp_path) == [backend.observed.record]


@pytest.mark.parametrize("standin", ["none"], indirect=True)
def test_neither_api_fails_in_one_line_naming_the_installed_version(standin) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_backend("neuron")
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(
        f"backend=neuron: torch-neuronx {standin.__version__} has neither torch_neuronx.profiling.NeuronConfig"
    )
    assert resolve_backend("auto").name in ("cuda", "cpu")  # auto moves on


def test_synchronize_precedes_every_profiler_step(standin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = standin.STATE.log
    real_step = torch.profiler.profile.step
    monkeypatch.setattr(torch.profiler.profile, "step", lambda self: (log.append("step"), real_step(self))[1])
    cfg = ProfilerConfig(schedule=ScheduleConfig(wait=1, warmup=1, active=1, repeat=2))
    result = profile_callable(lambda: log.append("call"), _backend(), cfg, tmp_path)
    assert log == ["call", "sync", "step"] * steps_needed(cfg.schedule)
    assert len(result.cycles) == 2


def test_explorer_timeout_must_be_positive() -> None:
    from neuronexp.backends import check_options
    from neuronexp.config import RunConfig

    cfg = RunConfig(module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 8})
    cfg.profiler.neuron.explorer_timeout_s = 0
    with pytest.raises(ConfigError, match=r"^profiler.neuron.explorer_timeout_s=0: must be > 0 seconds$"):
        check_options(cfg)
