"""neuronexp-compare's flags as a user types them, each shown to change the answer, on a real sweep whose samples
are replaced by constructed ones with a known answer: every cell of A has 4 rounds of 5 samples (the round
medians 99, 99.5, 100.5, 101 µs, the samples of a round spread evenly over ±3%), and B is exactly ×1.06 of A.

The hierarchical bootstrap over rounds then puts every cell's 95% interval at about ×1.03–×1.09, above ×1.02,
and no more than one resample in 2000 reaches ×1 (p at most 4/2001 in every cell, so the Benjamini–Hochberg
q too): slower at the default alpha 0.05 and threshold 2%, no change at --alpha 0.0005 or --threshold 0.1.
Every cell is marked not noisy, so that the machine's load during the real sweep cannot decide the verdict.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import run_cli
from neuronexp.analysis.floor import FLOOR_FACTOR, REFERENCED_FLOOR_FACTOR
from neuronexp.analysis.stats import compare_rounds, compare_runs
from neuronexp.results import load, to_arrow
from neuronexp.results.files import write_table

FACTOR = 1.06
ROUND_MEDIANS = (99.0, 99.5, 100.5, 101.0)
PER_ROUND = 5


def _constructed(factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """20 samples in 4 rounds: each round's samples spread evenly over ±3% of its median."""
    latency = np.concatenate([m * np.linspace(0.97, 1.03, PER_ROUND) for m in ROUND_MEDIANS]) * factor
    return latency, np.repeat(np.arange(len(ROUND_MEDIANS)), PER_ROUND)


