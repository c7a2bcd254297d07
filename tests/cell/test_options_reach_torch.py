"""Config keys that are handed to torch: the profiler presets and flags reach torch.profiler, compile.* reaches
torch.compile, input.seed fixes the inputs and weights. Composed by real Hydra from conf/, run by run_cell on the
CPU; where only a spy can see the value handed over, the real torch function is still called with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra

from helpers.layers import ScaledSum
from neuronexp.cell import profiling
from neuronexp.cell.group import run_cell
from neuronexp.config.compose import spec_from
from neuronexp.results import Results
from neuronexp.results.outputs import FLOAT32_OUTPUT_FILE, OUTPUT_FILE, read_outputs

SMALL = [
    "input.shape=[1,8,64]",
    "input.dtype=float32",
    "backend=cpu",
    "timing.warmup=1",
    "timing.iters=3",
    "timing.min_iters=3",
    "timing.min_seconds=0",  # three samples, not half a second of them: these tests are about the options
    "roofline.probe=off",
]


def _run(tmp_path: Path, *overrides: str) -> Results:
    """One cell as `neuronexp <overrides>` would compose it, run in this process."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("neuronexp.conf", version_base="1.3"):
            cfg = compose("config", overrides=[*SMALL, *overrides], return_hydra_config=True)
            spec = spec_from(cfg, dict(cfg.hydra.runtime.choices), list(overrides), ",".join(overrides))
    finally:
        GlobalHydra.instance().clear()
    tmp_path.mkdir(parents=True, exist_ok=True)
    return run_cell(spec, tmp_path)


