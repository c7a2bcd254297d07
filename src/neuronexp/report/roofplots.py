"""The roofline figures: achieved FLOP/s against arithmetic intensity under the device's roofs, and achieved
bandwidth against the peak (for cells whose FLOPs are not counted)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from neuronexp.analysis.roofline import fmt_share
from neuronexp.report.plotkit import input_labels, largest_inputs, new_figure, svg
from neuronexp.results import usable_cells


def _roofs(cells: pd.DataFrame) -> pd.DataFrame:
    """The distinct roofs (bandwidth GB/s, TFLOP/s, where from) among `cells`."""
    cols = ["peak_bw_gbs", "peak_tflops", "peak_source"]
    return cells[cols].drop_duplicates() if set(cols) <= set(cells.columns) else pd.DataFrame(columns=cols)


def roofline_plot(cells: pd.DataFrame, colours: dict[str, str] | None = None) -> str | None:
    """Achieved GFLOP/s against arithmetic intensity (log-log), one marker per cell, with each device's roofs:
    min(peak FLOP/s, intensity × peak bandwidth). Cells with no counted FLOPs cannot be placed (intensity 0)."""
    if "flops" not in cells:
        return None
    cells = usable_cells(cells)
    cells = cells[(cells["flops"].fillna(0) > 0) & (cells["achieved_tflops"].fillna(0) > 0)]
    if cells.empty:
        return None
    fig, ax = new_figure(8, 4.8)
    roofs = [r for r in _roofs(cells).itertuples() if pd.notna(r.peak_bw_gbs) and pd.notna(r.peak_tflops)]
    ridges = [r.peak_tflops * 1e3 / r.peak_bw_gbs for r in roofs]  # FLOP/B where each device's two roofs meet
    low = min([cells["intensity"].min() / 4, *(x / 8 for x in ridges)])
    xs = np.geomspace(low, max([cells["intensity"].max() * 4, *(x * 4 for x in ridges)]), 200)
    for roof in roofs:
        ax.plot(
            xs,
            np.minimum(roof.peak_tflops * 1e3, xs * roof.peak_bw_gbs),
            color="black",
            linewidth=1,
            label=f"roof: {roof.peak_bw_gbs:.3g} GB/s, {roof.peak_tflops * 1e3:.3g} GFLOP/s",
        )
    for name, group in cells.groupby("variant", sort=False):
        ax.scatter(
            group["intensity"],
            group["achieved_tflops"] * 1e3,
            label=name,
            zorder=3,
            color=(colours or {}).get(str(name)),
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte of bytes_min)")
    ax.set_ylabel("achieved GFLOP/s (median latency)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    return svg(fig)


def bandwidth_plot(cells: pd.DataFrame, colours: dict[str, str] | None = None) -> str | None:
    """Achieved GB/s per cell (bytes_min / median latency), labelled with its % of the peak bandwidth, each
    device's peak drawn as a line: the roofline of cells whose FLOPs are not counted (elementwise layers)."""
    if "achieved_gbs" not in cells:
        return None
    cells = usable_cells(cells)
    cells = largest_inputs(cells[cells["achieved_gbs"].notna()])
    if cells.empty:
        return None
    fig, ax = new_figure(9, 0.4 * len(cells) + 1.4)
    y = np.arange(len(cells))[::-1]
    ax.barh(y, cells["achieved_gbs"], color=[(colours or {}).get(str(v), "#4c78a8") for v in cells["variant"]])
    for yi, (_, cell) in zip(y, cells.iterrows()):
        pct = cell.get("pct_peak_bw")
        ax.text(cell["achieved_gbs"], yi, f" {fmt_share(pct)}" if pd.notna(pct) else "", va="center", fontsize=8)
    for roof in cells["peak_bw_gbs"].dropna().unique():
        ax.axvline(roof, color="black", linewidth=1, linestyle="--")
        ax.text(roof, len(cells) - 0.4, f" peak {roof:.3g} GB/s", fontsize=8, va="bottom")
    ax.set_yticks(y, [f"{v} · {s}" for v, s in zip(cells["variant"], input_labels(cells))], fontsize=8)
    ax.set_xlabel("achieved GB/s (bytes_min / median latency); label: % of peak bandwidth")
    return svg(fig)
