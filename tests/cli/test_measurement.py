"""What the host does to a measurement, from the command line (issue 9): allocator, threads, rounds, noise,
and the honest profile (cycles, dispatched vs executed ops, Python frames, memory)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import neuronexp
from helpers import FAST, run_cli, run_dirs
from neuronexp.config.schema import NoiseConfig
from neuronexp.host.allocator import malloc_name

GLIBC = malloc_name().startswith("glibc")

# A layer whose calls get 4x slower after its 8th call: the first timing round is fast, the second slow, as if
# another process had taken the core half-way through the cell.
DRIFTING = """
import time, torch

class Drifting(torch.nn.Module):
    calls = 0

    def forward(self, x):
        Drifting.calls += 1
        time.sleep(0.001 if Drifting.calls <= 8 else 0.004)
        return x * 2
"""
DRIFTING_ARGS = [
    "module._target_=drifting.Drifting",
    "~module.hidden_size",
    "~module.eps",
    "timing.warmup=1",
    "timing.min_seconds=0",
    "timing.iters=10",
    "timing.min_iters=2",
    "timing.rounds=2",
    "timing.round_gap_s=0",
    "profiler=quick",
]


@pytest.mark.slow  # 6 s on the 2-core VM
def test_a_cell_records_threads_allocator_rounds_and_machine_activity(cli, tmp_path: Path) -> None:
    res = cli(*FAST, "threads=1", "timing.iters=6", "timing.rounds=3", "backend=cpu")
    assert res.returncode == 0, res.stderr
    (run,) = run_dirs(tmp_path)
    cells, _, samples = neuronexp.load(run)
    cell = cells.iloc[0]
    assert cell["threads"] == 1 and cell["allocator"] == "stable" and cell["latency_rounds"] == 3
    assert sorted(samples["round"].unique()) == [0, 1, 2] and cell["latency_samples"] == 6
    per_round = samples.groupby("round")["latency_us"].median()
    assert cell["latency_median_us"] == pytest.approx(per_round.median())
    assert cell["round_spread"] == pytest.approx((per_round.max() - per_round.min()) / per_round.median())
    assert cell["p90_p10"] >= 1
    # The flag is what its figures say (thresholds: tests/cell/test_noise_thresholds.py), and says why.
    assert bool(cell["noisy"]) == pd.notna(cell["noise"])
    assert ("rounds spread" in str(cell["noise"])) == (cell["round_spread"] > NoiseConfig().round_spread)
    assert ("p90/p10" in str(cell["noise"])) == (cell["p90_p10"] > NoiseConfig().p90_p10)
    assert cell["load_avg_1m"] >= 0 and cell["other_cpu"] >= 0 and 0 <= cell["cpu_steal"] <= 1
    env = json.loads((run / "env.json").read_text())
    assert env["torch_threads"] == 1 and env["allocator"]["mode"] == "stable"
    if GLIBC:
        assert cell["malloc"].startswith("glibc") and pd.isna(cell["allocator_note"])
        assert env["allocator"]["applied"]["mmap_threshold"] >= 32 << 20
    assert "in 3 rounds" in res.stdout and "· 1 thread\n" in res.stdout


@pytest.mark.slow  # 5 s on the 2-core VM
def test_threads_is_a_sweepable_key_and_a_column(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    res = cli("-m", *FAST, "threads=1,2", "allocator=system", f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr
    cells = neuronexp.load(sweep).cells.sort_values("threads")
    assert list(cells["threads"]) == [1, 2] and set(cells["allocator"]) == {"system"}
    assert pd.isna(cells["allocator_note"].iloc[0])  # nothing was applied in this process before
    summary = (sweep / "results" / "summary.md").read_text()
    assert "(allocator system), 1/2 thread(s), 5 timing round(s) per cell" in summary


@pytest.mark.slow  # 5 s on the 2-core VM
def test_an_allocator_that_cannot_apply_says_why_in_the_row(cli, tmp_path: Path) -> None:
    res = cli(*FAST, "allocator=preloaded")
    assert res.returncode == 0, res.stderr
    cell = neuronexp.load(run_dirs(tmp_path)[0]).cells.iloc[0]
    assert cell["allocator"] == "preloaded" and "LD_PRELOAD" in cell["allocator_note"]
    assert "allocator: no replacement malloc is loaded" in cell["warnings"] and "LD_PRELOAD" in res.stdout


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("threads=0", "threads=0: must be an integer >= 1"),
        ("timing.rounds=0", "timing.rounds=0: must be an integer >= 1"),
        ("allocator=fast", "allocator"),
    ],
)
def test_bad_measurement_keys_are_one_line(cli, tmp_path: Path, override: str, fragment: str) -> None:
    res = cli(*FAST, override)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in res.stderr
    assert not run_dirs(tmp_path) or not any(run_dirs(tmp_path)[0].glob("*.parquet"))


@pytest.mark.slow  # 9 s on the 2-core VM
def test_fresh_cell_processes_get_their_allocator_before_python_starts(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    res = cli("-m", *FAST, "allocator=stable,system", "hydra/launcher=parallel", f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr
    cells = neuronexp.load(sweep).cells.set_index("allocator")
    envs = [json.loads((d / "env.json").read_text()) for d in sweep.iterdir() if (d / "env.json").is_file()]
    envs = {env["allocator"]["mode"]: env for env in envs}
    assert envs["stable"]["allocator"]["environment"]["MALLOC_MMAP_THRESHOLD_"] == str(1 << 30)
    # The system cell's process started pristine: no thresholds in its environment, no earlier tuning.
    assert "MALLOC_MMAP_THRESHOLD_" not in envs["system"]["allocator"]["environment"]
    assert (
        pd.isna(cells.loc["system", "allocator_note"])
        and cells.loc["stable", "worker_pid"] != cells.loc["system", "worker_pid"]
    )


@pytest.mark.slow  # 7 s on the 2-core VM
def test_a_noisy_cell_is_marked_and_is_not_a_finding(cli, tmp_path: Path) -> None:
    (tmp_path / "drifting.py").write_text(DRIFTING)
    sweep = tmp_path / "sweep"
    res = cli("-m", *DRIFTING_ARGS, "input.shape=[1,8,16]", f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr
    cell = neuronexp.load(sweep).cells.iloc[0]
    assert cell["noisy"] and "rounds spread" in cell["noise"] and "noisy: rounds spread" in cell["warnings"]
    assert "~" in res.stdout and "noisy: rounds spread" in res.stdout  # the terminal table
    summary = (sweep / "results" / "summary.md").read_text()
    assert "~" in summary and "not findings" in summary
    report = run_cli([str(sweep)], cwd=tmp_path, script="neuronexp-report")
    assert report.returncode == 0, report.stderr
    text = (sweep / "report.md").read_text()
    assert "is noisy, no finding" in text  # its own line, naming the cell (it has no baseline)
    # The report says the reasons once, in the findings' noise line; its grid marks the cell ~ (summary.md, whose
    # findings have no noise line, keeps them in the cell).
    assert text.count("rounds spread") == 1 and "noisy: rounds spread" in summary


@pytest.mark.slow  # 6 s on the 2-core VM
def test_the_default_profile_is_a_median_over_cycles_without_python_frames(cli, tmp_path: Path) -> None:
    fast = [a for a in FAST if not a.startswith("profiler=")]
    res = cli(*fast, "profiler.with_stack=true", "profiler.profile_memory=true", "input.dtype=float32")
    assert res.returncode == 0, res.stderr
    cells, ops, _ = neuronexp.load(run_dirs(tmp_path)[0])
    cell = cells.iloc[0]
    assert (
        cell["profile_cycles"] == 5
        and cell["profile_schedule"] == "1/1/1/5"
        and sorted(ops["cycle"].unique()) == list(range(5))
    )
    assert cell["ops_dispatched"] == 6 and cell["ops_executed"] == 7
    assert ops["op"].str.startswith("aten::").all(), sorted(set(ops["op"]))  # no "module.py(1782): _call_impl"
    assert cell["top_op"].startswith("aten::") and cell["profile_ratio"] > 0
    # Three float32 [1,8,64] outputs of aten::mul a step, at least.
    assert cell["memory_per_step_bytes"] >= 3 * 8 * 64 * 4
    mul = ops[(ops["op"] == "aten::mul") & (ops["cycle"] == 0)].iloc[0]
    assert mul["self_cpu_memory_bytes"] == 3 * 8 * 64 * 4 and mul["leaf"]
