"""neuronexp-compare: known-answer statistics on constructed data, the join, op diffs, and the CLI on a real sweep."""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from helpers import run_cli
from neuronexp.analysis.floor import FLOOR_FACTOR
from neuronexp.analysis.stats import (
    Criteria,
    benjamini_hochberg,
    bootstrap_medians,
    compare_rounds,
    compare_samples,
    hierarchical_medians,
    mann_whitney_p,
)
from neuronexp.compare.join import CompareError, CompareOptions, compare
from neuronexp.compare.op_changes import op_changes
from neuronexp.results import Results, frame, load, to_arrow
from neuronexp.results.files import write_table

MODULES = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"]
SHAPES = ["[1,8,64]", "[1,64,512]", "[1,128,1024]", "[1,512,2048]"]


@dataclass(kw_only=True)
class Synthetic:
    """What make_results builds: samples around `scale` × a known median per cell, `noise` their lognormal spread.

    With `rounds` > 1 the n samples are split into rounds, each round shifted by its own lognormal factor of
    spread `drift` (the host's drift over seconds), and the whole run by exp(run_shift) (one run's luck).
    """

    scale: float = 1.0
    noise: float = 0.03
    n: int = 40
    seed: int = 0
    backend: str = "cpu"
    extra_override: str = ""
    shapes: list[str] = field(default_factory=lambda: SHAPES)
    rounds: int = 1
    drift: float = 0.0
    run_shift: float = 0.0
    threads: int | None = None


def make_results(tag: str, **knobs: Any) -> Results:
    """12 cells (3 modules × 4 shapes) as `knobs` (Synthetic's fields) say."""
    spec = Synthetic(**knobs)
    scale, noise, n, seed, backend, shapes = spec.scale, spec.noise, spec.n, spec.seed, spec.backend, spec.shapes
    rounds, drift, run_shift = spec.rounds, spec.drift, spec.run_shift
    rng = np.random.default_rng(seed)
    cells, samples, ops = [], [], []
    for i, module in enumerate(MODULES):
        for j, shape in enumerate(shapes):
            run_id = f"{tag}-{i}-{j}"
            true_median = 10.0 * (j + 1) * (i + 1) * scale
            round_of = np.arange(n) * rounds // n
            shift = np.exp(run_shift + drift * rng.standard_normal(rounds))[round_of]
            lat = true_median * shift * np.exp(noise * rng.standard_normal(n))
            labels = dict(
                run_id=run_id,
                experiment="adhoc",
                module=module,
                compiled=module.endswith("compiled"),
                backend=backend,
                device="cpu" if backend == "cpu" else "cuda:0",
                device_name="Xeon" if backend == "cpu" else "NVIDIA H200",
                dtype="bfloat16",
                input_shape=shape,
            )
            cells.append(
                dict(
                    labels,
                    numel=64 * (j + 1),
                    status="ok",
                    latency_median_us=float(np.median(lat)),
                    overrides=f"module={module},input.shape={shape},timing.iters={n}{spec.extra_override}",
                    started_at=f"2026-01-0{1 + (tag == 'b')}T00:00:00",
                    trace_path=f"{tag}/trace.json",
                    threads=spec.threads,
                )
            )
            samples += [
                dict(run_id=run_id, sample=k, latency_us=float(v), round=int(round_of[k]) if rounds > 1 else None)
                for k, v in enumerate(lat)
            ]
            ops.append(
                dict(labels, cycle=0, op="aten::mul", device_type="CPU", calls=3.0, self_device_us=float(true_median))
            )
    return Results(frame("cells", cells), frame("ops", ops), frame("samples", samples))


# --- statistics with known answers ---------------------------------------------------------------


def test_identical_inputs_give_no_significant_cell() -> None:
    r = make_results("a")
    cmp = compare(r, r)
    assert len(cmp.cells) == 12
    assert (cmp.cells["verdict"] == "no change").all()
    # The p-value inverts an interval whose draws carry each side's (equal) noise floor: symmetric about 1.
    assert (cmp.cells["ratio"] == 1.0).all() and (cmp.cells["p_value"] > 0.9).all()


