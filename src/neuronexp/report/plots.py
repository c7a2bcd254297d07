"""Report figures as SVG text: latency vs input size, op-time breakdown, speedup vs baseline, and the roofline
figures (report.roofplots). One colour per variant across every figure; marks carry ids the tests check them by
(below). Matplotlib's object API with the SVG canvas: no pyplot state, no display."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from neuronexp.analysis.variants import comparison_grid
from neuronexp.report.distplots import roof_share_plot, rounds_plot
from neuronexp.report.opplots import breakdown_plot
from neuronexp.report.plotkit import input_labels, new_figure, svg, variant_colours
from neuronexp.report.roofplots import bandwidth_plot, roofline_plot
from neuronexp.report.sections import Plot
from neuronexp.results import usable_cells

# The marks' ids: `nx-latency-<variant>-<series>`, `nx-speedup-<variant>-<input>`, `nx-ci-<variant>-<input>`,
# `nx-breakdown-<variant>-<bar>`, numbered by the variant's place in report_colours and the input's or bar's place
# in its plot. The op-time breakdown colours ops from another palette and writes each bar's label in its variant's.
# Series of one variant that differ in dtype or backend: told apart by line style, the colour stays the variant's.
_STYLES = ["-", "--", ":", "-."]


def _spread(cells: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """Median and p10–p90 per cell from the raw samples (the cells' own columns when samples are missing)."""
    out = cells.set_index("run_id")[["latency_p10_us", "latency_median_us", "latency_p90_us"]].copy()
    out.columns = [0.1, 0.5, 0.9]
    if not samples.empty:
        out.update(samples.groupby("run_id")["latency_us"].quantile([0.1, 0.5, 0.9]).unstack())
    return out


def latency_plot(cells: pd.DataFrame, samples: pd.DataFrame, colours: dict[str, str]) -> str | None:
    """Median latency vs input size, one line per variant (in its colour), the p10–p90 band shaded. Log axes once sizes
    (or latencies) span two decades, else small inputs crowd into one corner."""
    cells = usable_cells(cells)
    if cells.empty:
        return None
    spread = _spread(cells, samples)
    extra = pd.Series("", index=cells.index)
    for col in ("dtype", "backend"):  # what else tells a variant's series apart, when the sweep varies it
        if cells[col].nunique() > 1:
            extra = (extra + " " + cells[col].astype(str)).str.strip()
    styles = {e: _STYLES[i % len(_STYLES)] for i, e in enumerate(dict.fromkeys(extra))}
    index = {v: i for i, v in enumerate(colours)}
    fig, ax = new_figure(8, 4.5)
    for (variant, kind), group in cells.assign(_extra=extra).groupby(["variant", "_extra"], sort=False):
        group = group.sort_values("numel")
        s = spread.loc[group["run_id"]]
        colour, name = colours[variant], variant + (f" · {kind}" if kind else "")
        line = ax.plot(group["numel"], s[0.5], marker="o", label=name, color=colour, linestyle=styles[kind])[0]
        line.set_gid(f"nx-latency-{index[variant]}-{list(styles).index(kind)}")
        ax.fill_between(group["numel"], s[0.1], s[0.9], color=colour, alpha=0.18, linewidth=0)
    sizes = cells.drop_duplicates("numel").sort_values("numel")
    if sizes["numel"].max() >= 100 * sizes["numel"].min():
        ax.set_xscale("log")
    if spread[0.9].max() >= 100 * max(spread[0.1].min(), 1e-9):
        ax.set_yscale("log")
    ax.set_xticks(sizes["numel"], sizes["input_shape"], rotation=20, ha="right", fontsize=8)
    ax.xaxis.set_minor_locator(NullLocator())  # the shapes are the ticks; log minor ticks would add 2×10⁴ …
    ax.set_xlabel("input shape (positioned by element count)")
    ax.set_ylabel("latency per call (µs), median and p10–p90")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return svg(fig)


def speedup_plot(
    cells: pd.DataFrame, baseline: str | None, colours: dict[str, str], intervals: pd.DataFrame
) -> str | None:
    """The speedup figure as SVG (speedup_figure), None where there is nothing to draw."""
    fig = speedup_figure(cells, baseline, colours, intervals)
    return svg(fig) if fig is not None else None


def speedup_figure(
    cells: pd.DataFrame, baseline: str | None, colours: dict[str, str], intervals: pd.DataFrame
) -> Figure | None:
    """Speedup of every cell over its baseline cell per input, in the variant's colour: bars above 1 are faster;
    whiskers are the 95% bootstrap interval the findings state (findings.speedup_intervals)."""
    cells = usable_cells(cells)
    own = cells["baseline_run_id"] == cells["run_id"] if "baseline_run_id" in cells else False
    cells = cells[~own & np.isfinite(cells["speedup_vs_baseline"].astype(float))]
    if not baseline or cells.empty:
        return None
    cells = cells.assign(_input=input_labels(cells))
    ci = intervals.set_index("run_id")
    inputs = list(dict.fromkeys(cells.sort_values("numel", kind="stable")["_input"]))
    variants = [v for v in colours if v in set(cells["variant"])]
    width = 0.8 / len(variants)
    fig, ax = new_figure(8, 4)
    for i, variant in enumerate(variants):
        mine = cells[cells["variant"] == variant].set_index("_input")
        where = [(j, s) for j, s in enumerate(inputs) if s in mine.index]
        xs = [j + (i - (len(variants) - 1) / 2) * width for j, _ in where]
        vals = [float(mine.loc[s, "speedup_vs_baseline"]) for _, s in where]
        # Bars grow from 1 (no change): up is faster, down is slower, on a log axis too.
        bars = ax.bar(xs, [v - 1 for v in vals], bottom=1.0, width=width, label=variant, color=colours[variant])
        ax.bar_label(bars, [f"×{v:.2f}" for v in vals], fontsize=7, padding=2)
        number = list(colours).index(variant)
        for bar, x, v, (j, s) in zip(bars, xs, vals, where):
            bar.set_gid(f"nx-speedup-{number}-{j}")
            run = str(mine.loc[s, "run_id"])
            if run in ci.index and np.isfinite(ci.loc[run, ["ci_low", "ci_high"]].astype(float)).all():
                low, high = float(ci.loc[run, "ci_low"]), float(ci.loc[run, "ci_high"])
                whisker = [[max(v - low, 0.0)], [max(high - v, 0.0)]]  # below and above the bar's top
                drawn = ax.errorbar([x], [v], yerr=whisker, fmt="none", ecolor="black", elinewidth=1, capsize=3)
                drawn.lines[2][0].set_gid(f"nx-ci-{number}-{j}")
    values = cells["speedup_vs_baseline"].astype(float)
    if values.max() / max(values.min(), 1e-9) >= 20:
        ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(inputs)), inputs, fontsize=8)
    ax.set_ylabel("speedup: baseline median ÷ median")  # the baseline is named in the figure's title
    ax.margins(y=0.15)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def report_colours(report) -> dict[str, str]:
    """The report's variants, baseline first, and the one colour each has in every figure."""
    return variant_colours(comparison_grid(report.cells)[1])


