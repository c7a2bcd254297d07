"""`baseline` other than the usual naive module, and `baseline=null`, through a real sweep's aggregation: which
cell each is compared with, its speedup, and what summary.md and the terminal say."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST, run_cli

pytestmark = pytest.mark.slow  # two real sweeps (about 10 s each on 2 busy cores)

QUICK = [a for a in FAST if not a.startswith("input.shape")]


def _sweep(root: Path, out: Path, baseline: str):
    return run_cli(
        [
            "-m",
            "module=rmsnorm_naive,rmsnorm_fused",
            "input.shape=[1,8,64]",
            f"baseline={baseline}",
            *QUICK,
            f"hydra.sweep.dir={out}",
        ],
        cwd=root,
    )


@pytest.fixture(scope="module")
def fused_baseline(tmp_path_factory) -> Path:
    """A real naive × fused sweep with the FUSED module as the baseline."""
    root = tmp_path_factory.mktemp("baselines")
    res = _sweep(root, root / "sweep", "rmsnorm_fused")
    assert res.returncode == 0, res.stderr[-2000:]
    return root / "sweep"


def test_a_named_baseline_picks_its_own_cells_and_speedups_follow(fused_baseline: Path) -> None:
    cells = neuronexp.load(fused_baseline).cells.set_index("module")
    fused, naive = cells.loc["rmsnorm_fused"], cells.loc["rmsnorm_naive"]
    assert naive["baseline_run_id"] == fused["run_id"] == fused["baseline_run_id"]
    assert fused["speedup_vs_baseline"] == 1.0
    # Timed paired: per round, the median over pairs of the reference's time ÷ the cell's; then the median over
    # rounds (analysis.paired), computed here from the samples.
    samples = neuronexp.load(fused_baseline).samples
    by_pair = {
        m: samples[samples["run_id"] == cells.loc[m, "run_id"]].set_index("pair")
        for m in ("rmsnorm_fused", "rmsnorm_naive")
    }
    ratio = by_pair["rmsnorm_fused"]["latency_us"] / by_pair["rmsnorm_naive"]["latency_us"]
    assert naive["speedup_method"] == "paired"
    assert naive["speedup_vs_baseline"] == pytest.approx(
        ratio.groupby(by_pair["rmsnorm_naive"]["round"]).median().median()
    )
    assert naive["speedup_ci_low"] <= naive["speedup_vs_baseline"] <= naive["speedup_ci_high"]
    summary = (fused_baseline / "results" / "summary.md").read_text()
    assert (
        "×speedup vs rmsnorm_fused" in summary and "rmsnorm_naive" not in summary.split("×speedup vs ")[1].split(";")[0]
    )
    # The fused column comes first: the baseline leads the side-by-side table.
    assert "| input_shape | rmsnorm_fused | rmsnorm_naive |" in summary


def test_baseline_null_gives_no_reference_and_no_speedups(fused_baseline: Path, tmp_path: Path) -> None:
    # The same cells gathered again with baseline=null (the cells are reused: baseline is not part of a run_id).
    sweep = tmp_path / "sweep"
    shutil.copytree(fused_baseline, sweep, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    res = _sweep(tmp_path, sweep, "null")
    assert res.returncode == 0, res.stderr[-2000:]
    cells = neuronexp.load(sweep).cells
    assert len(cells) == 2 and (cells["status"] == "cached").all()
    assert cells["baseline_run_id"].isna().all()
    assert all(math.isnan(s) for s in cells["speedup_vs_baseline"])
    summary = (sweep / "results" / "summary.md").read_text()
    assert "no baseline: no speedups" in summary and not re.search(
        r"(?<!spread )×\d", summary.split("| input_shape |")[1]
    )
    assert not re.search(r"(?<!spread )×\d", res.stdout) and "speedup vs" not in res.stdout