@pytest.fixture
def profiler_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What neuronexp hands torch.profiler.profile and torch.profiler.schedule (the real ones still run)."""
    seen: list[dict[str, Any]] = []
    real_profile, real_schedule = profiling.profile, profiling.schedule

    def schedule(**kwargs):
        seen.append({"schedule": kwargs})
        return real_schedule(**kwargs)

    def profile(**kwargs):
        seen[-1].update({k: v for k, v in kwargs.items() if k in FLAGS})
        return real_profile(**kwargs)

    monkeypatch.setattr(profiling, "schedule", schedule)
    monkeypatch.setattr(profiling, "profile", profile)
    return seen


FLAGS = ("record_shapes", "with_stack", "profile_memory", "with_flops")
# As each preset's YAML documents it (conf/profiler/*.yaml): the schedule and which extras it turns on. default and
# detailed leave the schedule to the backend: five one-step cycles on the CPU (wait=1 warmup=1 active=1 repeat=5).
CPU_SCHEDULE = {"wait": 1, "warmup": 1, "active": 1, "repeat": 5}
PRESETS = {
    "default": (CPU_SCHEDULE, set()),
    "quick": ({"wait": 0, "warmup": 1, "active": 1, "repeat": 1}, set()),
    "detailed": (CPU_SCHEDULE, {"record_shapes", "with_stack", "with_flops"}),
}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_each_profiler_preset_reaches_torch_profiler(preset: str, tmp_path: Path, profiler_calls) -> None:
    results = _run(tmp_path, f"profiler={preset}")
    assert results.cells.iloc[0]["status"] == "ok", results.cells.iloc[0]["error"]
    schedule, on = PRESETS[preset]
    (call,) = [c for c in profiler_calls if "record_shapes" in c]  # the profiled pass (not the memory probe)
    assert call == {"schedule": schedule, **{flag: flag in on for flag in FLAGS}}
    # And what the flags leave in the results: shapes and FLOPs columns filled, Python frames in the trace.
    ops = results.ops
    assert ops["input_shapes"].notna().any() == ("record_shapes" in on)
    assert ops["flops"].notna().any() == ("with_flops" in on)
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert any(e.get("cat") == "python_function" for e in events) == ("with_stack" in on)


def test_schedule_keys_record_shapes_and_export_trace_set_one_by_one(tmp_path: Path, profiler_calls) -> None:
    results = _run(
        tmp_path,
        "profiler.schedule.wait=0",
        "profiler.schedule.warmup=2",
        "profiler.schedule.active=2",
        "profiler.schedule.repeat=2",
        "profiler.record_shapes=true",
        "profiler.export_trace=false",
    )
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    (call,) = [c for c in profiler_calls if "record_shapes" in c]
    assert call == {
        "schedule": {"wait": 0, "warmup": 2, "active": 2, "repeat": 2},
        "record_shapes": True,
        "with_stack": False,
        "profile_memory": False,
        "with_flops": False,
    }
    assert cell["profile_schedule"] == "0/2/2/2" and cell["profile_cycles"] == 2
    assert sorted(results.ops["cycle"].unique()) == [0, 1]
    assert results.ops["input_shapes"].notna().any() and results.ops["flops"].isna().all()
    # export_trace=false: the profile is still summarised, but no Chrome trace is written or pointed to.
    assert not (tmp_path / "trace.json").exists() and pd.isna(cell["trace_path"])


def test_with_stack_and_profile_memory_on_their_own(tmp_path: Path) -> None:
    def categories(out: Path, *overrides: str) -> set[str]:
        results = _run(out, "profiler=quick", *overrides)
        assert results.cells.iloc[0]["status"] == "ok", results.cells.iloc[0]["error"]
        return {e.get("cat") for e in json.loads((out / "trace.json").read_text())["traceEvents"]}

    plain = categories(tmp_path / "plain")
    stack = categories(tmp_path / "stack", "profiler.with_stack=true")
    memory = categories(tmp_path / "memory", "profiler.profile_memory=true")
    assert "python_function" in stack and "python_function" not in plain | memory
    # profile_memory: an instant [memory] event per allocation and free in the trace.
    assert "cpu_instant_event" in memory and "cpu_instant_event" not in plain | stack
    events = json.loads((tmp_path / "memory" / "trace.json").read_text())["traceEvents"]
    assert any(e.get("name") == "[memory]" and e["args"]["Bytes"] != 0 for e in events)


GRAPH_BREAK_LAYER = "helpers.layers.GraphBreak"


def test_compile_backend_mode_and_fullgraph_reach_torch_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    real_compile = torch.compile

    def spy(model, **kwargs):
        seen.append(kwargs)
        return real_compile(model, **kwargs)

    monkeypatch.setattr(torch, "compile", spy)
    results = _run(
        tmp_path / "a",
        "profiler=quick",
        "compile.enabled=true",
        "compile.backend=eager",
        "compile.mode=default",
        "compile.fullgraph=true",
    )
    assert results.cells.iloc[0]["status"] == "ok", results.cells.iloc[0]["error"]
    assert seen == [{"backend": "eager", "mode": "default", "fullgraph": True, "dynamic": False}]
    seen.clear()
    _run(tmp_path / "b", "profiler=quick", "compile.enabled=true", "compile.backend=aot_eager")
    assert seen == [{"backend": "aot_eager", "mode": None, "fullgraph": False, "dynamic": False}]


def test_fullgraph_makes_a_graph_break_fail_the_cell(tmp_path: Path) -> None:
    args = [
        "profiler=quick",
        f"module._target_={GRAPH_BREAK_LAYER}",
        "~module.hidden_size",
        "~module.eps",
        "compile.enabled=true",
        "compile.backend=eager",
    ]
    broken = _run(tmp_path / "full", *args, "compile.fullgraph=true").cells.iloc[0]
    assert broken["status"] == "error" and broken["error"].startswith("Unsupported: "), broken["error"]
    allowed = _run(tmp_path / "partial", *args, "compile.fullgraph=false").cells.iloc[0]
    assert allowed["status"] == "ok", allowed["error"]


def _output(out: Path) -> np.ndarray:
    (leaf,) = read_outputs(out / OUTPUT_FILE)  # the cell's saved output, all of it (small enough to keep whole)
    return leaf.values


@pytest.mark.parametrize(
    "layer", [pytest.param("torch.nn.Identity", marks=pytest.mark.slow), "helpers.layers.WeightsOnly"]
)  # 11 s / 5 s
def test_input_seed_fixes_the_inputs_and_the_weights(layer: str, tmp_path: Path) -> None:
    # Identity returns its input, WeightsOnly its weights: each output shows one of the two seeded draws alone.
    args = ["profiler=quick", f"module._target_={layer}", "~module.hidden_size", "~module.eps"]
    first = _run(tmp_path / "a", *args, "input.seed=7")
    again = _run(tmp_path / "b", *args, "input.seed=7")
    other = _run(tmp_path / "c", *args, "input.seed=8")
    assert first.cells.iloc[0]["run_id"] == again.cells.iloc[0]["run_id"] != other.cells.iloc[0]["run_id"]
    a, b, c = (_output(tmp_path / d) for d in "abc")
    assert a.size == 8 * 64 and a.std() > 0.5  # random normal values, not zeros or ones
    assert np.array_equal(a, b) and not np.allclose(a, c)


def test_a_16_bit_cell_also_saves_its_float32_evaluation(tmp_path: Path) -> None:
    args = ["profiler=quick", "module._target_=helpers.layers.ScaledSum", "~module.hidden_size", "~module.eps"]
    cell = _run(tmp_path / "bf16", *args, "input.dtype=bfloat16").cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    (x, low), (x_wide, wide) = (read_outputs(tmp_path / "bf16" / name) for name in (OUTPUT_FILE, FLOAT32_OUTPUT_FILE))
    assert np.array_equal(x.values, x_wide.values)  # the same bfloat16 input, widened exactly
    # The weight the cell drew (input.seed 0, before building) and rounded to bfloat16, in exact arithmetic:
    torch.manual_seed(0)
    weight = ScaledSum(64).weight.detach().bfloat16().double().numpy()
    exact = x.values.reshape(-1, 64).astype(np.float64) @ weight
    assert np.allclose(wide.values, exact, rtol=1e-5, atol=1e-5)  # float32 arithmetic on those very values
    assert np.abs(low.values - exact).max() > 1e-3  # the bfloat16 sum is rounded, coarsely
    plain = _run(tmp_path / "fp32", *args)  # float32 (SMALL): nothing more to save
    assert plain.cells.iloc[0]["status"] == "ok" and not (tmp_path / "fp32" / FLOAT32_OUTPUT_FILE).exists()
    off = _run(tmp_path / "off", *args, "input.dtype=bfloat16", "correctness.float32_reference=false")
    assert off.cells.iloc[0]["status"] == "ok" and (tmp_path / "off" / OUTPUT_FILE).is_file()
    assert not (tmp_path / "off" / FLOAT32_OUTPUT_FILE).exists()
    assert off.cells.iloc[0]["run_id"] == cell["run_id"]  # the same measurement, one file fewer
