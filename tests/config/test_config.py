"""Schema, validation and composition of every shipped config option (Hydra compose API, no run)."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from neuronexp.config.compose import spec_from, to_run_config
from neuronexp.config import ConfigError, RunConfig, validate, validate_units

from helpers import EXPERIMENTS, REPO


@pytest.fixture
def hydra_conf():
    GlobalHydra.instance().clear()
    with initialize_config_module("neuronexp.conf", version_base="1.3"):
        yield
    GlobalHydra.instance().clear()


def _run_config(**module) -> RunConfig:
    cfg = RunConfig()
    cfg.module = module or {"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 8}
    return cfg


@pytest.mark.parametrize("option", sorted(p.stem for p in (REPO / "conf" / "module").glob("*.yaml")))
def test_every_module_option_composes_and_builds(hydra_conf, option: str) -> None:
    cfg = compose("config", overrides=[f"module={option}", "input.shape=[2,4,32]"], return_hydra_config=True)
    spec = spec_from(cfg, dict(cfg.hydra.runtime.choices), [f"module={option}"], f"module={option}")
    module = spec.build_module()
    assert module.weight.shape == (32,)  # hidden size follows input.shape
    assert spec.module_name == option
    assert spec.config.compile.enabled == (option == "rmsnorm_compiled")


@pytest.mark.parametrize("option", sorted(p.stem for p in (REPO / "conf" / "profiler").glob("*.yaml")))
def test_every_profiler_option_composes(hydra_conf, option: str) -> None:
    run_cfg = to_run_config(compose("config", overrides=[f"profiler={option}"]))
    validate(run_cfg)
    assert run_cfg.profiler.schedule.active >= 1


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml")))
def test_every_experiment_composes_and_sweeps_by_default(hydra_conf, experiment: str) -> None:
    cfg = compose("config", overrides=[f"+experiment={experiment}"], return_hydra_config=True)
    assert str(cfg.hydra.mode) == "RunMode.MULTIRUN"
    assert cfg.hydra.sweeper.params, "an experiment declares its axes"
    text = (REPO / "conf" / "experiment" / f"{experiment}.yaml").read_text()
    assert f"neuronexp +experiment={experiment}" in text, "header comment gives the exact command"


def test_user_experiments_compose_from_their_config_dir(hydra_conf) -> None:
    # What `--config-dir experiments` does: the directory joins the search path.
    cfg = compose("config", overrides=[f"hydra.searchpath=[file://{EXPERIMENTS}]", "+experiment=swiglu_mlp"], return_hydra_config=True)
    assert cfg.module._target_ == "layers.swiglu.SwiGLUMLP"
    run_cfg = to_run_config(cfg)
    assert len(run_cfg.input.extra) == 1 and run_cfg.input.extra[0].shape == run_cfg.input.shape


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda c: setattr(c.input, "shape", [1, 0, 4]), "input.shape"),
        (lambda c: setattr(c.input, "shape", []), "input.shape"),
        (lambda c: setattr(c.profiler.schedule, "active", 0), "profiler.schedule.active"),
        (lambda c: setattr(c.profiler.schedule, "repeat", 0), "profiler.schedule.repeat"),
        (lambda c: setattr(c.timing, "iters", 0), "timing.iters"),
        (lambda c: setattr(c.timing, "max_seconds", 0.0), "timing.max_seconds"),
        (lambda c: setattr(c.profiler.neuron, "capture_enabled_for_nc", "0,a"), "profiler.neuron.capture_enabled_for_nc"),
        (lambda c: setattr(c.neuron, "visible_cores", "3-1"), "neuron.visible_cores"),
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
    cfg = to_run_config(compose("config"))
    s = cfg.profiler.schedule
    assert (s.wait, s.warmup, s.active, s.repeat) == (2, 1, 1, 1)
