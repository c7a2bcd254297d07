"""Two report figures asked for on busy machines: each cell's samples round by round (the picture of why a cell is
noisy), and every cell's achieved figures against its roofs, one point per cell (report.plots places them).

Marks carry ids as report.plots': `nx-rounds-<variant>-<cell>`, `nx-roofs-<variant>-<cell>` (numbers: the variant's
place in the report's colours, the cell's place in the plot)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from neuronexp.report.plotkit import input_labels, largest_inputs, new_figure, svg
from neuronexp.results import usable_cells


def rounds_plot(cells: pd.DataFrame, samples: pd.DataFrame, colours: dict[str, str]) -> str | None:
    """A row per cell: every timed call as a dot, each round on a line of its own within the row, each round's
    median as a bar and the cell's latency (median of round medians) as a black diamond. Rounds that sit apart
    are what `round_spread` measures; a wide scatter within rounds is `p90_p10`."""
    cells = largest_inputs(usable_cells(cells))
    if cells.empty or samples.empty:
        return None
    by_run = {run: g for run, g in samples.groupby("run_id")}
    fig, ax = new_figure(9, 0.45 * len(cells) + 1.4)
    index = {v: i for i, v in enumerate(colours)}
    lo, hi = np.inf, 0.0
    for row, (_, cell) in enumerate(cells.iloc[::-1].iterrows()):
        got = by_run.get(cell["run_id"])
        if got is None or got.empty:
            continue
        rounds = got["round"].fillna(0).astype(int) if "round" in got else pd.Series(0, index=got.index)
        labels = sorted(rounds.unique())
        colour = colours.get(str(cell["variant"]), "#4c78a8")
        for k, r in enumerate(labels):
            y = row - 0.3 + 0.6 * (k + 0.5) / len(labels)
            x = got.loc[rounds == r, "latency_us"].to_numpy(float)
            dots = ax.scatter(x, np.full(len(x), y), s=6, color=colour, alpha=0.6, linewidths=0)
            dots.set_gid(f"nx-rounds-{index.get(str(cell['variant']), 0)}-{row}")
            ax.plot([np.median(x)] * 2, [y - 0.25 / len(labels), y + 0.25 / len(labels)], color=colour, linewidth=2)
            lo, hi = min(lo, x.min()), max(hi, x.max())
        ax.scatter([cell["latency_median_us"]], [row], marker="D", s=18, color="black", zorder=3)
    if hi <= 0:
        return None
    if hi / lo > 20:
        ax.set_xscale("log")
    labels = [
        f"{'~' if c.get('noisy') is True else ''}{c['variant']} · {s}"
        for (_, c), s in zip(cells.iterrows(), input_labels(cells))
    ]
    ax.set_yticks(range(len(cells)), labels[::-1], fontsize=8)
    ax.set_xlabel("latency per call (µs); a line per timing round, bar: its median, ◆: the cell's latency")
    ax.grid(True, axis="x", alpha=0.3)
    return svg(fig)


def roof_share_plot(cells: pd.DataFrame, colours: dict[str, str]) -> str | None:
    """One point per cell: its share of the bandwidth roof (x) and of the FLOP/s roof (y, 0 where no FLOPs are counted:
    elementwise layers sit on the x axis). The roofs are the 100% lines; a point near a line is at that limit."""
    if "pct_peak_bw" not in cells:
        return None
    cells = usable_cells(cells)
    cells = cells[cells["pct_peak_bw"].notna()]
    if cells.empty:
        return None
    y_all = cells["pct_peak_flops"].fillna(0.0) if "pct_peak_flops" in cells else pd.Series(0.0, index=cells.index)
    fig, ax = new_figure(8, 4.8)
    index = {v: i for i, v in enumerate(colours)}
    for n, ((_, cell), y) in enumerate(zip(cells.iterrows(), y_all)):
        variant = str(cell["variant"])
        counted = pd.notna(cell.get("pct_peak_flops"))
        dot = ax.scatter(
            [cell["pct_peak_bw"]],
            [y],
            s=30,
            zorder=3,
            color=colours.get(variant),
            facecolors=colours.get(variant) if counted else "none",
            edgecolors=colours.get(variant),
        )
        dot.set_gid(f"nx-roofs-{index.get(variant, 0)}-{n}")
    for name, colour in colours.items():  # the legend: one entry per variant present
        if (cells["variant"].astype(str) == name).any():
            ax.scatter([], [], color=colour, label=name)
    ax.axvline(100, color="black", linewidth=1, linestyle="--")
    ax.axhline(100, color="black", linewidth=1, linestyle="--")
    ax.set_xlim(0, max(110.0, float(cells["pct_peak_bw"].max()) * 1.1, float(y_all.max()) * 1.1))
    ax.set_ylim(-3, max(110.0, float(y_all.max()) * 1.1))
    ax.set_xlabel("% of the bandwidth roof (bytes_min / median latency); dashed: the roofs")
    ax.set_ylabel("% of the FLOP/s roof (0: no FLOPs counted, hollow)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return svg(fig)
