"""The report's per-round distribution of each cell and its achieved-vs-roofs plot: a mark per cell and round,
a point per cell, in the variant's colour; both reach the HTML report."""

from __future__ import annotations

import re

import numpy as np

from neuronexp.report.distplots import roof_share_plot, rounds_plot
from neuronexp.report.html import render_html
from neuronexp.report.plotkit import variant_colours
from neuronexp.results import frame


def _cells_and_samples():
    rng = np.random.default_rng(3)
    cells, samples = [], []
    for i, (variant, shape, noisy) in enumerate(
        [("naive", "[1,8]", False), ("fused", "[1,8]", True), ("naive", "[1,64]", False), ("fused", "[1,64]", False)]
    ):
        run = f"r{i}"
        medians = [100.0, 100.0, 300.0] if noisy else [100.0, 102.0, 101.0]
        for r, m in enumerate(medians):
            samples += [
                dict(run_id=run, sample=5 * r + k, latency_us=float(m * np.exp(0.02 * rng.standard_normal())), round=r)
                for k in range(5)
            ]
        cells.append(
            dict(
                run_id=run,
                experiment="x",
                module=variant,
                compiled=False,
                backend="cpu",
                device="cpu",
                dtype="float32",
                input_shape=shape,
                numel=8 if shape == "[1,8]" else 64,
                status="ok",
                latency_median_us=float(np.median(medians)),
                noisy=noisy,
                overrides=f"module={variant}",
                pct_peak_bw=20.0 + 10 * i,
                pct_peak_flops=None if variant == "naive" else 5.0 * i,
            )
        )
    out = frame("cells", cells)
    out["variant"], out["input"] = out["module"], out["input_shape"]
    return out, frame("samples", samples)


def test_every_cell_has_a_mark_per_round_in_its_variants_colour() -> None:
    cells, samples = _cells_and_samples()
    colours = variant_colours(["naive", "fused"])
    page = rounds_plot(cells, samples, colours)
    marks = re.findall(r'<g id="nx-rounds-(\d+)-(\d+)"', page)
    assert sorted(set(marks)) == [("0", "1"), ("0", "3"), ("1", "0"), ("1", "2")]  # 4 cells, naive 0 and fused 1
    assert len(marks) == 4 * 3  # a group of dots per cell and round
    for variant, colour in colours.items():
        assert colour.lower() in page.lower(), variant
    assert "~fused · [1,8]" in page  # the noisy cell named as such


def test_one_point_per_cell_against_the_roofs() -> None:
    cells, _ = _cells_and_samples()
    page = roof_share_plot(cells, variant_colours(["naive", "fused"]))
    assert len(re.findall(r'<g id="nx-roofs-(\d+)-(\d+)"', page)) == 4
    assert roof_share_plot(cells.assign(pct_peak_bw=None), {}) is None


def test_both_plots_reach_the_html_report(tmp_path) -> None:
    from neuronexp.report.model import build_report
    from neuronexp.report.plots import figures

    cells, samples = _cells_and_samples()
    job = tmp_path / "run"
    job.mkdir()
    one = cells.drop(columns=["variant", "input"]).iloc[[1]]
    one.to_parquet(job / "cells.parquet")
    frame("ops", []).to_parquet(job / "ops.parquet")
    samples[samples["run_id"] == "r1"].to_parquet(job / "samples.parquet")
    report = build_report(job)
    page = render_html(report, figures(report))
    assert "Samples by timing round" in page and "Achieved vs the roofs" in page
    assert "nx-rounds-" in page and "nx-roofs-" in page
