"""The op-time breakdown: where each cell's profiled step goes, one 100% bar per cell stacked by op."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.patches import Patch

from neuronexp.formatting import fmt_us, short_op
from neuronexp.report.plotkit import input_labels, largest_inputs, new_figure, svg
from neuronexp.results import usable_cells

# The bars' ids are `nx-breakdown-<variant>-<bar>` (report.plots names the scheme); ops are coloured from another
# palette than the variants', and each bar's label is written in its variant's colour.
_OTHER = "other"
# An op gets its own colour when it takes at least this share of some cell's step.
_MIN_SHARE = 0.05
_MAX_OPS = 9


def _op_colours(hotspots: dict[str, pd.DataFrame]) -> dict[str, tuple]:
    best: dict[str, float] = {}
    for frame in hotspots.values():
        for op, share in zip(frame["op"], frame["share"]):
            if share >= _MIN_SHARE:
                best[op] = max(best.get(op, 0.0), float(share))
    ops = sorted(best, key=lambda op: best[op], reverse=True)[:_MAX_OPS]
    palette = colormaps["Set3"]  # not the variants' palette: a colour means one variant throughout the report
    return {op: palette(i) for i, op in enumerate(ops)}


def breakdown_plot(cells: pd.DataFrame, hotspots: dict[str, pd.DataFrame], colours: dict[str, str]) -> str | None:
    """Where each cell's profiled step goes: one 100% bar per cell, stacked by op, total time at the end. Shares rather
    than µs: a fused op 100× faster than the naive chain would be an invisible sliver."""
    cells = usable_cells(cells)
    cells = cells[[not hotspots.get(str(r), pd.DataFrame()).empty for r in cells["run_id"]]]
    if cells.empty:
        return None
    total, cells = len(cells), largest_inputs(cells)
    op_colours = _op_colours({str(r): hotspots[str(r)] for r in cells["run_id"]})
    labels = [f"{v} · {s}" for v, s in zip(cells["variant"], input_labels(cells))]
    fig, ax = new_figure(9, 0.45 * len(cells) + 1.4)
    y = np.arange(len(cells))[::-1]
    for yi, (_, cell) in zip(y, cells.iterrows()):
        spots = hotspots[str(cell["run_id"])]
        left = 0.0
        for op, share in zip(spots["op"], spots["share"].fillna(0.0)):
            if op in op_colours and share > 0:
                ax.barh(yi, share, left=left, color=op_colours[op], edgecolor="white", linewidth=0.5)
                left += share
        ax.barh(yi, max(1.0 - left, 0.0), left=left, color="#d0d0d0", edgecolor="white", linewidth=0.5)
        ax.text(1.01, yi, fmt_us(cell["device_time_us"]), va="center", fontsize=8)
    ax.set_yticks(y, [""] * len(y))
    numbers = {v: i for i, v in enumerate(colours)}
    for k, (yi, label, variant) in enumerate(zip(y, labels, cells["variant"])):  # text: tick labels drop their colour
        text = ax.text(
            -0.01,
            yi,
            label,
            transform=ax.get_yaxis_transform(),
            ha="right",
            va="center",
            fontsize=8,
            color=colours.get(variant, "black"),
        )
        text.set_gid(f"nx-breakdown-{numbers.get(variant, 'x')}-{k}")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of profiled time per step (label: total per step)")
    if len(cells) < total:
        ax.set_title(f"largest inputs only: {len(cells)} of {total} cells", fontsize=9)
    handles = [Patch(color=c, label=short_op(op, 32)) for op, c in op_colours.items()] + [
        Patch(color="#d0d0d0", label=_OTHER)
    ]
    ax.legend(
        handles=handles,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12 - 0.4 / len(cells)),
        ncol=3,
        frameon=False,
    )
    return svg(fig)
