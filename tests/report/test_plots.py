"""The report's plots and findings on a synthetic sweep with known answers: one colour per variant in every plot,
the speedup bars' 95% intervals (the findings' figures), and the "why" of a finding."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from helpers.svg import check_one_colour_per_variant
from neuronexp.analysis.baseline import parse_baseline
from neuronexp.analysis.ops import hotspots
from neuronexp.analysis.variants import add_speedups
from neuronexp.report.findings import findings, speedup_intervals
from neuronexp.report.html import render_html
from neuronexp.report.model import build_report
from neuronexp.report.plots import figures, variant_colours
from neuronexp.results import frame

# Self time per op and per step (µs) and calls, per variant: the naive chain, the fused op, the compiled kernel.
PROFILES = {
    "rmsnorm_naive": [
        ("aten::mul", 3, 60.0),
        ("aten::pow", 1, 10.0),
        ("aten::mean", 1, 10.0),
        ("aten::add", 1, 5.0),
        ("aten::rsqrt", 1, 5.0),
    ],
    "rmsnorm_fused": [("aten::_fused_rms_norm", 1, 15.0), ("aten::mul", 1, 5.0)],
    "rmsnorm_compiled": [("cpp_fused_add_mean_mul_pow_rsqrt_0", 1, 12.0), ("CompiledFxGraph call", 1, 3.0)],
}
MEDIANS = {"rmsnorm_naive": 100.0, "rmsnorm_fused": 40.0, "rmsnorm_compiled": 30.0}
SHAPES = {"[1,8,64]": 512, "[1,64,512]": 32768}


def _tables():
    rng = np.random.default_rng(1)
    cells, ops, samples = [], [], []
    for shape, numel in SHAPES.items():
        scale = numel / 512
        for module, median in MEDIANS.items():
            run = f"{module}-{numel}"
            labels = dict(
                run_id=run,
                experiment="synthetic",
                module=module,
                compiled=module.endswith("compiled"),
                backend="cpu",
                device="cpu",
                dtype="float32",
                input_shape=shape,
            )
            lat = median * scale * np.exp(0.02 * rng.standard_normal(40))
            total = sum(us for _, _, us in PROFILES[module]) * scale
            top_op, _, top_us = max(PROFILES[module], key=lambda p: p[2])
            cells.append(
                dict(
                    labels,
                    numel=numel,
                    status="ok",
                    latency_median_us=float(np.median(lat)),
                    latency_p10_us=float(np.quantile(lat, 0.1)),
                    latency_p90_us=float(np.quantile(lat, 0.9)),
                    latency_samples=40,
                    timing_method="wallclock",
                    device_time_us=total,
                    cpu_time_us=total,
                    device_ops=float(len(PROFILES[module])),
                    device_time_source="cpu_self_time",
                    top_op=top_op,
                    top_op_share=top_us * scale / total,
                    overrides=f"module={module}",
                    speedup_vs_baseline=MEDIANS["rmsnorm_naive"] / median,
                )
            )
            ops += [
                dict(
                    labels,
                    cycle=0,
                    op=op,
                    device_type="CPU",
                    calls=float(calls),
                    self_cpu_us=us * scale,
                    cpu_total_us=us * scale,
                    self_device_us=us * scale,
                    device_total_us=us * scale,
                    device_share=us * scale / total,
                )
                for op, calls, us in PROFILES[module]
            ]
            samples += [dict(run_id=run, sample=i, latency_us=float(v)) for i, v in enumerate(lat)]
    return frame("cells", cells), frame("ops", ops), frame("samples", samples)


@pytest.fixture(scope="module")
def synthetic_sweep(tmp_path_factory) -> Path:
    """A sweep directory as neuronexp leaves it: results/, and a job directory per cell with its row and config."""
    root = tmp_path_factory.mktemp("synthetic") / "sweep"
    (root / "results").mkdir(parents=True)
    tables = _tables()
    for name, table in zip(("cells", "ops", "samples"), tables):
        table.to_parquet(root / "results" / f"{name}.parquet")
    for i in range(len(tables[0])):
        job = root / str(i)
        job.mkdir()
        tables[0].iloc[[i]].to_parquet(job / "cells.parquet")
        (job / "config.yaml").write_text("baseline: rmsnorm_naive\n")  # the sweep's baseline rule
    (root / "jobs.json").write_text(json.dumps([{"dir": str(i)} for i in range(len(tables[0]))]))
    return root


def test_one_colour_per_variant_in_every_plot_and_an_interval_on_every_speedup_bar(synthetic_sweep: Path) -> None:
    report = build_report(synthetic_sweep)
    page = render_html(report, figures(report))
    marks = check_one_colour_per_variant(page, variants=3)
    # Variant numbers follow the report's order (baseline first): naive 0, then fused and compiled on both inputs.
    assert marks["bars"] == {(1, 0), (1, 1), (2, 0), (2, 1)}
    assert marks["legend"] == dict(
        enumerate(variant_colours(["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"]).values())
    )


def test_the_plotted_interval_is_the_one_the_finding_states(synthetic_sweep: Path) -> None:
    report = build_report(synthetic_sweep)
    intervals = report.intervals.set_index("run_id")
    assert set(intervals.index) == {f"{m}-{n}" for m in ("rmsnorm_fused", "rmsnorm_compiled") for n in SHAPES.values()}
    for line, numel in zip(report.findings, SHAPES.values()):
        row = intervals.loc[f"rmsnorm_compiled-{numel}"]
        assert row.ci_low < row.speedup < row.ci_high and 0.9 < row.speedup / (100 / 30) < 1.1
        assert f"×{row.speedup:.2f} vs rmsnorm_naive (95% CI {row.ci_low:.2f}–{row.ci_high:.2f})" in line
    # The same figures whoever asks: the plot reads report.intervals, computed once by the same function.
    cells, _, samples = _tables()
    again = speedup_intervals(add_speedups(cells, parse_baseline("rmsnorm_naive"), samples)).set_index("run_id")
    assert np.allclose(
        again.loc[intervals.index, ["speedup", "ci_low", "ci_high"]], intervals[["speedup", "ci_low", "ci_high"]]
    )


def test_a_finding_says_why_the_winner_wins() -> None:
    cells, ops, samples = _tables()
    cells, ops, samples = (t[t["run_id"].str.endswith("-512")] if "run_id" in t else t for t in (cells, ops, samples))
    every = hotspots(ops, top=100)
    # Known answers from PROFILES. The compiled kernel replaces every op of the naive chain: 90 µs by 15 µs.
    (line,) = findings(add_speedups(cells, parse_baseline("rmsnorm_naive"), samples), samples, {}, all_ops=every)
    assert line.startswith("[1,8,64]: rmsnorm_compiled fastest, ×3.")
    assert (
        ": 2 ops instead of 5 ops; aten::mul, aten::mean, aten::pow +2 more (90 µs) replaced by "
        "cpp_fused_add_mean_mul_pow_rsqrt_0, CompiledFxGraph call (15 µs). "
    ) in line
    # Fused alone: four ops gone and one new save 15 µs, aten::mul both run saves 55: that one is the reason.
    fused_only = add_speedups(cells[cells["module"] != "rmsnorm_compiled"], parse_baseline("rmsnorm_naive"), samples)
    (line,) = findings(fused_only, samples, {}, all_ops=every)
    assert line.startswith("[1,8,64]: rmsnorm_fused fastest, ×2.")
    assert line.endswith("): 2 ops instead of 5 ops; aten::mul 60 µs → 5 µs"), line


def test_when_the_baseline_wins_each_loser_is_said_against_it() -> None:
    cells, ops, samples = _tables()
    keep = cells["run_id"].isin(["rmsnorm_naive-512", "rmsnorm_fused-512"])
    slow = samples["run_id"] == "rmsnorm_fused-512"
    samples = samples.assign(latency_us=samples["latency_us"].where(~slow, samples["latency_us"] * 5))
    cells = add_speedups(cells[keep].assign(latency_median_us=[100.0, 200.0]), parse_baseline("rmsnorm_naive"), samples)
    (line,) = findings(cells, samples, {}, all_ops=hotspots(ops, top=100))
    # The loser's profile would make it faster (its step is 20 µs against 90): no operator is named as the reason,
    # and the profiled steps say the time went elsewhere.
    assert re.fullmatch(
        r"\[1,8,64\]: rmsnorm_naive \(the baseline\) fastest\. "
        r"rmsnorm_fused slower, ×0\.50 \(95% CI 0\.\d\d–0\.\d\d\): 2 ops instead of 5 ops; "
        r"profiled step 90 µs → 20 µs: the difference lies outside the profiled operators",
        line,
    ), line


SECTIONS = [
    "Findings",
    "Speedup",  # the findings' chart, beside them on the first screen
    "Experiment and environment",
    "Cells",
    "Variants side by side",
    "How far from the limit",
    "Plots",
    "Fusion view",
    "Hotspots",
]


def test_every_section_is_in_the_html_and_the_markdown_with_content(synthetic_sweep: Path) -> None:
    from neuronexp.report.markdown import render_markdown

    report = build_report(synthetic_sweep)
    figs = figures(report)
    page, text = render_html(report, figs), render_markdown(report, figs)
    html_heads = re.findall(r"<h2>([^<]+)</h2>", page)
    md_heads = re.findall(r"^## (.+)$", text, re.M)
    assert html_heads == SECTIONS, html_heads
    assert md_heads == [s for s in SECTIONS if s not in ("Plots", "Speedup")], md_heads  # in report.html, named
    assert all(f.title in text for f in figs) and "are in report.html" in text
    # Each section says something: the next heading is never right after this one.
    for part in re.split(r"<h2>[^<]+</h2>", page)[1:]:
        assert re.search(r"<(table|li|svg|div|img)\b", part), part[:200]
    for part in re.split(r"^## .+$", text, flags=re.M)[1:]:
        assert re.search(r"^(\| |- )", part, re.M), part[:300]  # a table or a list, not a heading alone
    assert page.count('<table class="grid">') == 1 and page.count("<svg") + page.count("<img") >= len(figs)


def test_both_renderers_show_one_list_of_sections_with_the_same_notes(synthetic_sweep: Path) -> None:
    """report.md and report.html read report.sections: the same titles in the same order, each with its note."""
    import html

    from neuronexp.report.markdown import render_markdown
    from neuronexp.report.sections import sections

    report = build_report(synthetic_sweep)
    figs = figures(report)
    page, text = render_html(report, figs), render_markdown(report, figs)
    shown = sections(report)
    assert [s.title for s, _ in shown] == re.findall(r"<h2>([^<]+)</h2>", page)
    assert [s.title for s, body in shown if body is not None] == re.findall(r"^## (.+)$", text, re.M)
    notes = {s.title: s.note for s, _ in shown if s.note}
    assert {"How far from the limit", "Fusion view", "Hotspots"} <= set(notes)
    for title, note in notes.items():
        assert f'<h2>{title}</h2><p class="muted">{html.escape(note)}</p>' in page, title
        assert f"## {title}\n\n{note}\n" in text, title
