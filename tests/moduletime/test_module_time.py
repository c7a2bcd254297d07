"""Time per module (profiler.modules=true): spans by path, the table's invariants, the hotspot ranked first, the
terminal tree, and the table through a run's and a sweep's files."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch

from helpers.user_model import write_user_model
from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.profiling import profile_callable
from neuronexp.config import ProfilerConfig, ScheduleConfig
from neuronexp.moduletime.module_rows import inspect_modules, module_rows
from neuronexp.moduletime.terminal_lines import module_lines
from neuronexp.moduletime.views import by_type, hot_units, of_run

MODULE_ARGS = [
    "module=mynet",
    "backend=cpu",
    "profiler.modules=true",
    "profiler=quick",
    "timing.warmup=1",
    "timing.iters=3",
    "timing.min_iters=1",
    "timing.min_seconds=0",
]


def check_invariants(table: pd.DataFrame) -> None:
    """A child's total never exceeds its parent's; at each depth, the totals there plus the self times above add
    up to the root's total (the step)."""
    t = of_run(table)
    for path, parent in zip(t.index, t["parent_path"]):
        if isinstance(parent, str):
            assert t.at[path, "total_device_us"] <= t.at[parent, "total_device_us"] + 1e-6, path
            assert t.at[path, "total_cpu_us"] <= t.at[parent, "total_cpu_us"] + 1e-6, path
    root = float(t.loc[t["parent_path"].isna(), "total_device_us"].iloc[0])
    for depth in range(1, int(t["depth"].max()) + 1):
        at = t.loc[t["depth"] == depth, "total_device_us"].sum()
        above = t.loc[t["depth"] < depth, "self_device_us"].sum()
        assert at + above == pytest.approx(root, rel=1e-9), depth


@pytest.fixture
def user_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    conf = write_user_model(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("mynet", None)
    import mynet

    return conf, mynet


def test_every_module_is_attributed_by_path_and_the_hotspot_ranks_first(user_model, tmp_path: Path) -> None:
    _, mynet = user_model
    torch.manual_seed(0)
    net, x = mynet.Net().eval(), torch.randn(4, 64, 64)
    cfg = ProfilerConfig(schedule=ScheduleConfig(0, 1, 1, 3), modules=True)
    with torch.inference_mode():
        profile = profile_callable(lambda: net(x, scale=0.5), CpuBackend(), cfg, tmp_path, net)
        inspected = inspect_modules(net, (x,), {"scale": 0.5})
    assert not any(r["op"].startswith("module:") for c in profile.cycles for r in c.ops)  # spans are not ops
    steps = [c.device_time_us for c in profile.cycles]
    rows = pd.DataFrame(module_rows(net, profile.modules, 1, steps, inspected, {"run_id": "r"}))
    assert set(rows["module_path"]) == {p for p, _ in net.named_modules()}
    check_invariants(rows)
    root = rows.set_index("module_path").loc[""]
    assert root["total_device_us"] == pytest.approx(sorted(steps)[1], rel=0.02)  # the median cycle: the step
    hot = hot_units(of_run(rows))
    assert hot["paths"].iloc[0] == ["hot"] and hot["share"].iloc[0] > 0.5
    t = rows.set_index("module_path")
    assert t.at["hot", "flops"] == pytest.approx(8 * 2 * 4 * 64 * 64 * 512)  # 8 projections, 2 FLOPs a MAC
    assert t.at["hot.up.0", "input_shapes"] == "[4,64,64]" and t.at["", "input_shapes"] == "[4,64,64]"
    assert json.loads(t.at["", "input_specs"]) == {
        "args": [{"shape": [4, 64, 64], "dtype": "float32"}],
        "kwargs": {"scale": 0.5},
    }
    assert t.at["hot.up", "calls"] == 0 and t.at["hot.up.0", "calls"] == 1
    linear = by_type(of_run(rows)).set_index("module_type").loc["torch.nn.modules.linear.Linear"]
    assert linear["instances"] == 10 and linear["calls"] == 10
    lines = module_lines(rows, "CPU", 80)
    assert max(map(len, lines)) <= 80 and any(line.startswith("1. Hot hot") for line in lines)


@pytest.mark.slow
def test_a_user_model_from_its_own_config_dir_gets_a_modules_table_trace_spans_and_a_tree(
    user_model, cli, tmp_path
) -> None:
    import neuronexp

    conf, _ = user_model
    run = tmp_path / "run"
    result = cli("--config-dir", str(conf), *MODULE_ARGS, f"hydra.run.dir={run}", env={"COLUMNS": ""})
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = neuronexp.load(run)
    cells, ops, _ = loaded
    assert (run / "modules.parquet").is_file() and len(loaded.modules) == 15
    check_invariants(loaded.modules)
    assert not ops["op"].str.startswith("module:").any()
    trace = json.loads((run / "trace.json").read_text())
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"module:(root)", "module:hot", "module:hot.up.3", "module:cheap.proj"} <= names
    out = result.stdout
    assert "Time per module" in out and "1. Hot hot" in out and "all Linear ×10" in out
    block = out[out.index("Time per module") : out.index("latency (")]
    assert max(len(line) for line in block.splitlines()) <= 80


