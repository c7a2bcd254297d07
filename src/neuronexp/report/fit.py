"""The sweep's comparison laid out for the terminal's width (80 columns when piped to a file): a variant name is
never cut and every cell has its line; only the hotspot column gives way (sweep_layout says how)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from neuronexp.analysis.baseline import Baseline
from neuronexp.analysis.noise import NOISY_MARK, noisy
from neuronexp.analysis.roofline import headline
from neuronexp.analysis.variants import comparison_grid
from neuronexp.formatting import device_word, fmt_pct, fmt_speedup_ci, fmt_us, short_op
from neuronexp.report.cell_text import OUTPUT_FLAG, ops_text, output_differs

OUTPUT_MARK = "✗"

# The hotspot's op name is cut down to this many characters ("aten::_fu…"), no fewer: narrower, the variants are
# replaced by keys, then the column is left out (a name cut to "a…" names nothing).
_MIN_OP_CHARS = 10
_FAR = 100_000


class Trimmed:
    """`renderable` without the spaces rich pads its lines with on the right (a table's title, its blank separator
    rows, a left-aligned last column): a terminal shows nothing there, but a pipe, a file and a diff keep them."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].control and not line[-1].text.rstrip():
                line = line[:-1]
            if line and not line[-1].control:
                line[-1] = Segment(line[-1].text.rstrip(), line[-1].style)
            yield from line
            yield Segment.line()


def natural_width(console: Console, renderable: RenderableType) -> int:
    """Columns `renderable` takes when nothing has to wrap."""
    return console.measure(renderable, options=console.options.update(width=_FAR)).maximum


def _fields(cell: Mapping[str, Any], device: str | None) -> list[str]:
    """median, speedup, profiled time per step, ops per step, % of peak, hotspot: one line of the table."""
    if cell["status"] == "error":
        return ["error", "", "", "", "", str(cell["error"]).splitlines()[0] if cell["error"] else ""]
    time = fmt_us(cell["device_time_us"])
    if device is None:  # the devices differ between cells: each says its own
        time = f"{device_word(cell)} {time}"
    ops = cell["device_ops"]  # "6→7": dispatched→executed
    ops_field = ops_text(cell).removesuffix(" ops") if ops == ops and ops is not None else "—"
    # The share after a tab: a cut keeps it and shortens the op name (_cut).
    hotspot = (
        f"{short_op(cell['top_op'], 28)}\t{fmt_pct(cell['top_op_share'])}" if isinstance(cell["top_op"], str) else "—"
    )
    if cell["status"] == "cached":
        hotspot = "(cached) " + hotspot
    median = (NOISY_MARK if noisy(cell) else "") + fmt_us(cell["latency_median_us"])
    limit = (headline(cell) or "—") + (f" {OUTPUT_MARK}" if output_differs(cell) else "")  # "41% BW ✗"
    return [median, fmt_speedup_ci(cell), time, ops_field, limit, hotspot]


def _rows(
    cells: pd.DataFrame, baseline: Baseline | None
) -> tuple[list[str], list[tuple[str, str, list[str]]], str | None]:
    """(variants, [(input, variant, fields)] in grid order, the device word when every cell shares it)."""
    _, variants, grid = comparison_grid(cells, baseline)
    words = {device_word(c) for c in cells.to_dict("records")}
    device = next(iter(words)) if len(words) == 1 else None
    rows = [
        (" ".join(map(str, key)), v, _fields(by_variant[v], device))
        for key, by_variant in grid.items()
        for v in variants
        if v in by_variant
    ]
    return variants, rows, device


def _cut(hotspot: str, width: int | None) -> str:
    """ "op\tshare" as "op share" in `width` characters: the op name is cut ("…"), the share kept while it fits."""
    op, _, share = hotspot.partition("\t")
    text = f"{op} {share}" if share else op
    if width is None or len(text) <= width:
        return text
    room = width - len(share) - 1
    if share and room >= 2:
        return f"{op[: room - 1]}… {share}"
    return text[: max(width - 1, 0)] + "…"