def test_two_runs_of_the_same_distribution_give_no_significant_cell() -> None:
    a, b = make_results("a", seed=1), make_results("b", seed=2)
    cmp = compare(a, b)
    assert (cmp.cells["verdict"] == "no change").all()
    assert (cmp.cells["q_value"] >= 0.05).all()


def test_a_known_2x_slowdown_is_found_in_every_cell() -> None:
    cmp = compare(make_results("a", seed=1), make_results("b", seed=2, scale=2.0))
    assert (cmp.cells["verdict"] == "slower").all()
    assert cmp.cells["ratio"].between(1.9, 2.1).all()
    assert (cmp.cells["ci_low"] > 1.8).all() and (cmp.cells["ci_high"] < 2.2).all()
    # 95% intervals: nearly every one of the 12 covers the true ratio.
    assert ((cmp.cells["ci_low"] <= 2.0) & (2.0 <= cmp.cells["ci_high"])).sum() >= 10


def test_a_known_2x_speedup_is_faster() -> None:
    cmp = compare(make_results("a", seed=1), make_results("b", seed=2, scale=0.5))
    assert (cmp.cells["verdict"] == "faster").all() and cmp.cells["ratio"].between(0.45, 0.55).all()


def test_noise_of_a_known_size_stays_below_the_threshold() -> None:
    # A real 0.5% shift under 2% noise with many samples: detectable, but below the practical threshold.
    a = make_results("a", seed=1, noise=0.02, n=2000)
    b = make_results("b", seed=2, noise=0.02, n=2000, scale=1.005)
    cmp = compare(a, b)
    assert (cmp.cells["verdict"] == "no change").all()
    assert cmp.cells["ratio"].between(0.995, 1.015).all()
    assert (cmp.cells["q_value"] < 0.05).sum() >= 6  # the shift is real: the threshold is what calls it no change
    assert cmp.unresolved == 0  # and the CIs are tight enough to rule out a 2% change
    strict = compare(a, b, CompareOptions(criteria=Criteria(threshold=0.0)))
    assert (strict.cells["verdict"] == "slower").sum() >= 6


def test_few_noisy_samples_are_inconclusive_not_no_change_and_say_so() -> None:
    from neuronexp.compare.render import comparison_markdown, regressed, verdict_line

    cmp = compare(make_results("a", seed=1, noise=0.3, n=5), make_results("b", seed=2, noise=0.3, n=5, scale=1.1))
    # 5 samples at 30% scatter: every interval still allows a change beyond ±25%, so compare cannot tell.
    assert (cmp.cells["verdict"] == "inconclusive").all() and not regressed(cmp)
    assert ((cmp.cells["ci_low"] < 1 / 1.25) | (cmp.cells["ci_high"] > 1.25)).all()
    assert "12 inconclusive" in verdict_line(cmp) and "cannot tell" in verdict_line(cmp)
    assert "| inconclusive |" in comparison_markdown(cmp, "a", "b")
    # Asked to call only what an interval of ±60% cannot tell: the same cells are "no change" (unresolved).
    loose = compare(
        make_results("a", seed=1, noise=0.3, n=5),
        make_results("b", seed=2, noise=0.3, n=5, scale=1.1),
        CompareOptions(criteria=Criteria(inconclusive=5.0)),
    )
    assert (loose.cells["verdict"] == "no change").all() and loose.unresolved == 12