@pytest.mark.slow
def test_a_sweep_aggregates_the_modules_tables_and_a_run_without_the_key_has_none(user_model, cli, tmp_path) -> None:
    import neuronexp

    conf, _ = user_model
    sweep = tmp_path / "sweep"
    result = cli(
        "--config-dir", str(conf), "-m", *MODULE_ARGS, "input.shape=[2,16,64],[2,32,64]", f"hydra.sweep.dir={sweep}"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = neuronexp.load(sweep)
    assert (sweep / "results" / "modules.parquet").is_file() and (sweep / "results" / "modules.csv").is_file()
    assert loaded.modules.groupby("run_id").size().tolist() == [15, 15]
    assert set(loaded.modules["run_id"]) == set(loaded.cells["run_id"])
    plain = tmp_path / "plain"
    result = cli(
        "--config-dir",
        str(conf),
        *[a for a in MODULE_ARGS if a != "profiler.modules=true"],
        "profiler.modules=false",
        f"hydra.run.dir={plain}",
    )
    assert result.returncode == 0 and not (plain / "modules.parquet").exists()
    assert neuronexp.load(plain).modules.empty and "Time per module" not in result.stdout


@pytest.mark.slow
def test_a_compiled_cell_says_it_has_no_time_per_module(tmp_path: Path) -> None:
    from neuronexp.cell.group import run_cell
    from neuronexp.config import CellSpec, CompileConfig, DType, InputConfig, RunConfig, TimingConfig

    cfg = RunConfig(
        module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 16},
        input=InputConfig(shape=[1, 4, 16], dtype=DType.float32),
        compile=CompileConfig(enabled=True),
        profiler=ProfilerConfig(schedule=ScheduleConfig(0, 1, 1, 1), modules=True),
        timing=TimingConfig(min_seconds=0, warmup=1, iters=2, min_iters=1, rounds=1),
    )
    spec = CellSpec(config=cfg, run_id="c", experiment="t", module_name="m")
    results = run_cell(spec, tmp_path)
    cell = results.cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    assert "profiler.modules: time per module is for eager cells" in cell["warnings"]
    assert results.modules.empty and not (tmp_path / "modules.parquet").exists()


def test_device_times_from_another_source_are_summed_over_the_active_steps_like_the_cycles_own() -> None:
    # A cycle holds its modules' times summed over its active steps (module_rows divides by them); a per-step figure
    # from another source (Neuron Explorer) is shared out by calls, then counted for every active step too.
    from neuronexp.moduletime.attribution import ModuleCycle, fill_module_device_times

    cycle = ModuleCycle()
    cycle.op_calls = {"block.a": Counter({"aten::mul": 2}), "block.b": Counter({"aten::mul": 1, "aten::add": 1})}
    fill_module_device_times([cycle], {"aten::mul": 30.0, "aten::add": 6.0}, active=3)
    assert cycle.self_device_us == {"block.a": 60.0, "block.b": 30.0 + 18.0}
    assert sum(cycle.self_device_us.values()) == (30.0 + 6.0) * 3


def test_the_median_cycle_of_an_even_count_is_the_lower_middle() -> None:
    from neuronexp.moduletime.module_rows import median_cycle

    assert median_cycle([4.0, 1.0, 3.0, 2.0]) == 3  # step times sorted 1, 2, 3, 4: the cycle of 2.0
    assert median_cycle([5.0, 1.0, 3.0]) == 2 and median_cycle([7.0]) == 0


def test_a_module_time_unknown_in_one_cycle_leaves_its_band_unknown() -> None:
    # min/max/median over values holding a NaN answer by position (min(5, nan) is 5, min(nan, 5) NaN): a band that
    # is not known in every cycle is not known.
    from torch import nn

    from neuronexp.moduletime.attribution import ModuleCycle
    from neuronexp.moduletime.module_rows import module_rows

    model = nn.Sequential(nn.Linear(2, 2))
    known, unknown = ModuleCycle(), ModuleCycle()
    known.self_device_us["0"] = 5.0
    unknown.self_device_us["0"] = float("nan")  # type: ignore[assignment]
    for cycles in ([known, unknown], [unknown, known]):
        rows = {r["module_path"]: r for r in module_rows(model, cycles, 1, [10.0, 10.0], {}, {})}
        for band in ("total_device_us_low", "total_device_us_median", "total_device_us_high"):
            assert math.isnan(rows["0"][band]) and math.isnan(rows[""][band]), (band, rows["0"])
    rows = {r["module_path"]: r for r in module_rows(model, [known, known], 1, [10.0, 10.0], {}, {})}
    assert rows["0"]["total_device_us_low"] == rows[""]["total_device_us_high"] == 5.0
