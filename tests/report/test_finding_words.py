"""The answer in words where it is printed: per input one finding that names the winner (or the tie, "no difference
within ±x%") and says why in operators, for winners and losers; a noisy cell's medians said beside its paired
speedup where the two read as different answers; the same sentence under the sweep's table, in results/summary.md
and in the report. Constructed tables with known answers (a sweep directory written once for the module)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from neuronexp.analysis.baseline import parse_baseline
from neuronexp.analysis.ops import hotspots
from neuronexp.analysis.variants import add_speedups
from neuronexp.formatting import fmt_us
from neuronexp.report.findings import findings
from neuronexp.report.markdown import render_markdown
from neuronexp.report.model import build_report
from neuronexp.report.summary import summary_markdown
from neuronexp.report.terminal import print_sweep
from neuronexp.report.why import verdict_words
from neuronexp.results import frame, load, to_arrow
from neuronexp.results.files import write_table

BASELINE = parse_baseline("rmsnorm_naive")
# Self time per step (µs) and calls per op, and ops dispatched → executed: the study's three variants on a CPU, where
# torch.rms_norm dispatches one op that runs as seven, and torch.compile leaves one generated kernel.
PROFILES = {
    "rmsnorm_naive": [("aten::mul", 3, 650.0), ("aten::copy_", 5, 220.0), ("aten::sum", 1, 90.0)],
    "rmsnorm_fused": [
        ("aten::mul", 2, 870.0),
        ("aten::copy_", 5, 670.0),
        ("aten::pow", 1, 390.0),
        ("aten::sum", 1, 100.0),
    ],
    "rmsnorm_compiled": [("cpp_fused_add_mean_mul_rsqrt_0", 1, 430.0)],
}
OPS = {"rmsnorm_naive": (6, 7), "rmsnorm_fused": (1, 7), "rmsnorm_compiled": (1, 1)}
PAIRS = 100


def _study_times(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The winner and the loser: every pair shares the host's level (±5%), each call ±1% of its own."""
    level = np.exp(0.05 * rng.standard_normal(PAIRS))
    means = {"rmsnorm_naive": 1000.0, "rmsnorm_fused": 1450.0, "rmsnorm_compiled": 720.0}
    return {m: us * level * np.exp(0.01 * rng.standard_normal(PAIRS)) for m, us in means.items()}


def _tie_times(fused_us: float):
    """Two variants 0.2% apart, each call ±1%: the per-pair ratio's interval straddles 1."""

    def times(rng: np.random.Generator) -> dict[str, np.ndarray]:
        level = np.exp(0.05 * rng.standard_normal(PAIRS))
        means = (("rmsnorm_naive", 100.0), ("rmsnorm_fused", fused_us))
        return {m: us * level * np.exp(0.01 * rng.standard_normal(PAIRS)) for m, us in means}

    return times