def test_what_compare_could_not_tell_fails_only_when_asked_and_after_a_regression() -> None:
    import dataclasses

    from neuronexp.compare.render import exit_status, undecided, verdict_line

    noisy = compare(make_results("a", seed=1, noise=0.3, n=5), make_results("b", seed=2, noise=0.3, n=5, scale=1.1))
    assert undecided(noisy) == 12  # every cell inconclusive (the test above)
    assert exit_status(noisy, fail_on_regression=True, fail_on_inconclusive=False) == 0
    assert exit_status(noisy, fail_on_regression=False, fail_on_inconclusive=True) == 3
    slower = compare(make_results("a", seed=1), make_results("b", seed=2, scale=2.0))
    assert undecided(slower) == 0 and exit_status(slower, True, True) == 1
    assert exit_status(slower, False, True) == 0  # a regression fails only --fail-on-regression
    # Both in one comparison: the regression shown is the answer.
    both = dataclasses.replace(slower, cells=pd.concat([slower.cells, noisy.cells], ignore_index=True))
    assert exit_status(both, True, True) == 1 and exit_status(both, False, True) == 3
    # A cell without samples on a side (n/a) cannot be told either, and the verdict line counts it.
    a, b = make_results("a", seed=1), make_results("b", seed=2)
    b = b._replace(samples=b.samples[b.samples["run_id"] != "b-0-0"])
    missing = compare(a, b)
    assert missing.count("n/a") == 1 and undecided(missing) == 1 and exit_status(missing, True, True) == 3
    assert "1 n/a" in verdict_line(missing) and exit_status(missing, True, False) == 0


@pytest.mark.parametrize("n", [10, 11, 500, 501])
def test_fast_bootstrap_medians_match_the_plain_bootstrap(n: int) -> None:
    x = np.random.default_rng(0).lognormal(0, 0.5, n)
    fast = bootstrap_medians(x, np.random.default_rng(1), 20000)
    plain = np.median(x[np.random.default_rng(2).integers(0, n, size=(20000, n))], axis=1)
    assert fast.mean() == pytest.approx(plain.mean(), rel=0.01)
    assert fast.std() == pytest.approx(plain.std(), rel=0.05)
    assert set(np.round(fast, 9)) <= set(np.round(np.add.outer(x, x).ravel() / 2, 9))  # a median of x's values


def test_benjamini_hochberg_matches_the_definition() -> None:
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.2, float("nan")])
    np.testing.assert_allclose(q[:4], [0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert math.isnan(q[4])
    p = np.random.default_rng(3).uniform(size=50) ** 2
    q = benjamini_hochberg(p)
    order = np.argsort(p)
    brute = [min(p[order[j]] * 50 / (j + 1) for j in range(r, 50)) for r in range(50)]
    np.testing.assert_allclose(q[order], np.minimum(brute, 1.0))
    assert benjamini_hochberg([]).size == 0


def test_benjamini_hochberg_controls_false_discoveries_over_many_null_cells() -> None:
    rng = np.random.default_rng(4)
    p = [compare_samples(rng.normal(100, 3, 30), rng.normal(100, 3, 30), seed=i).p_value for i in range(200)]
    assert sum(np.array(p) < 0.05) >= 2  # uncorrected, some nulls look "significant" by chance …
    assert (benjamini_hochberg(p) < 0.05).sum() == 0  # … BH removes them


def test_mann_whitney_known_values() -> None:
    assert mann_whitney_p(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])) == pytest.approx(0.0808556, abs=1e-6)
    assert mann_whitney_p(np.array([5.0, 5, 5]), np.array([5.0, 5])) == 1.0


# --- rounds: run-to-run variance (issue 9, point 5) ---------------------------------------------------


def test_the_hierarchical_bootstrap_sees_the_spread_between_rounds() -> None:
    rng = np.random.default_rng(5)
    groups = [100 * np.exp(0.05 * rng.standard_normal() + 0.01 * rng.standard_normal(20)) for _ in range(5)]
    boot = hierarchical_medians(groups, np.random.default_rng(6), 4000)
    pooled = bootstrap_medians(np.concatenate(groups), np.random.default_rng(6), 4000)
    # Round medians spread ~5%: the median of 5 of them is uncertain by a few %, far more than pooled scatter says.
    assert boot.std() > 3 * pooled.std()
    assert boot.std() / 100 == pytest.approx(0.05 * 1.25 / np.sqrt(5), rel=0.6)


