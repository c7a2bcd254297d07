"""A comparison as people read it: the terminal table (rich) and Markdown."""

from __future__ import annotations

import re
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from neuronexp.analysis.noise import NOISY_MARK
from neuronexp.analysis.roofline import headline
from neuronexp.compare.join import Comparison
from neuronexp.formatting import (
    fmt_ci,
    fmt_delta,
    fmt_pct,
    fmt_probability,
    fmt_q,
    fmt_ratio,
    fmt_us,
    md_cell,
    short_op,
)

_STYLE = {"slower": "bold red", "faster": "bold green", "no change": "dim", "n/a": "yellow", "inconclusive": "yellow"}


def _rows(cmp: Comparison) -> list[list[str]]:
    return [
        [
            (NOISY_MARK if getattr(r, "noisy", False) else "") + str(r.cell),
            fmt_us(r.median_a_us),
            fmt_us(r.median_b_us),
            fmt_ratio(r.ratio),
            fmt_ci(r.ci_low, r.ci_high),
            fmt_probability(r.p_faster),
            fmt_q(r.q_value),
            f"{r.rounds_a}/{r.rounds_b}",
            str(r.verdict),
        ]
        for r in cmp.cells.itertuples()
    ]


# "P(B faster)": the share of the bootstrap's ratios below 1. "rounds": the timing rounds on each side, the unit the
# interval resamples (one: pooled samples, see the notes).
_HEADERS = ["cell", "A median", "B median", "B/A", "95% CI", "P(B faster)", "q (BH)", "rounds A/B", "verdict"]


def cell_lists(cmp: Comparison) -> list[tuple[str, list[str]]]:
    """The cells that were not compared, by reason (label, names), leaving out empty lists."""
    pairs = [
        ("failed in B, ran in A", cmp.broken),
        ("failed in A, ran in B", cmp.fixed),
        ("failed in both", cmp.failed),
        ("only in A", cmp.only_a),
        ("only in B", cmp.only_b),
    ]
    return [(label, names) for label, names in pairs if names]


def _limit_rows(cmp: Comparison) -> list[list[str]]:
    """Per cell: % of peak (bandwidth, or FLOP/s when compute-bound) and the output check, in A and in B."""
    return [
        [
            str(r["cell"]),
            _share(r, "a"),
            _share(r, "b"),
            str(r.get("output_check_a") or "—"),
            str(r.get("output_check_b") or "—"),
        ]
        for r in cmp.cells.to_dict("records")
    ]


def _share(r: dict[str, Any], side: str) -> str:
    """One side's % of peak as every table shows it (headline: FLOP/s when that side's cell was compute-bound)."""
    return headline({k: r.get(f"{k}_{side}") for k in ("bound", "pct_peak_bw", "pct_peak_flops")}) or "—"


def output_notes(cmp: Comparison) -> list[str]:
    """Cells whose output fails the check against their baseline in B (a variant that got fast by being wrong)."""
    if "output_check_b" not in cmp.cells:
        return []
    failing = cmp.cells[cmp.cells["output_check_b"] == "FAIL"]
    return [
        f"{r.cell}: B's output differs from its baseline's beyond tolerance (A: {r.output_check_a or '—'})"
        for r in failing.itertuples()
    ]


def regressed(cmp: Comparison) -> bool:
    """What --fail-on-regression fails on: a slower cell, or a cell that ran in A and fails in B."""
    return bool(cmp.count("slower") or cmp.broken)


def undecided(cmp: Comparison) -> int:
    """How many cells compare could not tell, what --fail-on-inconclusive fails on: inconclusive (the interval still
    allows a change beyond ±`inconclusive`) or n/a (no samples on a side)."""
    return cmp.count("inconclusive") + cmp.count("n/a")


# neuronexp-compare's exit statuses besides 0 (compared) and 2 (bad input): a CI job can rerun on "could not tell"
# (on a quieter machine, or with more runs a side) and fail on a regression.
REGRESSION_EXIT, UNDECIDED_EXIT = 1, 3


def exit_status(cmp: Comparison, fail_on_regression: bool, fail_on_inconclusive: bool) -> int:
    """1 for a regression (with --fail-on-regression), else 3 for a cell it could not tell (with
    --fail-on-inconclusive), else 0: a regression shown is an answer, and outranks what could not be told."""
    if fail_on_regression and regressed(cmp):
        return REGRESSION_EXIT
    return UNDECIDED_EXIT if fail_on_inconclusive and undecided(cmp) else 0


def verdict_line(cmp: Comparison) -> str:
    words = ("slower", "faster", "no change", "inconclusive", "n/a")
    counts = ", ".join(f"{cmp.count(w)} {w}" for w in words if cmp.count(w))
    line = f"{counts} (threshold {fmt_pct(cmp.criteria.threshold)}, BH q < {cmp.criteria.alpha:g})"
    if cmp.unresolved:
        line += (
            f"; {cmp.unresolved} 'no change' cell(s) have a CI wider than ±{fmt_pct(cmp.criteria.threshold)}: "
            "more samples (timing.iters) would be needed to rule out a change that size"
        )
    if cmp.count("inconclusive"):
        line += (
            f"; {cmp.count('inconclusive')} inconclusive cell(s): the interval still allows a change beyond "
            f"±{fmt_pct(cmp.criteria.inconclusive)}, so compare cannot tell: rerun on a quieter machine, or add runs "
            "(--also-a/--also-b)"
        )
    return line


_OP_HEADERS = ["cell", "op", "change", "A", "B", "Δ"]