def _noisy_times(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The issue's noisy cell: a host in three states (each call ±5% within one), so the medians (about 1.64 ms and
    6.12 ms: ×0.27) and the median of the per-pair ratios (about ×0.71) say different things."""
    states = [(34, 1500.0, 6500.0), (17, 1640.0, 2000.0), (17, 5000.0, 6120.0), (32, 3000.0, 4200.0)]
    pairs = np.array([(a, b) for n, a, b in states for _ in range(n)])[rng.permutation(PAIRS)]
    jitter = np.exp(0.05 * rng.standard_normal((PAIRS, 2)))
    return {"rmsnorm_naive": pairs[:, 0] * jitter[:, 0], "rmsnorm_fused": pairs[:, 1] * jitter[:, 1]}


GROUPS = {
    "[1,512,2048]": _study_times,
    "[1,8,64]": _tie_times(100.2),
    "[1,16,64]": _tie_times(99.8),
    "[1,2048,4096]": _noisy_times,
}


def _tables():
    rng = np.random.default_rng(3)
    cells, ops, samples = [], [], []
    for g, (shape, times) in enumerate(GROUPS.items()):
        for module, lat in times(rng).items():
            run = f"{module}-{shape}"
            labels = dict(run_id=run, experiment="x", module=module, compiled=module.endswith("compiled"),
                          backend="cpu", device="cpu", dtype="float32", input_shape=shape)  # fmt: skip
            dispatched, executed = OPS[module]
            step = sum(us for _, _, us in PROFILES[module])
            noisy = shape == "[1,2048,4096]" and module == "rmsnorm_fused"
            cells.append(
                dict(
                    labels,
                    numel=10**g,
                    status="ok",
                    latency_median_us=float(np.median(lat)),
                    latency_samples=PAIRS,
                    device_time_us=step,
                    device_ops=float(executed),
                    ops_dispatched=float(dispatched),
                    overrides=f"module={module}",
                    timing_group=f"g{g}",
                    noisy=noisy,
                    noise="rounds spread 45%" if noisy else None,
                )  # fmt: skip
            )
            ops += [
                dict(
                    labels,
                    cycle=0,
                    op=op,
                    device_type="CPU",
                    calls=float(calls),
                    self_cpu_us=us,
                    cpu_total_us=us,
                    self_device_us=us,
                    device_total_us=us,
                    device_share=us / step,
                )  # fmt: skip
                for op, calls, us in PROFILES[module]
            ]
            samples += [
                dict(run_id=run, sample=i, latency_us=float(v), round=i // 20, pair=i) for i, v in enumerate(lat)
            ]
    samples = frame("samples", samples)
    return add_speedups(frame("cells", cells), BASELINE, samples), frame("ops", ops), samples


@pytest.fixture(scope="module")
def lines() -> dict[str, str]:
    cells, ops, samples = _tables()
    every = hotspots(ops, top=100)
    return {line.split(": ", 1)[0]: line for line in findings(cells, samples, every, all_ops=every)}


def test_the_winner_and_the_loser_each_with_why_in_operators(lines: dict[str, str]) -> None:
    line = lines["[1,512,2048]"]
    # ×1.39 = 1000 / 720; the compiled kernel replaces the whole naive chain (650 + 220 + 90 µs).
    assert re.fullmatch(
        r"\[1,512,2048\]: rmsnorm_compiled fastest, ×1\.39 vs rmsnorm_naive \(95% CI 1\.\d\d–1\.\d\d\): "
        r"1 op instead of 6→7 ops; aten::mul, aten::copy_, aten::sum \(960 µs\) replaced by "
        r"cpp_fused_add_mean_mul_rsqrt_0 \(430 µs\)\. "
        # ×0.69 = 1000 / 1450: one op dispatched, seven executed, and of the ops both run aten::copy_ grew most.
        r"rmsnorm_fused slower, ×0\.69 \(95% CI 0\.\d\d–0\.\d\d\): 1 op dispatched, 7 executed; "
        r"aten::copy_ 220 µs → 670 µs",
        line,
    ), line


def test_a_tie_is_said_as_no_difference_within_the_interval(lines: dict[str, str]) -> None:
    # The baseline ranks first: the other cell's clause says the tie, with how small a difference would have shown.
    assert re.fullmatch(
        r"\[1,8,64\]: rmsnorm_naive \(the baseline\) ties with rmsnorm_fused\. rmsnorm_fused ×(1\.00|0\.99) "
        r"\(95% CI 0\.99–1\.0\d\), no difference within ±[01]\.\d%: 1 op dispatched, 7 executed",
        lines["[1,8,64]"],
    ), lines["[1,8,64]"]
    # The other cell ranks first: the tie with the baseline in words, and no speedup claimed over it.
    assert re.fullmatch(
        r"\[1,16,64\]: rmsnorm_fused ties with rmsnorm_naive: no difference within ±[01]\.\d%, ×(1\.00|1\.01) "
        r"\(95% CI (0\.99|1\.00)–1\.0\d\); 1 op dispatched, 7 executed",
        lines["[1,16,64]"],
    ), lines["[1,16,64]"]


def test_a_noisy_cell_shows_its_medians_beside_the_paired_speedup(lines: dict[str, str]) -> None:
    cells = _tables()[0].set_index("run_id")
    naive, fused = (cells.loc[f"rmsnorm_{m}-[1,2048,4096]", "latency_median_us"] for m in ("naive", "fused"))
    assert naive / fused < 0.4  # the table's medians alone would say about ×0.3 …
    found = re.search(
        r"rmsnorm_fused slower, ×(0\.\d\d) per pair \(95% CI 0\.\d\d–0\.\d\d; (.*?)\): 1 op dispatched",
        lines["[1,2048,4096]"],
    )
    assert found and 0.65 < float(found[1]) < 0.8, lines["[1,2048,4096]"]  # … the pairs about ×0.71: both said
    assert found[2] == f"the noisy medians {fmt_us(naive)} and {fmt_us(fused)} give ×{naive / fused:.2f}"
    # Where the medians agree with the interval, nothing more is said.
    assert not any("medians" in lines[shape] for shape in ("[1,512,2048]", "[1,8,64]", "[1,16,64]"))


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    """The constructed tables as an aggregated sweep directory: results/ with the three tables, and a job directory
    per cell with its row and the sweep's baseline rule."""
    root = tmp_path_factory.mktemp("words") / "sweep"
    (root / "results").mkdir(parents=True)
    tables = _tables()
    for name, table in zip(("cells", "ops", "samples"), tables):
        write_table(root / "results" / f"{name}.parquet", to_arrow(name, table))
    for i in range(len(tables[0])):
        (root / str(i)).mkdir()
        write_table(root / str(i) / "cells.parquet", to_arrow("cells", tables[0].iloc[[i]]))
        (root / str(i) / "config.yaml").write_text("baseline: rmsnorm_naive\n")
    (root / "jobs.json").write_text(json.dumps([{"dir": str(i)} for i in range(len(tables[0]))]))
    return root