def test_a_a_with_drift_between_rounds_and_between_processes_is_not_called() -> None:
    """Two runs of the same code on a drifting host: each round shifted ±4%, and each process by its own luck of
    the same size (±4%), which the rounds of one process cannot show: the noise floor must cover it."""
    a = make_results("a", seed=1, rounds=5, drift=0.04, n=100, noise=0.02, run_shift=0.04)
    b = make_results("b", seed=2, rounds=5, drift=0.04, n=100, noise=0.02, run_shift=-0.04)
    cmp = compare(a, b)
    cols = ["cell", "ratio", "ci_low", "ci_high", "floor_a", "floor_b", "q_value"]
    assert not cmp.cells["verdict"].isin(["slower", "faster"]).any(), cmp.cells[cols]
    assert (cmp.cells["rounds_a"] == 5).all() and not any("one timing round" in n for n in cmp.notes)
    # The floor is the drift it measured (about 4% a round) times FLOOR_FACTOR, both sides.
    assert cmp.cells[["floor_a", "floor_b"]].stack().between(0.02 * FLOOR_FACTOR, 0.08 * FLOOR_FACTOR).mean() > 0.8
    assert any("process-to-process term" in n for n in cmp.notes)
    # Without the floor, the rounds of one process see only their own drift: the ×0.92 between processes is called.
    bare = compare(a, b, CompareOptions(floor=0.0))
    assert bare.cells["verdict"].isin(["slower", "faster"]).sum() >= 4
    # Rounds dropped (one round a side): the floor comes from consecutive slices of the samples, which are the
    # same time slices here, so nothing is called either.
    one = compare(
        a._replace(samples=a.samples.drop(columns="round")), b._replace(samples=b.samples.drop(columns="round"))
    )
    assert not one.cells["verdict"].isin(["slower", "faster"]).any() and (one.cells["floor_a"] > 0).all()


def test_a_known_2x_slowdown_is_found_through_the_drift_with_one_run_a_side() -> None:
    a = make_results("a", seed=1, rounds=5, drift=0.04, n=100)
    b = make_results("b", seed=2, rounds=5, drift=0.04, n=100, scale=2.0)
    cmp = compare(a, b)
    assert (cmp.cells["verdict"] == "slower").all()
    assert ((cmp.cells["ci_low"] <= 2.0) & (2.0 <= cmp.cells["ci_high"])).all()


def test_a_doubled_copy_of_noisy_drifting_cells_is_called_in_every_cell_and_fails_the_gate() -> None:
    """issue 22: a sweep against itself with every sample ×2, every cell noisy (30% scatter) and drifting 5% a
    round. (At 10% a round, ×2 is at the edge of what one run a side can call: docs/methodology.md.)"""
    from neuronexp.compare.render import regressed

    a = make_results("a", seed=3, rounds=5, drift=0.05, n=100, noise=0.3)
    a = a._replace(cells=a.cells.assign(noisy=True, noise="rounds spread 30%; other processes used 1.5 cores"))
    b = a._replace(samples=a.samples.assign(latency_us=a.samples["latency_us"] * 2))
    cmp = compare(a, b)
    assert (cmp.cells["verdict"] == "slower").all() and regressed(cmp), cmp.cells[["cell", "ci_low", "ci_high"]]
    # The floor is measured, not assumed: where the 30% scatter hides the 5% drift it is 0, elsewhere it is not.
    assert (cmp.cells["ratio"] == 2.0).all() and (cmp.cells["floor_a"] > 0.05).sum() >= 4
    assert any("noisy in A or B" in n and "still stands" in n for n in cmp.notes)


def test_one_round_on_a_side_says_noise_cannot_be_separated() -> None:
    a = make_results("a", seed=1, rounds=5, n=100)
    near = compare(a, make_results("b", seed=2, n=100, run_shift=0.01))  # 1% off, one round
    assert any(
        "12 cell(s) have one timing round on a side: only a difference whose whole interval" in n for n in near.notes
    )
    assert (~near.cells["rounds_b"].gt(1)).all() and (near.cells["verdict"] == "no change").all()
    # Only a difference whose whole interval lies beyond the practical threshold is called.
    far = compare(a, make_results("b", seed=2, n=100, scale=1.5))
    assert (far.cells["verdict"] == "slower").all() and (far.cells["ci_low"] > 1.02).all()