@dataclass(frozen=True)
class _Figure:
    title: str  # "{baseline}": the report's baseline
    caption: str
    draw: Callable[[Any, dict[str, str]], str | None]  # (report, colours) → SVG, None: nothing to draw
    wide: bool = False
    first: bool = False  # the answer's picture, under the findings (Plot.first)


# Every figure the report can hold, in reading order; each is drawn where the report's data supports it.
_FIGURES = [
    _Figure(
        "Latency vs input size",
        "Median wall-clock latency per call; the band spans p10–p90 of the raw samples.",
        lambda r, colours: latency_plot(r.cells, r.results.samples, colours),
    ),
    _Figure(
        "Speedup vs {baseline}",
        "Baseline median latency ÷ variant median latency, same input; "
        "whiskers: the 95% bootstrap interval stated in the findings.",
        lambda r, colours: speedup_plot(r.cells, r.baseline, colours, r.intervals),
        first=True,
    ),
    _Figure(
        "Samples by timing round",
        "Every timed call of each cell, a line per round (bar: the round's "
        "median, ◆: the cell's latency); rounds apart are a noisy cell's round spread (~).",
        lambda r, colours: rounds_plot(r.cells, r.results.samples, colours),
        wide=True,
    ),
    _Figure(
        "Achieved vs the roofs",
        "One point per cell: its share of the bandwidth roof and of the FLOP/s "
        "roof (hollow on the x axis: no FLOPs counted); dashed: 100%, the limit.",
        lambda r, colours: roof_share_plot(r.cells, colours),
    ),
    _Figure(
        "Roofline",
        "Achieved GFLOP/s against FLOP per byte of bytes_min, under each device's roofs "
        "(cells with no counted FLOPs are in the bandwidth plot only).",
        lambda r, colours: roofline_plot(r.cells, colours),
    ),
    _Figure(
        "Achieved bandwidth",
        "bytes_min / median latency per cell, in its variant's colour; dashed: "
        "the peak bandwidth it is measured against; label: its share.",
        lambda r, colours: bandwidth_plot(r.cells, colours),
        wide=True,
    ),
    _Figure(
        "Op-time breakdown",
        "Self time per op as a share of the profiled step; grey is everything else. Labels in their variant's colour.",
        lambda r, colours: breakdown_plot(r.cells, r.hotspots, colours),
        wide=True,
    ),
]


def figures(report) -> list[Plot]:
    """Every plot the report's data supports."""
    colours = report_colours(report)
    drawn = [(figure, figure.draw(report, colours)) for figure in _FIGURES]
    return [
        Plot(figure.title.format(baseline=report.baseline), figure.caption, svg, figure.wide, figure.first)
        for figure, svg in drawn
        if svg
    ]