def _unfolded(text: str) -> list[str]:
    """The terminal's findings as lines again: a continuation line starts with two spaces."""
    return [ln for ln in text.replace("\n  ", " ").splitlines() if re.match(r"\[[\d,]+\]: ", ln)]


def test_the_same_sentence_under_the_table_in_summary_md_and_in_the_report(sweep_dir: Path, tmp_path: Path) -> None:
    cells = load(sweep_dir).cells
    out = io.StringIO()
    print_sweep(cells, BASELINE, sweep_dir, Console(file=out, width=80, highlight=False, color_system=None))
    text = out.getvalue()
    terminal = _unfolded(text)
    assert len(terminal) == len(GROUPS) and text.index("neuronexp sweep ·") < text.index(terminal[0][:12])
    assert max(len(ln) for ln in text.splitlines()) <= 80
    summary = summary_markdown(cells, [], BASELINE, sweep_dir)
    found = [ln[2:] for ln in summary.split("## Findings\n\n", 1)[1].splitlines() if ln.startswith("- [")]
    report = build_report(sweep_dir, tmp_path)
    in_report = [ln[2:] for ln in render_markdown(report).splitlines() if ln.startswith("- [")]
    assert terminal == found == in_report, (terminal, found, in_report)
    assert any("rmsnorm_fused slower, ×0.69" in ln for ln in terminal)

    # Without a baseline every cell stands alone, and a line of its own would repeat its row of the table.
    alone = cells.assign(baseline_run_id=None)
    out = io.StringIO()
    print_sweep(alone, None, sweep_dir, Console(file=out, width=120, highlight=False, color_system=None))
    assert not _unfolded(out.getvalue()) and "## Findings" not in summary_markdown(alone, [], None, sweep_dir)


@pytest.mark.parametrize(
    ("low", "high", "words"),
    [
        (1.03, 1.05, "faster"),
        (0.50, 0.90, "slower"),
        (0.97, 1.04, "no difference within ±4.0%"),  # the farther end: a difference, if any, is smaller
        (0.99, 1.00, "no difference within ±1.0%"),
        (1.01, 1.06, "faster, not clearly beyond 2.0%"),  # beside 1, but reaching inside the threshold
        (0.97, 0.99, "slower, not clearly beyond 2.0%"),
        (float("nan"), float("nan"), ""),  # no interval: the ×figure alone
    ],
)
def test_a_speedup_interval_in_words(low: float, high: float, words: str) -> None:
    assert verdict_words(low, high, 0.02) == words


@pytest.mark.parametrize(
    ("shape", "winner", "low", "tied"),
    [("[1,16,64]", "rmsnorm_fused", 1.5, False), ("[1,512,2048]", "rmsnorm_compiled", 1.0, True)],
)
def test_the_tie_with_the_baseline_reads_the_winners_paired_interval(shape, winner, low, tied) -> None:
    """The baseline's time ÷ the winner's over their pairs is the winner's paired speedup: the tie reads its interval
    from the row (not resampled again), so a row that says otherwise decides it."""
    cells, ops, samples = _tables()
    cells.loc[cells["run_id"] == f"{winner}-{shape}", "speedup_ci_low"] = low
    every = hotspots(ops, top=100)
    line = next(x for x in findings(cells, samples, every, all_ops=every) if x.startswith(shape))
    assert ("ties with" in line) == tied, line