def _op_rows(cmp: Comparison, limit: int) -> list[list[str]]:
    ops = cmp.ops.reindex(cmp.ops["delta_us"].abs().sort_values(ascending=False).index).head(limit)
    return [
        [str(r.cell), short_op(str(r.op), 48), str(r.change), fmt_us(r.a_us), fmt_us(r.b_us), fmt_delta(r.delta_us)]
        for r in ops.itertuples()
    ]


def _natural_widths(headers: list[str], rows: list[list[str]]) -> list[int]:
    return [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]


def _fit_widths(headers: list[str], rows: list[list[str]], room: int) -> list[int | None]:
    """Column widths when the table is wider than `room`: the figures keep theirs, the ratio wraps after its
    first word, and the cell names take what is left but never fewer than 12 characters (rich alone would
    narrow them to nothing). None: rich decides."""
    natural = _natural_widths(headers, rows)
    if sum(natural) <= room:
        return [None] * len(headers)
    ratio = headers.index("B/A")
    natural[ratio] = max([len(headers[ratio]), *(len(r[ratio].split()[0]) for r in rows if r[ratio].split())])
    # Headers wrap at their spaces ("rounds A/B" over two lines) before a cell name is cut inside a word.
    natural[1:] = [
        max([*(len(w) for w in h.split()), *(len(r[i]) for r in rows)]) if i != ratio else natural[i]
        for i, h in enumerate(headers)
        if i > 0
    ]
    rest = sum(natural[1:])
    longest_word = max([12, *(len(w) for r in rows for w in r[0].split())])
    return [max(min(longest_word, 30), min(natural[0], room - rest)), *natural[1:]]


# Left out of the terminal's table where it is too narrow for the boxed one (80 columns, piped): the CSV and the
# Markdown keep it, and the notes say where a side has one round.
_NARROW_DROPS = "rounds A/B"


def print_comparison(cmp: Comparison, console: Console, op_limit: int = 15) -> None:
    rows, headers = _rows(cmp), _HEADERS
    # Too narrow for the boxed table (80 columns, e.g. piped): no vertical rules, so the figures keep their room.
    boxed = sum(_natural_widths(headers, rows)) + 3 * len(headers) + 1 <= console.width
    narrow: dict[str, Any] = {} if boxed else {"box": box.SIMPLE_HEAD, "show_edge": False, "padding": 0}
    if narrow:
        keep = [i for i, h in enumerate(headers) if h != _NARROW_DROPS]
        headers, rows = [headers[i] for i in keep], [[r[i] for i in keep] for r in rows]
    table = Table(
        title="B vs A · median of round medians · ratio, bootstrap CI with each one-run side's noise floor (~ noisy)",
        title_justify="left",
        **narrow,
    )
    widths = _fit_widths(headers, rows, console.width - (len(headers) - 1 if narrow else 3 * len(headers) + 1))
    for h, width in zip(headers, widths):
        table.add_column(h, justify="left" if h in ("cell", "verdict") else "right", width=width, overflow="fold")
    for row in rows:
        # Labels and op names are data: escaped so "[...]" in them is not read as rich markup.
        table.add_row(*map(escape, row[:-1]), f"[{_STYLE.get(row[-1], '')}]{escape(row[-1])}[/]")
    console.print(table)
    if not cmp.ops.empty:
        ops = Table(title="Op tables: largest changes in self device time per step", title_justify="left", **narrow)
        for h in _OP_HEADERS:
            ops.add_column(
                h, justify="right" if h in ("A", "B", "Δ") else "left", no_wrap=h not in ("cell", "op"), overflow="fold"
            )
        for row in _op_rows(cmp, op_limit):
            ops.add_row(*map(escape, row))
        console.print(ops)
    for label, names in cell_lists(cmp):
        console.print(f"[yellow]{label} ({len(names)}):[/] {escape(', '.join(names))}")
    for note in cmp.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    for note in output_notes(cmp):
        console.print(f"[red]output:[/] {escape(note)}")
    console.print(escape(verdict_line(cmp)))


def comparison_markdown(cmp: Comparison, a: str, b: str) -> str:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(md_cell(c) for c in cells) + " |"

    def table(heads: list[str], rows: list[list[str]]) -> list[str]:
        return [row(heads), "|" + "---|" * len(heads), *map(row, rows)]

    # Every text from the results goes through md_cell, the one escape of report, summary.md and this file: a
    # layer's error text or a cell name is data, never markup (`<script>` in an exception must stay text).
    lines = ["# neuronexp compare", "", f"A: {_code(a)}  ", f"B: {_code(b)}", "", *table(_HEADERS, _rows(cmp))]
    lines += ["", md_cell(verdict_line(cmp)), ""]
    limits = _limit_rows(cmp)
    if any(row[1:] != ["—"] * 4 for row in limits):
        heads = ["cell", "% of peak A", "% of peak B", "output A", "output B"]
        lines += ["## How far from the limit", "", *table(heads, limits), ""]
    lines += [f"Output: {md_cell(n)}" for n in output_notes(cmp)] + ([""] if output_notes(cmp) else [])
    if not cmp.ops.empty:
        lines += ["## Op tables", "", *table(_OP_HEADERS, _op_rows(cmp, 30)), ""]
    extra = [f"{label[0].upper()}{label[1:]}: " + md_cell(", ".join(names)) for label, names in cell_lists(cmp)]
    extra += [f"Note: {md_cell(n)}" for n in cmp.notes]
    lines += extra + ([""] if extra else [])
    return "\n".join(lines)


def _code(path: str) -> str:
    """A path as inline code: a fence longer than any run of backticks in it, so none ends the span early."""
    text = path.replace("\r", " ").replace("\n", " ")
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if len(fence) > 1 else f"`{text}`"
