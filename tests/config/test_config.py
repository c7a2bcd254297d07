"""Schema, validation and composition of every shipped config option (Hydra compose API, no run)."""

from __future__ import annotations

import math
import sys

import pytest
import torch
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from helpers import EXPERIMENTS, REPO
from helpers.neuron_standin.fixture import STANDIN_DIR
from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.inputs import make_inputs
from neuronexp.cell.profiling import resolve_schedule
from neuronexp.config import ConfigError, RunConfig, ScheduleConfig, validate, validate_units
from neuronexp.config.compose import spec_from, to_run_config
from neuronexp.config.targets import instantiate


@pytest.fixture
def hydra_conf():
    GlobalHydra.instance().clear()
    with initialize_config_module("neuronexp.conf", version_base="1.3"):
        yield
    GlobalHydra.instance().clear()


def _run_config(**module) -> RunConfig:
    """The schema's defaults, resolved (input.shape follows dims), with a small module."""
    module = module or {"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 8}
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(RunConfig), {"module": module}))


@pytest.mark.parametrize("option", sorted(p.stem for p in (REPO / "conf" / "module").glob("*.yaml")))
def test_every_module_option_composes_builds_and_runs_on_its_inputs(
    hydra_conf, option: str, monkeypatch, request
) -> None:
    def forget_nki() -> None:  # as a process without `nki` has it
        for name in [m for m in sys.modules if m == "nki" or m.startswith("nki.") or m.endswith(".nki_kernels")]:
            del sys.modules[name]

    if option == "nki_add":  # the NKI recipe's kernel needs `nki` (Trainium): the stand-in runs its body on the CPU
        monkeypatch.syspath_prepend(str(STANDIN_DIR))
        forget_nki()
        request.addfinalizer(forget_nki)
    cfg = compose(
        "config",
        overrides=[f"module={option}", "shapes=tiny", "dims.seq=8", "input.dtype=float32"],
        return_hydra_config=True,
    )
    spec = spec_from(cfg, dict(cfg.hydra.runtime.choices), [f"module={option}"], f"module={option}")
    assert spec.module_name == option and spec.warnings == ()
    assert spec.config.compile.enabled == (option == "rmsnorm_compiled")
    module = instantiate(spec.config.module)  # as the cell process builds it (cell.build), without Hydra
    args, kwargs = make_inputs(spec.config.input, module, torch.device("cpu"))
    # Every shipped layer follows dims: the tiny preset sizes its inputs (8 tokens, 4 heads of 16, hidden 64).
    assert args[0].shape[-1] in (64, 16, 8) and 8 in args[0].shape
    with torch.inference_mode():
        out = module(*args, **kwargs)
    first = out[0] if isinstance(out, tuple) else out
    assert torch.isfinite(first).all() and first.shape == args[0].shape
    if option in ("nki_add", "torch_add"):  # x + x on its one input: the kernel's own body, run by the stand-in
        assert torch.equal(first, args[0] + args[0])


@pytest.mark.parametrize("option", sorted(p.stem for p in (REPO / "conf" / "profiler").glob("*.yaml")))
def test_every_profiler_option_composes(hydra_conf, option: str) -> None:
    run_cfg = to_run_config(compose("config", overrides=[f"profiler={option}"]))
    validate(run_cfg)
    assert resolve_schedule(run_cfg.profiler, CpuBackend).active >= 1


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml")))
def test_every_experiment_composes_and_sweeps_by_default(hydra_conf, experiment: str) -> None:
    cfg = compose("config", overrides=[f"+experiment={experiment}"], return_hydra_config=True)
    assert str(cfg.hydra.mode) == "RunMode.MULTIRUN"
    assert cfg.hydra.sweeper.params, "an experiment declares its axes"
    text = (REPO / "conf" / "experiment" / f"{experiment}.yaml").read_text()
    assert f"neuronexp +experiment={experiment}" in text, "header comment gives the exact command"


def test_user_experiments_compose_from_their_config_dir(hydra_conf) -> None:
    # What `--config-dir experiments` does: the directory joins the search path.
    cfg = compose(
        "config",
        overrides=[f"hydra.searchpath=[file://{EXPERIMENTS}]", "+experiment=swiglu_mlp"],
        return_hydra_config=True,
    )
    assert cfg.module._target_ == "layers.swiglu.SwiGLUMLP"
    run_cfg = to_run_config(cfg)
    assert run_cfg.input.args == [{"shape": run_cfg.input.shape, "dtype": "bfloat16"}]  # the residual
    assert run_cfg.baseline == {"compile.enabled": False}


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (EXPERIMENTS / "experiment").glob("*.yaml")))
def test_every_user_experiment_composes_and_names_its_command(hydra_conf, experiment: str) -> None:
    cfg = compose(
        "config",
        overrides=[f"hydra.searchpath=[file://{EXPERIMENTS}]", f"+experiment={experiment}"],
        return_hydra_config=True,
    )
    assert str(cfg.hydra.mode) == "RunMode.MULTIRUN" and cfg.hydra.sweeper.params
    text = (EXPERIMENTS / "experiment" / f"{experiment}.yaml").read_text()
    assert f"neuronexp --config-dir experiments +experiment={experiment}" in text