def test_compare_rounds_known_answer_and_fallback() -> None:
    a = [10.0, 11.0, 12.0, 20.0, 21.0, 22.0, 30.0, 31.0, 32.0]
    ROUNDS = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    stats = compare_rounds((a, ROUNDS), ([2 * x for x in a], ROUNDS))
    assert stats.median_a_us == 21.0 and stats.ratio == 2.0 and stats.separable
    assert stats.rounds_a == stats.rounds_b == 3
    single = compare_rounds((a, None), (a, None))
    assert not single.separable and single.rounds_a == 1 and single.p_value == 1.0 and single.floor_a == 0.0
    # With a floor factor: each side's process term is factor × its drift, and the interval widens with it.
    floored = compare_rounds((a, ROUNDS), ([2 * x for x in a], ROUNDS), floor=2.0)
    assert floored.floor_a == floored.floor_b > 0 and floored.ci_low < stats.ci_low and floored.ci_high > stats.ci_high


def test_a_difference_in_a_noisy_cell_is_called_when_its_interval_says_so() -> None:
    """Noise widens the interval; it does not veto the call (issue 22)."""
    from neuronexp.compare.render import regressed

    a, b = make_results("a", seed=1), make_results("b", seed=2, scale=2.0)
    b = b._replace(cells=b.cells.assign(noisy=b.cells["run_id"] == "b-0-0", noise="other processes used 1.5 cores"))
    cmp = compare(a, b)
    row = cmp.cells.set_index("run_id_b").loc["b-0-0"]
    assert row["verdict"] == "slower" and row["noisy"] and row["ratio"] > 1.9
    assert cmp.count("slower") == 12
    assert any("noisy in A or B" in n and "rmsnorm_naive · [1,8,64]" in n for n in cmp.notes)
    only_noisy = compare(a, b._replace(cells=b.cells.assign(noisy=True)))
    assert only_noisy.count("slower") == 12 and regressed(only_noisy)


def test_only_a_side_of_one_run_carries_a_floor() -> None:
    a, a2 = (make_results(t, seed=s, rounds=5, drift=0.05, n=100) for t, s in (("a", 1), ("a2", 3)))
    b = make_results("b", seed=2, rounds=5, drift=0.05, n=100)
    cells = compare(a, b, more_a=[a2]).cells
    assert (cells["runs_a"] == 2).all() and (cells["floor_a"] == 0).all() and (cells["floor_b"] > 0).sum() >= 8


def test_paired_timing_columns_are_tolerated_and_not_join_keys() -> None:
    """Sweeps with paired timing add samples.pair and cells.speedup_ci_low/high, speedup_method: compare is
    across runs, so it cannot pair; it compares those results as any other."""
    a, b = make_results("a", seed=1), make_results("b", seed=2, scale=2.0)
    b = b._replace(
        samples=b.samples.assign(pair=b.samples["sample"]),
        cells=b.cells.assign(speedup_ci_low=0.9, speedup_ci_high=1.1, speedup_method="paired"),
    )
    a = a._replace(cells=a.cells.assign(speedup_method="unpaired"))
    cmp = compare(a, b)
    assert len(cmp.cells) == 12 and (cmp.cells["verdict"] == "slower").all()


def test_one_round_is_sliced_in_the_order_the_samples_were_taken() -> None:
    """A side whose one round drifts from 100 to 200 µs: its floor sees the drift however the rows are stored."""
    a = make_results("a", seed=1, n=100, noise=0.01)
    ramp = a.samples.assign(latency_us=a.samples["latency_us"] * np.tile(np.linspace(1, 2, 100), 12))
    shuffled = ramp.sample(frac=1.0, random_state=0)
    cells = [compare(r, r).cells for r in (a, a._replace(samples=ramp), a._replace(samples=shuffled))]
    assert (cells[0]["floor_a"] < 0.02).all() and (cells[1]["floor_a"] > 0.3).all()
    pd.testing.assert_series_equal(cells[1]["floor_a"], cells[2]["floor_a"])


