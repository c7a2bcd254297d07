"""The checks of Neuron's options (backends/neuron/options.py), as the plan runs them on every config
(backends.check_options): the core lists the runtime accepts, the compile options TorchNeuron refuses, the
profiler's Neuron values; each a one-line ConfigError naming the key."""

from __future__ import annotations

import pytest

from neuronexp.backends import check_options
from neuronexp.backends.neuron.options import validate_visible_cores
from neuronexp.config import BackendName, CompileConfig, ConfigError, RunConfig


def _cfg(**kw: object) -> RunConfig:
    return RunConfig(module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 8}, **kw)


@pytest.mark.parametrize("good", ["3", "3-6", "3,4,5,6", "3-5,6", "0,1", "0-1,2-3"])
def test_contiguous_core_lists_in_any_documented_spelling_pass(good: str) -> None:
    """The runtime developer guide's examples: NEURON_RT_VISIBLE_CORES=3,4,5,6 / 3-6 / 3-5,6."""
    validate_visible_cores("neuron.visible_cores", good)


@pytest.mark.parametrize("bad", ["0,2", "3,5,6", "2,1", "4-5,1", "0-1,3"])
def test_a_gap_or_a_step_back_is_refused_with_the_rule(bad: str) -> None:
    cfg = _cfg()
    cfg.neuron.visible_cores = bad
    with pytest.raises(ConfigError) as err:
        check_options(cfg)
    assert str(err.value) == (
        f"neuron.visible_cores={bad}: the Neuron runtime needs one contiguous ascending run of "
        f'NeuronCores, e.g. "0-3", "0,1,2,3" or "0-2,3" (runtime developer guide)'
    )


def test_capture_enabled_for_nc_keeps_the_general_grammar() -> None:
    cfg = _cfg()
    cfg.profiler.neuron.capture_enabled_for_nc = "0,2,4-5"  # NeuronConfig's own example is "0,1,2-5"
    check_options(cfg)


@pytest.mark.parametrize(
    ("backend", "compile_backend", "refused"),
    [
        (BackendName.neuron, None, True),
        (BackendName.auto, "neuron", True),
        (BackendName.auto, None, False),  # decided when the cell starts (the Neuron backend checks it then)
        (BackendName.neuron, "inductor", False),
        (BackendName.cpu, None, False),
    ],
)
def test_dynamic_true_is_refused_where_the_config_says_neuron_compiles(
    backend: BackendName, compile_backend: str | None, refused: bool
) -> None:
    cfg = _cfg(backend=backend, compile=CompileConfig(enabled=True, backend=compile_backend, dynamic=True))
    if refused:
        with pytest.raises(
            ConfigError, match=r'^compile.dynamic=True: torch.compile\(backend="neuron"\) rejects dynamic=True'
        ):
            check_options(cfg)
    else:
        check_options(cfg)


@pytest.mark.parametrize(
    ("mode", "ok"), [(None, True), ("default", True), ("reduce-overhead", False), ("max-autotune", False)]
)
def test_only_the_default_mode_on_neuron(mode: str | None, ok: bool) -> None:
    cfg = _cfg(backend=BackendName.neuron, compile=CompileConfig(enabled=True, mode=mode))
    if ok:
        check_options(cfg)
    else:
        with pytest.raises(ConfigError, match=rf"^compile.mode={mode}: .* runs only the default mode"):
            check_options(cfg)


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (
            lambda c: setattr(c.profiler.neuron, "capture_enabled_for_nc", "0,a"),
            "profiler.neuron.capture_enabled_for_nc",
        ),
        (lambda c: setattr(c.profiler.neuron, "max_events_per_nc", 0), "profiler.neuron.max_events_per_nc"),
        (lambda c: setattr(c.profiler.neuron, "modes", []), "profiler.neuron.modes"),
        (lambda c: setattr(c.profiler.neuron, "explorer_timeout_s", 0), "profiler.neuron.explorer_timeout_s"),
        (lambda c: setattr(c.neuron, "visible_cores", "3-1"), "neuron.visible_cores"),
        (lambda c: setattr(c.neuron, "num_cores", -1), "neuron.num_cores"),
    ],
)
def test_every_neuron_option_is_checked_whatever_the_backend(mutate, key: str) -> None:
    cfg = _cfg(backend=BackendName.cpu)
    check_options(cfg)
    mutate(cfg)
    with pytest.raises(ConfigError) as err:
        check_options(cfg)
    assert err.value.key == key and str(err.value).startswith(f"{key}=") and "\n" not in str(err.value)
