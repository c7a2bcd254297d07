"""The sweep comparison table: a row per input, a column per variant (terminal and Markdown)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pandas as pd
from rich.console import Console
from rich.table import Table

from neuronexp.display import device_word, fmt_pct, fmt_us, short_op

if TYPE_CHECKING:
    from neuronexp.aggregate import SweepOutcome

_ROW_AXES = ["backend", "dtype", "shape"]


def variant_label(cell: Mapping[str, Any]) -> str:
    name = str(cell["module"])
    return name + " +compile" if bool(cell["compiled"]) and "compile" not in name else name


def variant_labels(cells: pd.DataFrame) -> pd.Series:
    """variant_label for every row at once (sweeps can have thousands of cells)."""
    names = cells["module"].astype(str)
    tag = cells["compiled"].astype(bool) & ~names.str.contains("compile")
    return names.where(~tag, names + " +compile")


def _row_axes(cells: pd.DataFrame) -> list[str]:
    """Label columns that vary across the sweep (shape always), in a stable order."""
    return [c for c in _ROW_AXES if c == "shape" or cells[c].nunique(dropna=False) > 1]


Grid = dict[tuple, dict[str, dict[str, Any]]]


def comparison_grid(cells: pd.DataFrame, baseline: str | None = None) -> tuple[list[str], list[str], Grid]:
    """(row axes, variants, {row key: {variant: cell}}), rows ordered by input size, baseline first."""
    if cells.empty:
        return ["shape"], [], {}
    cells = cells.assign(_variant=variant_labels(cells))
    axes = _row_axes(cells)
    variants: list[str] = list(dict.fromkeys(cells["_variant"]))
    variants.sort(key=lambda v: v != baseline)
    grid: Grid = {}
    for cell in cells.sort_values(["numel", *axes], kind="stable").to_dict("records"):
        grid.setdefault(tuple(cell[a] for a in axes), {})[cell["_variant"]] = cell
    return axes, variants, grid


def cell_lines(cell: Mapping[str, Any] | None) -> list[str]:
    """What one table cell says: latency, profiled time and ops per step, speedup, hotspot."""
    if cell is None:
        return ["—"]
    if cell["status"] == "error":
        return ["error", str(cell["error"])[:60]]
    device = device_word(cell)
    speedup = cell["speedup_vs_baseline"]
    first = fmt_us(cell["latency_median_us"])
    if speedup is not None and not math.isnan(speedup):
        first += f" ×{speedup:.2f}"
    lines = [first, f"{device} {fmt_us(cell['device_time_us'])} · {cell['device_ops']:g} ops"]
    if isinstance(cell["top_op"], str):
        lines.append(f"{short_op(cell['top_op'], 24)} {fmt_pct(cell['top_op_share'])}")
    if cell["status"] == "cached":
        lines.append("(cached)")
    return lines


def rich_table(cells: pd.DataFrame, title: str, baseline: str | None = None) -> Table:
    axes, variants, grid = comparison_grid(cells, baseline)
    table = Table(title=title, show_lines=True, title_justify="left")
    for a in axes:
        table.add_column(a, no_wrap=True)
    for v in variants:
        table.add_column(v)
    for key, by_variant in grid.items():
        table.add_row(*map(str, key), *("\n".join(cell_lines(by_variant.get(v))) for v in variants))
    return table


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def summary_markdown(outcome: SweepOutcome, sweep_dir: Path) -> str:
    cells = outcome.cells
    counts = cells["status"].value_counts().to_dict() if not cells.empty else {}
    status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    if outcome.missing:
        status += f", {len(outcome.missing)} missing"
    experiment = ", ".join(sorted(cells["experiment"].dropna().unique())) if not cells.empty else "?"
    lines = [f"# Sweep summary: {_md(experiment)}", "", f"Directory: `{sweep_dir}`  ", f"Cells: {status or 'none'}", ""]
    if not cells.empty:
        devices = "; ".join(sorted({f"{b} ({d})" for b, d in zip(cells["backend"], cells["device_name"])}))
        methods = ", ".join(sorted(cells["timing_method"].dropna().unique()))
        lines += [f"Devices: {_md(devices)}  ", f"Latency method: {methods}; torch {cells['torch_version'].iloc[0]}", ""]
        axes, variants, grid = comparison_grid(cells, outcome.baseline)
        lines.append("| " + " | ".join(axes + variants) + " |")
        lines.append("|" + "---|" * (len(axes) + len(variants)))
        for key, by_variant in grid.items():
            row = [_md(str(k)) for k in key] + ["<br>".join(_md(x) for x in cell_lines(by_variant.get(v))) for v in variants]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    failed = cells[cells["status"] == "error"] if not cells.empty else cells
    if len(failed) or outcome.missing:
        lines += ["## Failed cells", ""]
        lines += [f"- `{_md(str(r.overrides))}`: {_md(str(r.error))}" for r in failed.itertuples()]
        lines += [f"- job `{m}`: no result (the job died or has not run; rerun the sweep to resume)" for m in outcome.missing]
        lines.append("")
    return "\n".join(lines)


def print_sweep(outcome: SweepOutcome, sweep_dir: Path, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    cells = outcome.cells
    if not cells.empty:
        title = f"neuronexp sweep · {len(cells)} cells · median latency ×speedup vs {outcome.baseline or '—'} · profiled time/step · ops/step · hotspot"
        console.print(rich_table(cells, title, outcome.baseline))
    failed = outcome.failed
    tail = f"[red]{failed} failed[/]" if failed else "all cells ok"
    console.print(f"{tail} · results in [cyan]{sweep_dir / 'results'}[/] (summary.md, cells/ops/samples .parquet + .csv)")
