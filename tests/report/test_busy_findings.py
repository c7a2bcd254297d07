"""Findings on a busy machine: the noise reasons once, grouped by kind, not on every line; a group's only quiet
cell never worded as its winner; and what the noise cannot touch (operators per step, output checks) said."""

from __future__ import annotations

import numpy as np

from neuronexp.analysis.baseline import parse_baseline
from neuronexp.analysis.variants import add_speedups
from neuronexp.report.busy import noise_line
from neuronexp.report.findings import findings
from neuronexp.results import frame

NOISE = {
    "rmsnorm_naive": "rounds spread 55%; other processes used 1.20 cores",
    "rmsnorm_compiled": "rounds spread ×510; other processes used 0.30 cores",
}
MEDIANS = {"rmsnorm_naive": 100.0, "rmsnorm_fused": 140.0, "rmsnorm_compiled": 60.0}
OPS = {"rmsnorm_naive": (6.0, 7.0), "rmsnorm_fused": (1.0, 7.0), "rmsnorm_compiled": (1.0, 1.0)}


def _tables(shapes=("[1,8,64]", "[1,64,512]")):
    rng = np.random.default_rng(0)
    cells, samples = [], []
    for shape in shapes:
        for module, median in MEDIANS.items():
            run = f"{module}-{shape}"
            lat = median * np.exp(0.01 * rng.standard_normal(15))
            dispatched, executed = OPS[module]
            cells.append(
                dict(
                    run_id=run,
                    experiment="x",
                    module=module,
                    compiled=module.endswith("compiled"),
                    backend="cpu",
                    device="cpu",
                    dtype="float32",
                    input_shape=shape,
                    numel=512,
                    status="ok",
                    latency_median_us=median,
                    latency_samples=15,
                    device_ops=executed,
                    ops_dispatched=dispatched,
                    device_time_us=median,
                    overrides=f"module={module}",
                    noisy=module in NOISE,
                    noise=NOISE.get(module),
                    output_check="baseline" if module == "rmsnorm_naive" else "pass",
                )
            )
            samples += [dict(run_id=run, sample=i, latency_us=float(v), round=i // 5) for i, v in enumerate(lat)]
    samples = frame("samples", samples)
    return add_speedups(frame("cells", cells), parse_baseline("rmsnorm_naive"), samples), samples


def test_noise_is_said_once_and_the_only_quiet_cell_is_not_a_winner() -> None:
    cells, samples = _tables()
    lines = findings(cells, samples, {})
    first, *groups, last = lines
    assert first.startswith(
        "noisy, not findings: 4 of 6 cells (rounds spread 55%–×510 in 4; other processes used 0.30–1.20 cores in 4)"
    )
    assert sum("rounds spread" in ln for ln in lines) == 1  # not once per group
    assert len(groups) == 2
    for line in groups:
        assert "only rmsnorm_fused was measured quietly (140 µs), so no comparison" in line
        assert (
            "the noisy medians of rmsnorm_naive, rmsnorm_compiled were lower: it is not known to be the fastest" in line
        )
        assert "fastest (" not in line
    assert last.startswith(
        "what the noise does not touch: operators per step rmsnorm_naive 6→7 ops, "
        "rmsnorm_fused 1→7 ops, rmsnorm_compiled 1 ops; output check 4 of 4 pass"
    )


def test_a_quiet_machine_gets_no_noise_lines() -> None:
    cells, samples = _tables(("[1,8,64]",))
    cells = cells.assign(noisy=False, noise=None)
    lines = findings(cells, samples, {})
    assert len(lines) == 1 and lines[0].startswith("[1,8,64]: rmsnorm_compiled fastest")
    assert noise_line(cells.assign(_variant="v", _input="i").to_dict("records")) is None


def _paired_tables(
    times: dict[str, float], noisy: set[str], drift: float = 0.4, pairs: int = 100, scatter: float = 0.01
):
    """One group timed together: every pair shares a host level that drifts ±`drift` (log sd), so each cell's
    median moves a lot over its window (flagged noisy) while the per-pair ratios hold still (±`scatter`)."""
    rng = np.random.default_rng(2)
    level = np.exp(drift * rng.standard_normal(pairs))
    cells, samples = [], []
    for module, median in times.items():
        run = f"{module}-[1,8,64]"
        lat = median * level * np.exp(scatter * rng.standard_normal(pairs))
        cells.append(
            dict(
                run_id=run,
                experiment="x",
                module=module,
                compiled=module.endswith("compiled"),
                backend="cpu",
                device="cpu",
                dtype="float32",
                input_shape="[1,8,64]",
                numel=512,
                status="ok",
                latency_median_us=float(np.median(lat)),
                latency_samples=pairs,
                device_ops=OPS[module][1],
                ops_dispatched=OPS[module][0],
                device_time_us=median,
                overrides=f"module={module}",
                noisy=module in noisy,
                noise="rounds spread 45%" if module in noisy else None,
                output_check="baseline" if module == "rmsnorm_naive" else "pass",
                timing_group="g1",
            )
        )
        samples += [dict(run_id=run, sample=i, latency_us=float(v), round=i // 5, pair=i) for i, v in enumerate(lat)]
    samples = frame("samples", samples)
    return add_speedups(frame("cells", cells), parse_baseline("rmsnorm_naive"), samples), samples


def test_a_group_timed_paired_keeps_its_noisy_cells_in_the_finding_with_the_paired_speedup() -> None:
    # The complaint: on a shared runner most cells are noisy, and each was "left out, not a finding" while
    # its paired speedup had a tight interval. The drift here is ±40% per pair; the compiled cell is ×1.67 faster.
    cells, samples = _paired_tables(MEDIANS, noisy={"rmsnorm_naive", "rmsnorm_compiled"})
    first, line, _ = findings(cells, samples, {})
    assert first.startswith("noisy: 2 of 3 cells (rounds spread 45% in 2): their latencies are not findings; 2 of them")
    assert line.startswith("[1,8,64]: rmsnorm_compiled fastest, ×1.67 vs rmsnorm_naive (95% CI 1.6")
    assert "left out" not in line
    # Unpaired (no timing group), the same cells are left out as before.
    unpaired = cells.assign(timing_group=None)
    first, line, _ = findings(unpaired, samples, {})
    assert first.startswith("noisy, not findings: 2 of 3 cells") and "only rmsnorm_fused was measured quietly" in line


def test_in_a_paired_group_a_tie_is_decided_by_the_per_pair_ratio() -> None:
    # Compiled and fused 1% apart under a ±40% drift: their medians alone would pick a winner; the pairs tie them.
    cells, samples = _paired_tables({"rmsnorm_naive": 100.0, "rmsnorm_fused": 60.6, "rmsnorm_compiled": 60.0}, set())
    (line,) = findings(cells, samples, {})
    assert "ties with rmsnorm_fused (difference below 2.0% or not significant)" in line
    # 10% apart, the pairs call it (a cell 10% slower than the winner is not a tie).
    cells, samples = _paired_tables({"rmsnorm_naive": 100.0, "rmsnorm_fused": 66.0, "rmsnorm_compiled": 60.0}, set())
    (line,) = findings(cells, samples, {})
    assert line.startswith("[1,8,64]: rmsnorm_compiled fastest, ×") and "ties with" not in line


def test_without_a_baseline_each_noisy_cell_gets_its_own_line_not_the_same_line_twice() -> None:
    # Every cell is its own group without a baseline: each noisy one said "[1,8,64]: every cell is noisy, no
    # finding", so a sweep of two noisy cells printed that line twice (issue 32).
    cells, samples = _tables(("[1,8,64]",))
    cells = cells[cells["module"] != "rmsnorm_fused"].assign(baseline_run_id=None)
    lines = findings(cells, samples, {})
    groups = [ln for ln in lines if ln.startswith("[1,8,64]")]
    assert groups == ["[1,8,64]: rmsnorm_naive is noisy, no finding", "[1,8,64]: rmsnorm_compiled is noisy, no finding"]
    assert len(set(lines)) == len(lines)


def test_a_paired_tie_is_decided_by_the_intervals_low_end_not_the_point_ratio() -> None:
    # Fused is 3.6% slower than compiled by the per-pair median, but its interval reaches down to ×0.99: it cannot
    # be called slower, so the two tie (as compare calls a change only when the whole interval is beyond 2%).
    times = {"rmsnorm_naive": 150.0, "rmsnorm_fused": 103.0, "rmsnorm_compiled": 100.0}
    cells, samples = _paired_tables(times, set(), pairs=40, scatter=0.05)
    (line,) = findings(cells, samples, {})
    assert line.startswith("[1,8,64]: rmsnorm_compiled ties with rmsnorm_fused"), line


def test_a_group_split_over_two_timing_groups_is_not_judged_as_timed_together() -> None:
    # The compiled cell was timed in a process of its own (another timing group): pairing did not hold the drift
    # for it, so its noisy median is left out as an unpaired group's would be.
    cells, samples = _paired_tables(MEDIANS, noisy={"rmsnorm_naive", "rmsnorm_compiled"})
    cells.loc[cells["module"] == "rmsnorm_compiled", "timing_group"] = "g2"
    first, line, _ = findings(cells, samples, {})
    assert first.startswith("noisy, not findings: 2 of 3 cells") and "only rmsnorm_fused was measured quietly" in line


def test_no_speedup_over_the_baseline_is_printed_when_the_baseline_ties_with_the_winner() -> None:
    times = {"rmsnorm_naive": 100.0, "rmsnorm_fused": 99.5, "rmsnorm_compiled": 150.0}
    cells, samples = _paired_tables(times, set())
    (line,) = findings(cells, samples, {})
    assert line.startswith("[1,8,64]: rmsnorm_fused ties with rmsnorm_naive"), line
    assert " vs rmsnorm_naive" not in line  # a tie has no speedup to state