def test_threads_and_allocator_differences_are_named() -> None:
    a, b = make_results("a", threads=1), make_results("b", threads=2)
    assert "threads differs: 1 vs 2" in compare(a, b).notes


def test_a_cell_without_samples_is_not_judged() -> None:
    a, b = make_results("a"), make_results("b")
    b = b._replace(samples=b.samples[b.samples["run_id"] != "b-0-0"])
    row = compare(a, b).cells.set_index("run_id_b").loc["b-0-0"]
    assert row["verdict"] == "n/a" and row["n_b"] == 0


# --- the join ---------------------------------------------------------------------------------------


def test_join_ignores_run_ids_timestamps_traces_and_timing_settings() -> None:
    a, b = make_results("a", n=40), make_results("b", n=30)
    cmp = compare(a, b)
    assert len(cmp.cells) == 12 and not cmp.only_a and not cmp.only_b
    assert set(cmp.cells["cell"]) >= {"rmsnorm_naive · [1,8,64]", "rmsnorm_compiled · [1,512,2048]"}


def test_a_label_that_differs_is_named_and_can_be_ignored() -> None:
    a, b = make_results("a"), make_results("b", backend="cuda")
    with pytest.raises(CompareError, match=r"backend: cpu vs cuda.*--ignore backend"):
        compare(a, b)
    cmp = compare(a, b, CompareOptions(ignore=["backend"]))  # device and device_name follow the backend
    assert len(cmp.cells) == 12 and "device_name" in cmp.ignored
    assert cmp.notes[0] == "device_name differs: Xeon vs NVIDIA H200"


def test_other_overrides_are_labels() -> None:
    a, b = make_results("a"), make_results("b", extra_override=",module.eps=1e-5")
    with pytest.raises(CompareError, match="module.eps"):
        compare(a, b)
    assert len(compare(a, b, CompareOptions(ignore=["module.eps"])).cells) == 12


def test_unmatched_cells_are_listed() -> None:
    a, b = make_results("a"), make_results("b", shapes=SHAPES[:3])
    cmp = compare(a, b)
    assert len(cmp.cells) == 9 and len(cmp.only_a) == 3 and not cmp.only_b
    assert all("[1,512,2048]" in name for name in cmp.only_a)


def test_a_cell_that_ran_in_a_and_fails_in_b_is_a_regression() -> None:
    from neuronexp.compare import comparison_markdown, regressed

    a, b = make_results("a"), make_results("b")
    b = b._replace(cells=b.cells.assign(status=lambda c: c["status"].where(c["run_id"] != "b-1-2", "error")))
    cmp = compare(a, b)
    assert len(cmp.cells) == 11 and cmp.broken == ["rmsnorm_fused · [1,128,1024]"] and not cmp.fixed
    assert regressed(cmp) and "Failed in B, ran in A: rmsnorm_fused · [1,128,1024]" in comparison_markdown(
        cmp, "a", "b"
    )
    back = compare(b, a)
    assert back.fixed == ["rmsnorm_fused · [1,128,1024]"] and not regressed(back)


def test_every_cell_failing_in_b_is_a_regression_with_an_empty_table_not_an_error() -> None:
    """No cell ran on both sides: no row to judge (the q-values of none), every cell named as failed in B."""
    from neuronexp.compare import comparison_markdown, regressed

    a, b = make_results("a"), make_results("b")
    cmp = compare(a, b._replace(cells=b.cells.assign(status="error")))
    assert cmp.cells.empty and len(cmp.broken) == 12 and regressed(cmp)
    assert "Failed in B, ran in A: rmsnorm_naive · [1,8,64]" in comparison_markdown(cmp, "a", "b")


