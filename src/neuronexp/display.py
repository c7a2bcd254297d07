"""Terminal output: the short rich summary of one cell."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
from rich.console import Console
from rich.table import Table

from neuronexp.results import Results


def fmt_us(value: float | None) -> str:
    """Three significant digits, in µs, ms or s."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    for scale, unit in ((1e6, "s"), (1e3, "ms"), (1.0, "µs")):
        if abs(value) >= scale or unit == "µs":
            v = value / scale
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:,.0f} {unit}"
    raise AssertionError("unreachable")


_COMPILED_GRAPH = re.compile(r"^## Call CompiledFxGraph \w+ ##$")


def short_op(name: str, width: int = 40) -> str:
    """Op names for narrow tables: Inductor's graph call loses its hash, long names are cut."""
    if _COMPILED_GRAPH.match(name):
        return "CompiledFxGraph call"
    return name if len(name) <= width else name[: width - 1] + "…"


def fmt_pct(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.1f}%"


def device_word(cell: Mapping[str, Any]) -> str:
    """What the "device" columns measured for this cell, in words for a table header."""
    return "CPU" if cell["device_time_source"] == "cpu_self_time" else str(cell["backend"]).upper()


def top_ops_table(ops: pd.DataFrame, device: str, limit: int = 8) -> Table:
    table = Table(title=f"Top ops by self {device} time per step", title_justify="left")
    for name, justify in (("op", "left"), ("calls", "right"), (f"self {device}", "right"), ("share", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    host = ops[ops["device_type"] == "CPU"] if (ops["device_type"] == "CPU").any() else ops
    per_op = host.groupby("op", as_index=False)[["calls", "self_device_us", "device_share"]].mean()
    for row in per_op.sort_values("self_device_us", ascending=False).head(limit).itertuples():
        table.add_row(short_op(str(row.op), 60), f"{row.calls:g}", fmt_us(row.self_device_us), fmt_pct(row.device_share))
    return table


def print_cell(results: Results, out_dir: Path, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    cell = results.cells.iloc[0]
    console.print(
        f"[bold]{cell['module']}[/] · {cell['backend']} ({cell['device_name']}) · {cell['dtype']} {cell['shape']}"
        + (" · compiled" if cell["compiled"] else "")
    )
    if cell["status"] == "error":
        console.print(f"[red]cell failed:[/] {cell['error']}")
    else:
        device = device_word(cell)
        if not results.ops.empty:
            console.print(top_ops_table(results.ops, device))
        console.print(
            f"latency ({cell['timing_method']}, {cell['latency_samples']} samples): "
            f"median [bold]{fmt_us(cell['latency_median_us'])}[/] "
            f"(p10 {fmt_us(cell['latency_p10_us'])} – p90 {fmt_us(cell['latency_p90_us'])})"
        )
        console.print(
            f"profiled per step: {device} time {fmt_us(cell['device_time_us'])}, "
            f"{cell['device_ops']:g} ops dispatched · first call {cell['first_call_s']:.3f} s"
        )
        if isinstance(cell.get("warnings"), str) and cell["warnings"]:
            console.print(f"[yellow]warnings:[/] {cell['warnings']}")
    files = sorted(p.name for p in out_dir.iterdir() if not p.name.startswith("."))
    console.print(f"files in [cyan]{out_dir}[/]: {', '.join(files)}")