def _table(
    title: str,
    rows: list[tuple[str, str, list[str]]],
    device: str | None,
    names: Mapping[str, str],
    speedups: bool,
    hotspot_width: int | None,
) -> Table:
    """hotspot_width: None keeps the hotspot whole, 0 leaves the column out."""
    table = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    keyed = any(name != variant for variant, name in names.items())
    table.add_column("input", no_wrap=True)
    table.add_column("v" if keyed else "variant", no_wrap=True)  # keys are explained by the legend above
    speedup_column = ["speedup"] if speedups else []
    for figure in ("median", *speedup_column, f"{device}/step" if device else "profiled/step", "ops", "% peak"):
        table.add_column(figure, justify="right", no_wrap=True)
    if hotspot_width != 0:
        table.add_column("hotspot", no_wrap=True, overflow="ellipsis")
    previous = None
    for i, (inp, variant, fields) in enumerate(rows):
        median, speedup, time, ops, limit, hotspot = fields
        hotspot = _cut(hotspot, hotspot_width)
        last = i + 1 == len(rows) or rows[i + 1][0] != inp
        values = [
            inp if inp != previous else "",
            names[variant],
            median,
            *([speedup] if speedups else []),
            time,
            ops,
            limit,
            *([hotspot] if hotspot_width != 0 else []),
        ]
        table.add_row(*(escape(v) for v in values), end_section=last)
        previous = inp
    return table


def _fitted(
    console: Console, title: str, rows: list, device: str | None, names: Mapping[str, str], speedups: bool
) -> Table | None:
    """The one-line-per-cell table within the console's width, its hotspot column cut as needed; None when that
    would leave an op name fewer than _MIN_OP_CHARS characters."""
    table = _table(title, rows, device, names, speedups, None)
    excess = natural_width(console, table) - console.width
    if excess <= 0:
        return table
    longest = max([len("hotspot")] + [len(_cut(fields[-1], None)) for _, _, fields in rows])
    share = max(len(fields[-1].partition("\t")[2]) + 1 for _, _, fields in rows)  # " 49.6%", kept whole
    if longest - excess - share < _MIN_OP_CHARS:
        return None
    return _table(title, rows, device, names, speedups, longest - excess)


def sweep_layout(
    console: Console, cells: pd.DataFrame, title: str, baseline: Baseline | None, wide: Table
) -> list[RenderableType]:
    """What to print for the sweep's comparison at this console's width: the first of three layouts that fits.
    The variants side by side (`wide`, report.terminal.rich_table); one line per cell with the variants as rows;
    the same with each variant shortened to a key ("A", "B", ...) explained in a legend above the table. The
    hotspot's op name is cut with "…", then the column is left out with a note (the full name is in results/)."""
    if natural_width(console, wide) <= console.width:
        return [wide]
    variants, rows, device = _rows(cells, baseline)
    speedups = any(fields[1] for _, _, fields in rows)
    notes: list[RenderableType] = []
    if any(fields[0].startswith(NOISY_MARK) for _, _, fields in rows):
        # A latency that moved over its window; a speedup timed paired keeps its interval (report.findings).
        notes.append(Text(f"{NOISY_MARK} noisy latency: not a finding (`noise` says why); a paired speedup stands"))
    if any(fields[4].endswith(OUTPUT_MARK) for _, _, fields in rows):
        # The same words as the wide table's cells (summary.OUTPUT_FLAG): a noisy cell's extra line can switch layouts.
        notes.append(Text(f"{OUTPUT_FLAG}: beyond tolerance (the cell's warnings say by how much)"))
    if (named := _fitted(console, title, rows, device, {v: v for v in variants}, speedups)) is not None:
        return [named, *notes]
    keys = {v: chr(ord("A") + i) if i < 26 else f"V{i + 1}" for i, v in enumerate(variants)}
    legend = Text("\n".join(f"{keys[v]}  {v}" for v in variants))
    table = _fitted(console, title, rows, device, keys, speedups)
    if table is None:  # narrower still: the hotspot column goes rather than any figure or name being cut
        table = _table(title, rows, device, keys, speedups, 0)
        notes.append(Text("hotspot column left out at this width: summary.md and the report have it"))
    return [legend, table, *notes]