def test_the_shape_presets_resize_every_layer_and_sweep_sequence_lengths(hydra_conf) -> None:
    cfg = compose(
        "config",
        overrides=["+experiment=attention", "module=attention_naive", "shapes=llama3_70b"],
        return_hydra_config=True,
    )
    assert cfg.hydra.sweeper.params["dims.seq"] == "128,512,2048,8192"
    run_cfg = to_run_config(cfg)
    assert run_cfg.input.shape == [1, 64, 1024, 128]  # q: 64 heads of 128 (Llama-3 70B) at dims.seq
    assert run_cfg.input.args == [{"shape": [1, 8, 1024, 128]}] * 2  # k, v: 8 key/value heads
    plain = to_run_config(compose("config", overrides=["shapes=llama3_8b", "dims.seq=512"]))
    assert plain.input.shape == [1, 512, 4096] and plain.module["hidden_size"] == 4096
    # Without a preset the default input is Llama-3 8B's hidden size at 1,024 tokens.
    assert to_run_config(compose("config")).input.shape == [1, 1024, 4096]


def test_each_dims_key_reaches_the_inputs_and_the_module(hydra_conf) -> None:
    norm = to_run_config(compose("config", overrides=["dims.batch=3", "dims.seq=16", "dims.hidden=96"]))
    assert norm.input.shape == [3, 16, 96] and norm.module["hidden_size"] == 96
    mlp = to_run_config(compose("config", overrides=["module=swiglu_naive", "dims.hidden=64", "dims.intermediate=80"]))
    assert mlp.module["intermediate_size"] == 80 and mlp.input.shape[-1] == 64
    overrides = [
        "module=rotary_naive",
        "dims.batch=2",
        "dims.heads=6",
        "dims.kv_heads=3",
        "dims.seq=5",
        "dims.head_dim=8",
        "dims.rope_theta=100.0",
    ]
    rotary = to_run_config(compose("config", overrides=overrides))
    assert rotary.input.shape == [2, 6, 5, 8] and rotary.input.args == [{"shape": [2, 3, 5, 8]}]
    built = instantiate(
        spec_from(
            compose("config", overrides=overrides, return_hydra_config=True), {"module": "rotary_naive"}, overrides, ""
        ).config.module
    )
    # theta reaches the rotation: position 1 of the first pair turns by 1 rad for any theta, of the second pair
    # by theta^(-2/8) rad, which tells 100 from Llama-3's 500,000.
    assert built.cos[1, 1].item() == pytest.approx(math.cos(100.0**-0.25), rel=1e-6)


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda c: setattr(c.input, "shape", [1, 0, 4]), "input.shape"),
        (lambda c: setattr(c.input, "shape", []), "input.shape"),
        (lambda c: setattr(c.profiler.schedule, "active", 0), "profiler.schedule.active"),
        (lambda c: setattr(c.profiler.schedule, "repeat", 0), "profiler.schedule.repeat"),
        (lambda c: setattr(c.timing, "iters", 0), "timing.iters"),
        (lambda c: setattr(c.timing, "max_seconds", 0.0), "timing.max_seconds"),
        (lambda c: setattr(c.dims, "kv_heads", 3), "dims.kv_heads"),
        (lambda c: setattr(c.dims, "seq", 0), "dims.seq"),
        (lambda c: setattr(c, "baseline", [1]), "baseline"),
        (lambda c: setattr(c, "baseline", {"module": {"a": 1}}), "baseline.module"),
        (lambda c: setattr(c.input, "extra", [{"shape": [1, 2]}]), "input.extra"),
    ],
)
def test_validate_names_the_bad_key(mutate, key: str) -> None:
    cfg = _run_config()
    mutate(cfg)
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert err.value.key == key
    assert str(err.value).startswith(f"{key}=")


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        ("no_such_pkg.Layer", "cannot be imported"),
        ("collections.OrderedDict", "is not a torch.nn.Module"),
        ("neuronexp.modules.NoSuchLayer", "has no attribute NoSuchLayer"),
    ],
)
def test_module_target_is_checked_before_running(target: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        validate(_run_config(_target_=target))


@pytest.mark.parametrize("good", ["0", "0,1", "0,1,2-5", "4-7"])
def test_core_lists_accept_the_documented_forms(good: str) -> None:
    validate_units("k", good)


def test_run_config_round_trips_through_omegaconf() -> None:
    cfg = OmegaConf.structured(RunConfig)
    assert OmegaConf.to_object(OmegaConf.merge(cfg, {"module": {"_target_": "x.Y"}})).module == {"_target_": "x.Y"}


def test_schedule_defaults_follow_the_design(hydra_conf) -> None:
    """Left null, the schedule is the backend's: five one-step cycles where a step is cheap, 2/1/1/1 on Neuron."""
    from neuronexp.backends.cuda.cuda_backend import CudaBackend
    from neuronexp.backends.neuron.neuron_backend import NeuronBackend

    profiler = to_run_config(compose("config")).profiler
    assert (profiler.schedule.wait, profiler.schedule.repeat) == (None, None)
    assert (
        resolve_schedule(profiler, CpuBackend) == resolve_schedule(profiler, CudaBackend) == ScheduleConfig(1, 1, 1, 5)
    )
    assert resolve_schedule(profiler, NeuronBackend) == ScheduleConfig(2, 1, 1, 1)
    quick = to_run_config(compose("config", overrides=["profiler=quick"])).profiler
    assert resolve_schedule(quick, NeuronBackend) == ScheduleConfig(0, 1, 1, 1)


def test_schema_keys_are_known_inside_neuronexps_nodes_only() -> None:
    from neuronexp.config.validate import schema_keys

    assert schema_keys("timing") == [
        "warmup",
        "iters",
        "max_seconds",
        "min_iters",
        "min_seconds",
        "rounds",
        "round_gap_s",
        "relocate",
        "precision",
        "min_rounds",
    ]
    assert "kv_heads" in (schema_keys("dims") or [])
    assert "schedule" in (schema_keys("profiler") or [])
    assert schema_keys("module") is None and schema_keys("notes") is None and schema_keys("input.kwargs") is None


def test_a_retired_key_is_never_offered_as_allowed(cli) -> None:
    # input.extra is still read, only to say it was renamed; the keys offered after a typo must not include it.
    from neuronexp.config.validate import schema_keys

    assert "args" in (schema_keys("input") or []) and "extra" not in (schema_keys("input") or [])
    for typo in ("input.extar=1", "+input.extar=1"):
        result = cli(typo)
        assert result.returncode == 2 and "input takes shape, dtype" in result.stderr, result.stderr
        assert "extra" not in result.stderr.replace("extar", ""), result.stderr
    result = cli("+input.extra=[1]")
    assert result.returncode == 2 and "input.extra=[...]: renamed to input.args" in result.stderr, result.stderr


@pytest.fixture
def user_package(tmp_path, monkeypatch):
    """A package of the user's, importable from the working directory, that no test has imported yet: its
    `__init__` imports none of its modules (`nested` has a nested layer class, `needs` a missing dependency,
    `raises` an error at import time)."""
    name = f"userpkg_{tmp_path.name.replace('-', '_')}"
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "nested.py").write_text("import torch\n\nclass Outer:\n    class Inner(torch.nn.Identity):\n        pass\n")
    (pkg / "needs.py").write_text("import no_such_dependency\n")
    (pkg / "raises.py").write_text("raise RuntimeError('no GPU here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def test_a_module_target_that_cannot_be_found_is_one_line_saying_why(user_package: str) -> None:
    """What went wrong, in the module's own words where it has them, on the line that names the key and value."""
    tip = (
        "cannot be imported; give a dotted path like mypkg.layers.MyLayer "
        "importable from the working directory or experiments/"
    )
    cases = {
        "no_such_pkg.Layer": tip,
        "no_such_pkg.layers.Layer": tip,  # a missing package, not only a missing last module
        "neuronexp.modules.NoSuch.Deeper": "neuronexp.modules has no attribute NoSuch.Deeper",
        f"{user_package}.needs.Layer": f"importing {user_package}.needs failed: No module named 'no_such_dependency'",
        f"{user_package}.raises.Layer": f"importing {user_package}.raises failed: RuntimeError: no GPU here",
    }
    for target, why in cases.items():
        with pytest.raises(ConfigError) as err:
            validate(_run_config(_target_=target))
        assert str(err.value) == f"module._target_={target}: {why}"


def test_a_nested_class_in_a_module_its_package_does_not_import_is_found(user_package: str) -> None:
    """As Hydra finds `pkg.mod.Outer.Inner`: in the longest prefix that imports as a module."""
    validate(_run_config(_target_=f"{user_package}.nested.Outer.Inner"))
