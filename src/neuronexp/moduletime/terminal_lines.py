"""The modules table in the terminal: a depth-limited tree of the top modules, the modules summed by type, and the
hotspots (study units by class, marked where their place could change) that neuronexp-extract would take. Plain
lines cut to the console's width, so it reads the same at 80 columns and in a log."""

from __future__ import annotations

import math
import textwrap
from typing import Any

import pandas as pd

from neuronexp.analysis.noise import NOISY_MARK
from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.moduletime.views import by_type, children, hot_units, of_run, short_type

MAX_DEPTH = 4  # root = 0: a model, its body, a layer, its parts, theirs (list and dict containers opened, uncounted)
OPENED = {  # no forward of their own: their children are shown in their place
    "torch.nn.modules.container.ModuleList",
    "torch.nn.modules.container.ModuleDict",
    "torch.nn.modules.container.ParameterList",
}
MIN_SHARE = 0.02  # smaller children are summed in one "… n more" line
MAX_CHILDREN = 3  # and so are all but the top three (32 decoder layers are one line each otherwise)
FIGURES = 28  # the right-hand columns: calls, total, share, self share


# Said where no module has a device time: the device time came whole (the runtime's trace), with no op named.
UNSPLIT = (
    "No module has a device time: no source split the device time per op (the cell's device_time_source says where "
    "the step's came from; docs/neuron.md). Each module's host time is in its self_cpu_us."
)


def _line(name: str, calls: Any, total: float | str, share: float, self_share: float, width: int) -> str:
    """`total` a figure, or one already written (marked `~`)."""
    room = max(width - FIGURES, 20)
    name = name if len(name) <= room else name[: room - 1] + "…"
    calls_txt = f"{float(calls):g}" if not isinstance(calls, str) and pd.notna(calls) else ""
    total_txt = total if isinstance(total, str) else fmt_us(total)
    return f"{name:<{room}}{calls_txt:>5}{total_txt:>10}{fmt_pct(share):>7}{fmt_pct(self_share):>6}"


def _opened(table: pd.DataFrame, kids: dict[str, list[str]], path: str) -> list[str]:
    """A module's children with list and dict containers opened (they have no forward of their own): a decoder
    layer shows as `layers.0` one level below the model body, and T5's `block.0.layer.0.SelfAttention` in reach."""
    found = []
    for c in kids[path]:
        found += _opened(table, kids, c) if table.at[c, "module_type"] in OPENED else [c]
    return found


def tree_lines(table: pd.DataFrame, width: int) -> list[str]:
    kids = children(table)
    step = table["total_device_us"].max()
    lines: list[str] = []

    def visit(path: str, parent: str | None, depth: int) -> None:
        row, indent = table.loc[path], "  " * depth
        name = path[len(parent) + 1 :] if parent else path  # relative to the line above: `layers.0`, `mlp`
        label = (name or "(root)") + " " + short_type(row["module_type"])
        total, own = (row["total_device_us"] / step, row["self_device_us"] / step) if step > 0 else (math.nan,) * 2
        lines.append(_line(indent + label, row["calls"], row["total_device_us"], total, own, width))
        below = sorted(_opened(table, kids, path), key=lambda c: -table.at[c, "total_device_us"])
        if depth >= MAX_DEPTH:
            return
        shown = [c for c in below if step > 0 and table.at[c, "total_device_us"] / step >= MIN_SHARE][:MAX_CHILDREN]
        for c in shown:
            visit(c, path, depth + 1)
        hidden = [c for c in below if c not in shown]
        if hidden:
            rest = sum(table.at[c, "total_device_us"] for c in hidden)
            lines.append(_line(indent + f"  … {len(hidden)} more", "", rest, rest / step if step > 0 else 0, 0, width))

    for root in [p for p in table.index if not isinstance(table.at[p, "parent_path"], str)]:
        visit(root, None, 0)
    return lines


def module_lines(modules: pd.DataFrame, device: str, width: int = 80) -> list[str]:
    """The whole block for one run: its tree, top six types, top five hotspots; empty without a modules table."""
    table = of_run(modules)
    if table.empty:
        return []
    width = max(width, 60)
    head = f"Time per module (self {device} time of its ops per step; share of the step)"
    if table["total_device_us"].isna().all():  # a step's time known, not its split: ranking by 0s would mislead
        return [head[:width], *textwrap.wrap(UNSPLIT, width)]
    lines = [head[:width], f"{'module':<{max(width - FIGURES, 20)}}{'calls':>5}{'total':>10}{'share':>7}{'self':>6}"]
    lines += tree_lines(table, width)
    lines.append("Summed by type (a module inside one of its own type counted once)")
    types = by_type(table)
    for row in types[types["instances"] > 1].head(6).itertuples():  # one of a kind is in the tree already
        name = f"all {short_type(row.module_type)} ×{row.instances}"
        lines.append(_line(name, row.calls, row.total_device_us, row.share, math.nan, width).rstrip("—").rstrip())
    return lines + hotspot_lines(table, width)


def hotspot_lines(table: pd.DataFrame, width: int, top: int = 5) -> list[str]:
    """The top classes of study units, each `~` where its place could change (views.ranked), and a last line that
    says why, once: how many profiled cycles, and which entries overlap or spread."""
    hot = hot_units(table)
    if hot.empty:
        return []
    lines = ["Hotspots (study units by class: neuronexp-extract RUN_DIR --top K)"]
    for i, row in enumerate(hot.head(top).itertuples(), 1):
        name = f"{i}. {short_type(row.module_type)} {row.paths[0]}" + (
            f" +{row.instances - 1}" if row.instances > 1 else ""
        )
        total = (NOISY_MARK if row.noise else "") + fmt_us(row.total_device_us)
        lines.append(_line(name, row.calls, total, row.share, math.nan, width).rstrip("—").rstrip())
    unsure = [f"#{i} {n}" for i, n in enumerate(hot.head(top)["noise"], 1) if n]
    if any("one profiled cycle" in u for u in unsure):  # said once for all, not per entry
        unsure = ["from one profiled cycle: profile more cycles (profiler.schedule.repeat) to know"]
    if not unsure:
        return lines
    over = f" over the {int(hot['cycles'].iloc[0])} profiled cycles" if len(unsure) > 1 or "#" in unsure[0] else ""
    return lines + textwrap.wrap(f"{NOISY_MARK} its place could change{over}: " + "; ".join(unsure), width)