def test_ignoring_a_label_that_identifies_cells_is_an_error() -> None:
    with pytest.raises(CompareError, match="same labels"):
        compare(make_results("a"), make_results("b"), CompareOptions(ignore=["input_shape"]))


# --- op tables --------------------------------------------------------------------------------------


def _ops(run_id: str, rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return frame(
        "ops",
        [
            dict(run_id=run_id, cycle=0, op=op, device_type="CPU", calls=calls, self_device_us=us)
            for op, calls, us in rows
        ],
    )


def test_op_diff_names_appeared_disappeared_and_changed() -> None:
    a = _ops(
        "a",
        [
            ("aten::mul", 3, 30.0),
            ("aten::mean", 1, 10.0),
            ("aten::add", 1, 1.0),
            ("## Call CompiledFxGraph f1abc ##", 1, 5.0),
            ("aten::to", 2, 2.0),
        ],
    )
    b = _ops(
        "b",
        [
            ("aten::_fused_rms_norm", 1, 12.0),
            ("aten::add", 1, 2.5),
            ("## Call CompiledFxGraph zz999 ##", 1, 4.0),
            ("aten::to", 2, 2.0),
        ],
    )
    diff = op_changes(a, b, [("a", "b", "cell")], top=5).set_index("op")
    assert diff.loc["aten::_fused_rms_norm", "change"] == "appeared"
    assert set(diff.index[diff["change"] == "disappeared"]) == {"aten::mul", "aten::mean"}
    # One graph under two build hashes is the same op, and an unchanged op is not listed.
    assert diff.loc["CompiledFxGraph call", "change"] == "changed"
    assert diff.loc["aten::add", "delta_us"] == pytest.approx(1.5)
    assert "aten::to" not in diff.index


def test_op_diff_reads_each_ops_median_over_cycles_keys_device_rows_and_an_empty_side() -> None:
    """Three profiler cycles, one of them disturbed: each side's time is its op's median over cycles (a cycle without
    the op counting 0), a device kernel keyed apart from the host op of its name; a side that profiled no ops
    lost every op of the other."""
    per_cycle = {  # (run, op, device type, calls): its time in cycles 0, 1, 2 (None: not in that cycle)
        ("a", "aten::mul", "CPU", 3.0): (10.0, 90.0, 12.0),
        ("a", "aten::mul", "CUDA", 1.0): (4.0, 4.0, 4.0),
        ("b", "aten::mul", "CPU", 1.0): (20.0, 22.0, 21.0),
        ("b", "aten::add", "CPU", 2.0): (6.0, 8.0, None),  # not in cycle 2: 0 there, so its median is 6, not 7
        ("a", "aten::neg", "CPU", 1.0): (1.0, 1.0, 1.0),
        ("b", "aten::neg", "", 1.0): (2.0, 2.0, 2.0),  # an empty device type: a host op, as "CPU"
        ("a", "aten::sub", None, 1.0): (3.0, 3.0, 3.0),  # none (a null read back from parquet): a host op too
        ("b", "aten::sub", "CPU", 1.0): (5.0, 5.0, 5.0),
    }
    rows = [
        dict(run_id=run, cycle=cycle, op=op, device_type=kind, calls=calls, self_device_us=us)
        for (run, op, kind, calls), times in per_cycle.items()
        for cycle, us in enumerate(times)
        if us is not None
    ]
    table = frame("ops", rows)
    a, b = table[table["run_id"] == "a"], table[table["run_id"] == "b"]
    diff = op_changes(a, b, [("a", "b", "cell")]).set_index("op")
    assert diff.loc["aten::mul", "change"] == "changed"
    assert (diff.loc["aten::mul", "a_us"], diff.loc["aten::mul", "b_us"]) == (12.0, 21.0)  # not 90 µs, not a mean
    assert (diff.loc["aten::mul", "a_calls"], diff.loc["aten::mul", "b_calls"]) == (3.0, 1.0)
    assert diff.loc["aten::mul [CUDA]", "change"] == "disappeared" and diff.loc["aten::mul [CUDA]", "a_us"] == 4.0
    assert diff.loc["aten::add", "change"] == "appeared" and diff.loc["aten::add", "b_us"] == 6.0
    assert diff.loc["aten::neg", "change"] == "changed" and diff.loc["aten::neg", "delta_us"] == 1.0
    assert diff.loc["aten::sub", "change"] == "changed" and diff.loc["aten::sub", "delta_us"] == 2.0
    lost = op_changes(a, b.iloc[:0], [("a", "b", "cell")])
    assert sorted(lost["op"]) == ["aten::mul", "aten::mul [CUDA]", "aten::neg", "aten::sub"] and set(
        lost["change"]
    ) == {"disappeared"}


# --- the CLI on a real sweep ------------------------------------------------------------------------

# `sweep`: a real 2 × 2 sweep, in tests/compare/conftest.py (shared with test_compare_cli.py).


def _slowed_copy(sweep: Path, dest: Path, factor: float, quiet: bool = False) -> Path:
    """A copy of the sweep with every sample `factor` times longer; with `quiet`, its cells' noise flags cleared
    (so what is tested is the statistics, not whether this shared machine was busy while the fixture ran)."""
    shutil.copytree(sweep, dest)
    results = load(dest)
    samples = results.samples.assign(latency_us=lambda s: s["latency_us"] * factor)
    write_table(dest / "results" / "samples.parquet", to_arrow("samples", samples))
    if quiet:
        write_table(
            dest / "results" / "cells.parquet", to_arrow("cells", results.cells.assign(noisy=False, noise=None))
        )
    return dest


def test_cli_same_sweep_twice_is_no_change_with_markdown_and_csv(sweep: Path, tmp_path: Path) -> None:
    result = run_cli(
        [str(sweep), str(sweep), "--markdown", "cmp.md", "--csv", "cmp.csv", "--fail-on-regression"],
        cwd=tmp_path,
        script="neuronexp-compare",
    )
    assert result.returncode == 0, result.stderr
    verdicts = result.stdout.replace("P(B faster)", "")  # the column's header: not a verdict
    assert "slower" not in verdicts and "faster" not in verdicts and "P(B faster)" in result.stdout
    md = (tmp_path / "cmp.md").read_text()
    # "no change", or "inconclusive" where this machine's drift made the interval too wide to tell.
    assert "rmsnorm_fused · [1,16,128] |" in md and "| 20/20 |" in md and "one timing round" not in md
    csv = pd.read_csv(tmp_path / "cmp.csv")
    assert len(csv) == 4 and csv["verdict"].isin(["no change", "inconclusive"]).all()
    assert (csv["ratio"] == 1.0).all() and (csv["floor_a"] == csv["floor_b"]).all()
    assert csv["p_faster"].between(0.3, 0.7).all()  # the same samples on both sides: as likely faster as slower


@pytest.mark.parametrize("problem", ["missing", "empty", "unmatched"])
def test_cli_bad_input_is_one_line_and_exit_2(sweep: Path, tmp_path: Path, problem: str) -> None:
    (tmp_path / "empty").mkdir()
    other = {"missing": tmp_path / "nope", "empty": tmp_path / "empty", "unmatched": sweep}[problem]
    args = [str(sweep), str(other)] + (["--ignore", "nothing-to-ignore"] if problem != "unmatched" else [])
    if problem == "unmatched":
        args = [str(sweep), str(_relabelled(sweep, tmp_path / "other"))]
    result = run_cli(args + ["--csv", "out.csv"], cwd=tmp_path, script="neuronexp-compare")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuronexp-compare: error: "), result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out.csv").exists()


def _relabelled(sweep: Path, dest: Path) -> Path:
    shutil.copytree(sweep, dest)
    cells = load(dest).cells.assign(experiment="another")
    write_table(dest / "results" / "cells.parquet", to_arrow("cells", cells))
    return dest