def _copy(sweep: Path, dest: Path, factor: float = 1.0, **cell_labels: str) -> Path:
    """The sweep with each cell's samples replaced by the constructed ones × `factor`, its cells marked not
    noisy and relabelled."""
    shutil.copytree(sweep, dest, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    results = load(dest)
    samples = results.samples.copy()
    latency, rounds = _constructed(factor)
    for _, rows in samples.groupby("run_id"):
        samples.loc[rows.index, "latency_us"], samples.loc[rows.index, "round"] = latency, rounds
    write_table(dest / "results" / "samples.parquet", to_arrow("samples", samples))
    cells = results.cells.assign(noisy=False, **cell_labels)
    write_table(dest / "results" / "cells.parquet", to_arrow("cells", cells))
    return dest


@pytest.fixture(scope="module")
def pair(sweep: Path, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare_cli")
    a, b = _copy(sweep, root / "a"), _copy(sweep, root / "b", FACTOR)
    n = set(load(a).samples.groupby("run_id").size())
    assert n == {len(ROUND_MEDIANS) * PER_ROUND}, n  # the known answer below is for 20 samples a cell
    return a, b


def test_the_constructed_answer_is_what_the_statistics_say() -> None:
    (xa, ra), (xb, rb) = _constructed(), _constructed(FACTOR)
    stats = compare_rounds((xa, ra), (xb, rb), seed=0)
    assert stats.ratio == pytest.approx(FACTOR) and stats.rounds_a == stats.rounds_b == 4
    assert 1.02 < stats.ci_low < FACTOR < stats.ci_high < 1.10 and stats.p_value <= 4 / 2001


def test_alpha_decides_what_is_significant(pair, tmp_path: Path) -> None:
    a, b = pair
    default = _compare(a, b, tmp_path)
    assert default.returncode == 0 and "4 slower" in default.stdout and "BH q < 0.05" in default.stdout, default.stdout
    strict = _compare(a, b, tmp_path, "--alpha", "0.0005", "--fail-on-regression")
    assert strict.returncode == 0 and "4 no change" in strict.stdout and "BH q < 0.0005" in strict.stdout, strict.stdout


def test_threshold_decides_what_is_large_enough(pair, tmp_path: Path) -> None:
    a, b = pair
    wide = _compare(a, b, tmp_path, "--threshold", "0.1", "--fail-on-regression")
    assert wide.returncode == 0 and "4 no change" in wide.stdout and "threshold 10.0%" in wide.stdout, wide.stdout
    narrow = _compare(a, b, tmp_path, "--threshold", "0.01", "--fail-on-regression")
    assert narrow.returncode == 1 and "4 slower" in narrow.stdout and "threshold 1.0%" in narrow.stdout, narrow.stdout


def test_fail_on_inconclusive_exits_3_when_compare_cannot_tell(pair, tmp_path: Path) -> None:
    a, b = pair
    # Every cell inconclusive (the test below): 0 under --fail-on-regression alone, 3 once "could not tell" fails.
    res = _compare(a, b, tmp_path, "--alpha", "0.0005", "--inconclusive", "0.05", "--fail-on-regression",
                   "--fail-on-inconclusive")  # fmt: skip
    assert res.returncode == 3 and "4 inconclusive" in res.stdout and "cannot tell" in res.stdout, res.stdout


@pytest.mark.slow  # 7 s on the busy 2-core VM: three CLI runs
def test_inconclusive_decides_how_wide_an_interval_may_be_to_say_no_change(pair, tmp_path: Path) -> None:
    a, b = pair
    # Not significant at alpha 0.0005: "no change" while the interval (×1.03–×1.09) stays within ±25% …
    assert "4 no change" in _compare(a, b, tmp_path, "--alpha", "0.0005").stdout
    # … "inconclusive" once a change of 5% counts as too large to rule out, and the line says what to do.
    tight = _compare(a, b, tmp_path, "--alpha", "0.0005", "--inconclusive", "0.05", "--fail-on-regression")
    assert tight.returncode == 0 and "4 inconclusive" in tight.stdout and "cannot tell" in tight.stdout, tight.stdout
    bad = _compare(a, b, tmp_path, "--inconclusive", "0.01")
    assert bad.returncode == 2 and "--inconclusive above --threshold" in bad.stderr


def test_seed_picks_the_bootstrap_and_the_same_seed_repeats_it(pair, tmp_path: Path) -> None:
    a, b = pair

    def intervals(seed: str) -> pd.DataFrame:
        out = tmp_path / f"seed{seed}-{len(list(tmp_path.iterdir()))}.csv"
        assert _compare(a, b, tmp_path, "--seed", seed, "--csv", str(out)).returncode == 0
        return pd.read_csv(out).sort_values("cell")[["cell", "ci_low", "ci_high"]].reset_index(drop=True)

    zero, again, one = intervals("0"), intervals("0"), intervals("1")
    pd.testing.assert_frame_equal(zero, again)
    assert (zero["ci_low"] != one["ci_low"]).any() or (zero["ci_high"] != one["ci_high"]).any()


def test_ignore_joins_cells_whose_label_differs_on_purpose(pair, tmp_path: Path) -> None:
    a, _ = pair
    other = _copy(a, tmp_path / "other", FACTOR, experiment="another")
    refused = _compare(a, other, tmp_path)
    assert refused.returncode == 2 and "--ignore experiment" in refused.stderr, refused.stderr
    for flags in (["--ignore", "experiment"], ["--ignore", "experiment,nothing_else"]):
        joined = _compare(a, other, tmp_path, *flags)
        assert joined.returncode == 0 and "4 slower" in joined.stdout, joined.stdout + joined.stderr


def _compare(a: Path, b: Path, cwd: Path, *flags: str):
    return run_cli([str(a), str(b), *flags], cwd=cwd, script="neuronexp-compare")


def test_a_changed_torch_version_is_noted(pair, tmp_path: Path) -> None:
    a, b = pair
    before = str(load(a).cells["torch_version"].iloc[0])
    newer = _copy(b, tmp_path / "newer", 1.0, torch_version="9.9.9")
    res = _compare(a, newer, tmp_path, "--markdown", str(tmp_path / "cmp.md"))
    note = f"torch_version differs: {before} vs 9.9.9"
    assert res.returncode == 0 and note in res.stdout, res.stdout
    assert note in (tmp_path / "cmp.md").read_text()
    # And not when it is the same.
    assert "torch_version differs" not in _compare(a, b, tmp_path).stdout


def test_a_host_that_moved_as_much_as_the_cells_is_not_called_unless_told_so(pair, tmp_path: Path) -> None:
    """B's cells ×1.06, and its host reference workloads (host.reference) ×1.06 too: the host moved, not the code."""
    a, _ = pair
    moved = {col: (lambda cells, col=col: cells[col] * FACTOR) for col in ("host_dispatch_us", "host_memory_us")}
    b = _copy(a, tmp_path / "host", FACTOR, **moved)
    res = _compare(a, b, tmp_path, "--fail-on-regression")
    assert res.returncode == 0 and "4 no change" in res.stdout and "the host itself moved" in res.stdout, res.stdout
    raw = _compare(a, b, tmp_path, "--no-host-reference", "--fail-on-regression")
    assert raw.returncode == 1 and "4 slower" in raw.stdout and "intervals as measured" in raw.stdout, raw.stdout


def test_further_runs_a_side_put_run_to_run_variance_in_the_interval(pair, tmp_path: Path) -> None:
    """One run a side calls B (×1.06) slower everywhere. Give each side a second run that sits where the other
    side's first one did (A at ×1.06, B at ×1): the same cells, measured in two processes a side, differ between
    processes as much as between sides, and nothing is called. B really slower in both of its runs (×1.10,
    ×1.11 against ×1, ×1.01): still called."""
    a, b = pair
    a2, b2 = _copy(a, tmp_path / "a2", FACTOR), _copy(a, tmp_path / "b2")
    pooled = _compare(a, b, tmp_path, "--also-a", str(a2), "--also-b", str(b2), "--csv", str(tmp_path / "p.csv"))
    assert pooled.returncode == 0 and "4 slower" not in pooled.stdout, pooled.stdout + pooled.stderr
    assert "runs: 2 of A, 2 of B" in " ".join(pooled.stdout.split())
    cells = pd.read_csv(tmp_path / "p.csv")
    assert set(cells["verdict"]) == {"no change"} and (cells["runs_a"] == 2).all() and (cells["runs_b"] == 2).all()
    assert ((cells["ci_low"] < 1) & (cells["ci_high"] > 1)).all() and (cells["rounds_a"] == 8).all()
    a_again, slow, slower = (
        _copy(a, tmp_path / "a3", 1.01),
        _copy(a, tmp_path / "s1", 1.10),
        _copy(a, tmp_path / "s2", 1.11),
    )
    real = _compare(a, slow, tmp_path, "--also-a", str(a_again), "--also-b", str(slower))
    assert real.returncode == 0 and "4 slower" in real.stdout, real.stdout + real.stderr


def test_one_run_a_side_is_the_rounds_comparison() -> None:
    a, b = _constructed(), _constructed(FACTOR)
    assert compare_runs([a], [b], seed=3) == compare_rounds(a, b, seed=3, floor=FLOOR_FACTOR)


def _doubled_noisy_copy(sweep: Path, dest: Path, factor: float) -> Path:
    """The sweep with every cell's samples replaced by drifting ones (5 rounds of 4, round medians 90-110 µs:
    a drift of ~8% a round, each round's samples within ±3%) × `factor`, and every cell flagged noisy."""
    shutil.copytree(sweep, dest, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    results = load(dest)
    samples = results.samples.copy()
    latency = np.concatenate([m * np.linspace(0.97, 1.03, 4) for m in (100.0, 90.0, 110.0, 95.0, 105.0)]) * factor
    for _, rows in samples.groupby("run_id"):
        samples.loc[rows.index, "latency_us"], samples.loc[rows.index, "round"] = latency, np.repeat(np.arange(5), 4)
    write_table(dest / "results" / "samples.parquet", to_arrow("samples", samples))
    cells = results.cells.assign(noisy=True, noise="rounds spread 20%; other processes used 1.50 cores")
    write_table(dest / "results" / "cells.parquet", to_arrow("cells", cells))
    return dest


@pytest.mark.slow  # 9 s on the busy 2-core VM: three CLI runs
def test_a_doubled_noisy_sweep_is_called_slower_and_fails_the_gate(sweep: Path, tmp_path: Path) -> None:
    """issue 22: noise widens the interval (each side's floor, from its 8% drift: REFERENCED_FLOOR_FACTOR × that, as
    both sides carry the host reference), it does not veto the call."""
    a, b = _doubled_noisy_copy(sweep, tmp_path / "a", 1.0), _doubled_noisy_copy(sweep, tmp_path / "b", 2.0)
    plain = _compare(a, b, tmp_path, "--csv", str(tmp_path / "x2.csv"))
    assert plain.returncode == 0 and "4 slower" in plain.stdout, plain.stdout
    cells = pd.read_csv(tmp_path / "x2.csv")
    floor = cells["floor_a"] / REFERENCED_FLOOR_FACTOR  # the drift the side measured
    assert cells["noisy"].all() and floor.between(0.05, 0.12).all() and (cells["ci_low"] > 1.02).all()
    assert (cells["ci_high"] / cells["ci_low"] > 1.3).all()  # wider than the rounds alone make it
    gate = _compare(a, b, tmp_path, "--fail-on-regression")
    assert gate.returncode == 1 and "4 slower" in gate.stdout
    improved = _compare(b, a, tmp_path, "--fail-on-regression")
    assert improved.returncode == 0 and "4 faster" in improved.stdout, improved.stdout


def test_every_cell_of_b_failed_is_a_regression_exit_1(pair, tmp_path: Path) -> None:
    """Issue 44: a B whose every cell failed exited 2 (bad input) under --fail-on-regression."""
    a, b = pair
    failed = _copy(b, tmp_path / "failed", 1.0, status="error", error="RuntimeError: broken in B")
    gate = _compare(a, failed, tmp_path, "--fail-on-regression")
    n = len(load(a).cells)
    assert gate.returncode == 1, gate.stderr
    assert gate.stderr.startswith(f"neuronexp-compare: no cell ran in both A and B; failed in B, ran in A ({n}): ")
    assert gate.stderr.count("\n") == 1
    plain = _compare(a, failed, tmp_path)  # without the gate: nothing to compare, as before
    assert plain.returncode == 2 and "no cell ran in both A and B" in plain.stderr


def test_paired_runs_cancel_the_drift_that_falls_on_both_runs_of_a_pair(pair, tmp_path: Path) -> None:
    """A CI job that interleaves the sides (docs/ci/neuronexp-gate.yml): the host ×1.3 slower for the second pair of
    runs, both sides alike. Unpaired, each side's runs differ by ×1.3 and compare cannot tell (inconclusive); paired,
    each pair's ratio is ×1 and the gate passes. B really ×1.5 slower in both pairs: it fails."""
    a, _ = pair
    b, a2, b2 = _copy(a, tmp_path / "b"), _copy(a, tmp_path / "a2", 1.3), _copy(a, tmp_path / "b2", 1.3)
    also = ["--also-a", str(a2), "--also-b", str(b2), "--fail-on-regression", "--fail-on-inconclusive"]
    unpaired = _compare(a, b, tmp_path, *also, "--csv", str(tmp_path / "u.csv"))
    assert unpaired.returncode == 3 and set(pd.read_csv(tmp_path / "u.csv")["verdict"]) == {"inconclusive"}
    paired = _compare(a, b, tmp_path, *also, "--paired", "--csv", str(tmp_path / "p.csv"))
    assert paired.returncode == 0, paired.stdout + paired.stderr
    assert "in pairs (the i-th of A next to the i-th of B)" in " ".join(paired.stdout.split())
    cells = pd.read_csv(tmp_path / "p.csv")
    assert set(cells["verdict"]) == {"no change"} and (cells["runs_a"] == 2).all() and (cells["ratio"] == 1.0).all()
    assert cells["ci_low"].between(0.97, 1).all() and cells["ci_high"].between(1, 1.03).all()
    slow, slow2 = _copy(a, tmp_path / "s1", 1.5), _copy(a, tmp_path / "s2", 1.3 * 1.5)
    also = ["--also-a", str(a2), "--also-b", str(slow2), "--paired", "--fail-on-regression", "--fail-on-inconclusive"]
    regressed = _compare(a, slow, tmp_path, *also, "--csv", str(tmp_path / "r.csv"))
    cells = pd.read_csv(tmp_path / "r.csv")
    assert regressed.returncode == 1 and set(cells["verdict"]) == {"slower"}, regressed.stdout
    assert cells["ratio"].round(6).eq(1.5).all() and (cells["p_faster"] == 0).all()


def test_paired_needs_as_many_further_runs_of_a_as_of_b(pair, tmp_path: Path) -> None:
    a, b = pair
    res = _compare(a, b, tmp_path, "--paired", "--also-a", str(a))
    assert res.returncode == 2 and "--paired pairs each --also-a with an --also-b: got 1 --also-a and 0" in res.stderr


def _machine(root: Path, **cpu: str) -> None:
    """Every env.json of a copied sweep with its CPU settings changed as `cpu` says."""
    for path in root.glob("*/env.json"):
        env = json.loads(path.read_text())
        env["cpu_settings"] = {**env["cpu_settings"], **cpu}
        path.write_text(json.dumps(env))


def test_compare_names_the_cpu_settings_that_differ_between_the_machines(pair, tmp_path: Path) -> None:
    """env.json's CPU settings (host.machine): alike on both sides, said once; where B's machine has another governor
    and a kernel parameter more, each difference is named (a reason for a difference that is not the code's)."""
    a, b = pair
    same = _compare(a, b, tmp_path)
    assert "machine: A and B alike: governor " in " ".join(same.stdout.split()), same.stdout
    tuned = _copy(b, tmp_path / "tuned")
    cmdline = json.loads(next(tuned.glob("*/env.json")).read_text())["cpu_settings"]["kernel_cmdline"]
    _machine(tuned, governor="performance-test", kernel_cmdline=cmdline + " isolcpus=1")
    res = _compare(a, tuned, tmp_path, "--markdown", str(tmp_path / "cmp.md"))
    line = "machine differs between A and B: governor "
    said = " ".join(res.stdout.split())
    assert res.returncode == 0 and line in said and "vs performance-test" in said, res.stdout
    assert "kernel command line (B only: isolcpus=1)" in said and "boost" not in said.split(line)[1].split(";")[0]
    assert "kernel command line (B only: isolcpus=1)" in (tmp_path / "cmp.md").read_text()


def test_paired_runs_are_not_widened_by_the_host_reference(pair, tmp_path: Path) -> None:
    """B's host reference ×1.3 slower in both of its runs, its cells as fast as A's: one run a side, the interval holds
    the host's move (reaching to 1/1.3); paired runs are as measured (the pairs' spread holds the host's drift, and
    widening by the reference, noisy on a loaded host, made an unchanged head inconclusive: docs/history.md)."""
    a, _ = pair
    moved = {col: (lambda cells, col=col: cells[col] * 1.3) for col in ("host_dispatch_us", "host_memory_us")}
    b, b2, a2 = _copy(a, tmp_path / "b", **moved), _copy(a, tmp_path / "b2", **moved), _copy(a, tmp_path / "a2")
    single = _compare(a, b, tmp_path, "--csv", str(tmp_path / "s.csv"))
    assert single.returncode == 0 and (pd.read_csv(tmp_path / "s.csv")["ci_low"] < 1 / 1.25).all(), single.stdout
    paired = _compare(
        a, b, tmp_path, "--also-a", str(a2), "--also-b", str(b2), "--paired", "--csv", str(tmp_path / "p.csv")
    )
    cells = pd.read_csv(tmp_path / "p.csv")
    assert cells["ci_low"].between(0.97, 1).all() and cells["ci_high"].between(1, 1.03).all(), cells
    assert "the runs are paired, so the pairs' spread holds it" in " ".join(paired.stdout.split())
