"""The one rule that sets `noisy` (analysis.noise.judge): thresholds pinned from both sides, other processes
judged against the cores the cell's threads need, a hint that says what would help, and a sweep's thresholds
applied again when it gathers its cells (noise.* keys)."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import FAST, run_cli
from neuronexp.analysis.noise import fmt_spread, judge, judge_cells
from neuronexp.config.schema import NoiseConfig

QUIET = {
    "latency_rounds": 5,
    "round_spread": 0.05,
    "p90_p10": 1.2,
    "other_cpu": 0.0,
    "cpu_steal": 0.0,
    "threads": 2,
    "placement_cpus": "0-1",
}


@pytest.mark.parametrize("spread, flagged", [(0.12, False), (0.20, False), (0.30, True), (0.60, True)])
def test_round_spread_threshold_from_both_sides(spread: float, flagged: bool) -> None:
    reasons, _ = judge({**QUIET, "round_spread": spread}, NoiseConfig())
    assert bool(reasons) is flagged


@pytest.mark.parametrize("ratio, flagged", [(1.6, False), (1.9, False), (2.2, True)])
def test_p90_p10_threshold_from_both_sides(ratio: float, flagged: bool) -> None:
    assert bool(judge({**QUIET, "p90_p10": ratio}, NoiseConfig())[0]) is flagged


def test_other_processes_count_against_the_cores_the_threads_need() -> None:
    busy_core = {**QUIET, "other_cpu": 1.0}
    reasons, hint = judge(busy_core, NoiseConfig())  # two threads on two cores: another busy core takes one of them
    assert reasons == ["other processes used 1.00 cores"] and "threads=1" in hint
    one_thread, _ = judge({**busy_core, "threads": 1}, NoiseConfig())  # one thread: a core to spare
    assert one_thread == []
    crowded, hint = judge({**busy_core, "threads": 1, "other_cpu": 1.5}, NoiseConfig())
    assert crowded == ["other processes used 1.50 cores (1 spare)"] and "threads=1" not in hint
    unknown, _ = judge({**busy_core, "threads": 1, "placement_cpus": None}, NoiseConfig())  # cores unknown: none spare
    assert unknown


def test_the_hint_says_what_would_help() -> None:
    _, hint = judge({**QUIET, "round_spread": 0.5}, NoiseConfig())
    assert "timing.max_seconds" in hint
    _, hint = judge({**QUIET, "cpu_steal": 0.2}, NoiseConfig())
    assert "quieter moment" in hint
    assert judge(QUIET, NoiseConfig()) == ([], None)


def test_a_huge_spread_reads_as_a_factor_not_a_percentage() -> None:
    assert fmt_spread(0.31) == "31%" and fmt_spread(508.64) == "×510"
    reasons, _ = judge({**QUIET, "round_spread": 508.64}, NoiseConfig())
    assert reasons == ["rounds spread ×510"]


def test_thresholds_are_keys_and_a_sweep_judges_its_cells_again_with_its_own() -> None:
    cells = pd.DataFrame(
        [
            {
                **QUIET,
                "round_spread": 0.3,
                "noisy": True,
                "noise": "rounds spread 30%",
                "warnings": "noisy: rounds spread 30% (x) | other note",
            },
            {**QUIET, "latency_rounds": None, "noisy": None, "noise": None, "warnings": "error row"},
        ]
    )
    lenient = judge_cells(cells, NoiseConfig(round_spread=0.5))
    assert not lenient.loc[0, "noisy"] and pd.isna(lenient.loc[0, "noise"])
    assert lenient.loc[0, "warnings"] == "other note"
    assert lenient.loc[1, "warnings"] == "error row"  # nothing timed: left as it was
    strict = judge_cells(
        cells.assign(round_spread=0.1, noisy=False, noise=None, warnings=None), NoiseConfig(round_spread=0.05)
    )
    assert strict.loc[0, "noisy"] and strict.loc[0, "warnings"].startswith("noisy: rounds spread 10% (")


def test_a_quiet_cell_without_warnings_keeps_none() -> None:
    # A table read from parquet has the warnings column as strings, a missing one NaN (pandas 3): not the text "nan".
    cells = pd.DataFrame([{**QUIET, "round_spread": 0.01, "noisy": False, "noise": None, "warnings": None}])
    cells["warnings"] = cells["warnings"].astype("str" if pd.__version__ >= "3" else "string")
    judged = judge_cells(cells, NoiseConfig())
    assert not judged.loc[0, "noisy"] and pd.isna(judged.loc[0, "warnings"]), judged.loc[0, "warnings"]


def test_noise_keys_reach_a_single_run_and_a_bad_one_is_one_line(tmp_path) -> None:
    lenient = ["noise.round_spread=1000", "noise.p90_p10=1000", "noise.other_cpu=1000", "noise.steal=1"]
    res = run_cli([*FAST, "backend=cpu", "roofline.probe=off", *lenient, "hydra.run.dir=run"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-1500:]
    import neuronexp

    assert not neuronexp.load(tmp_path / "run").cells["noisy"].iloc[0]
    bad = run_cli([*FAST, "noise.p90_p10=-1", "hydra.run.dir=bad"], cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "noise.p90_p10" in bad.stderr and "-1" in bad.stderr
