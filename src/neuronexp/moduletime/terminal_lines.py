"""The modules table in the terminal: a depth-limited tree of the top modules, the modules summed by type, and the
hotspots (study units, alike merged) that neuronexp-extract would take. Plain lines cut to the console's width,
so it reads the same at 80 columns and in a log."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.moduletime.views import by_type, children, hot_units, of_run, short_type

MAX_DEPTH = 4  # root = 0: a model, its body, its layer list, a layer, the layer's parts
MIN_SHARE = 0.02  # smaller children are summed in one "… n more" line
MAX_CHILDREN = 3  # and so are all but the top three (32 decoder layers are one line each otherwise)
FIGURES = 28  # the right-hand columns: calls, total, share, self share


def _line(name: str, calls: Any, total: float, share: float, self_share: float, width: int) -> str:
    room = max(width - FIGURES, 20)
    name = name if len(name) <= room else name[: room - 1] + "…"
    calls_txt = f"{float(calls):g}" if not isinstance(calls, str) and pd.notna(calls) else ""
    return f"{name:<{room}}{calls_txt:>5}{fmt_us(total):>10}{fmt_pct(share):>7}{fmt_pct(self_share):>6}"


def tree_lines(table: pd.DataFrame, width: int) -> list[str]:
    kids = children(table)
    step = table["total_device_us"].max()
    lines: list[str] = []

    def visit(path: str, indent: str) -> None:
        row = table.loc[path]
        label = (path.rsplit(".", 1)[-1] if path else "(root)") + " " + short_type(row["module_type"])
        total, own = (row["total_device_us"] / step, row["self_device_us"] / step) if step > 0 else (math.nan,) * 2
        lines.append(_line(indent + label, row["calls"], row["total_device_us"], total, own, width))
        below = sorted(kids[path], key=lambda c: -table.at[c, "total_device_us"])
        if int(row["depth"]) >= MAX_DEPTH:
            return
        shown = [c for c in below if step > 0 and table.at[c, "total_device_us"] / step >= MIN_SHARE][:MAX_CHILDREN]
        for c in shown:
            visit(c, indent + "  ")
        hidden = [c for c in below if c not in shown]
        if hidden:
            rest = sum(table.at[c, "total_device_us"] for c in hidden)
            lines.append(_line(indent + f"  … {len(hidden)} more", "", rest, rest / step if step > 0 else 0, 0, width))

    for root in [p for p in table.index if not isinstance(table.at[p, "parent_path"], str)]:
        visit(root, "")
    return lines


def module_lines(modules: pd.DataFrame, device: str, width: int = 80) -> list[str]:
    """The whole block for one run: its tree, top six types, top five hotspots; empty without a modules table."""
    table = of_run(modules)
    if table.empty:
        return []
    width = max(width, 60)
    head = f"Time per module (self {device} time of its ops per step; share of the step)"
    lines = [head[:width], f"{'module':<{max(width - FIGURES, 20)}}{'calls':>5}{'total':>10}{'share':>7}{'self':>6}"]
    lines += tree_lines(table, width)
    lines.append("Summed by type (a module inside one of its own type counted once)")
    types = by_type(table)
    for row in types[types["instances"] > 1].head(6).itertuples():  # one of a kind is in the tree already
        name = f"all {short_type(row.module_type)} ×{row.instances}"
        lines.append(_line(name, row.calls, row.total_device_us, row.share, math.nan, width).rstrip("—").rstrip())
    hot = hot_units(table).head(5)
    if not hot.empty:
        lines.append("Hotspots (study units, alike merged: neuronexp-extract RUN_DIR --top K)")
        for i, row in enumerate(hot.itertuples(), 1):
            name = f"{i}. {short_type(row.module_type)} {row.paths[0]}" + (
                f" +{row.instances - 1}" if row.instances > 1 else ""
            )
            lines.append(_line(name, row.calls, row.total_device_us, row.share, math.nan, width).rstrip("—").rstrip())
    return lines
