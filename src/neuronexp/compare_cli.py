"""`neuronexp-compare A B`: is B faster or slower than A, cell by cell, and is the difference real?

Exit status: 0 compared (and, with --fail-on-regression, nothing regressed); 1 with
--fail-on-regression, a cell is slower or ran in A and fails in B; 2 bad input (a directory without
results, nothing to match).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pyarrow as pa
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from neuronexp.compare import Comparison, CompareError, compare
from neuronexp.display import fmt_pct, fmt_us, short_op
from neuronexp.results import atomic_write_text, load

_STYLE = {"slower": "bold red", "faster": "bold green", "no change": "dim", "n/a": "yellow"}


def fmt_ratio(ratio: float) -> str:
    return "—" if not math.isfinite(ratio) else f"×{ratio:.3f} {(ratio - 1) * 100:+.1f}%"


def fmt_ci(low: float, high: float) -> str:
    return "—" if not (math.isfinite(low) and math.isfinite(high)) else f"{low:.3f}–{high:.3f}"


def fmt_delta(us: float) -> str:
    return ("+" if us >= 0 else "−") + fmt_us(abs(us))


def fmt_q(q: float) -> str:
    return "—" if not math.isfinite(q) else f"{q:.2g}" if q >= 1e-3 else "<0.001"


def _rows(cmp: Comparison) -> list[list[str]]:
    return [[str(r.cell), fmt_us(r.median_a_us), fmt_us(r.median_b_us), fmt_ratio(r.ratio), fmt_ci(r.ci_low, r.ci_high),
             fmt_q(r.q_value), f"{r.n_a}/{r.n_b}", str(r.verdict)] for r in cmp.cells.itertuples()]


_HEADERS = ["cell", "A median", "B median", "B/A", "95% CI", "q (BH)", "n A/B", "verdict"]


def _lists(cmp: Comparison) -> list[tuple[str, list[str]]]:
    pairs = [("failed in B, ran in A", cmp.broken), ("failed in A, ran in B", cmp.fixed),
             ("only in A", cmp.only_a), ("only in B", cmp.only_b)]
    return [(label, names) for label, names in pairs if names]


def regressed(cmp: Comparison) -> bool:
    """What --fail-on-regression fails on: a slower cell, or a cell that ran in A and fails in B."""
    return bool(cmp.count("slower") or cmp.broken)


def verdict_line(cmp: Comparison) -> str:
    counts = ", ".join(f"{cmp.count(w)} {w}" for w in ("slower", "faster", "no change") if cmp.count(w))
    line = f"{counts} (threshold {fmt_pct(cmp.threshold)}, BH q < {cmp.alpha:g})"
    if cmp.unresolved:
        line += (f"; {cmp.unresolved} 'no change' cell(s) have a CI wider than ±{fmt_pct(cmp.threshold)}: "
                 "more samples (timing.iters) would be needed to rule out a change that size")
    return line


def _op_rows(cmp: Comparison, limit: int) -> list[list[str]]:
    ops = cmp.ops.reindex(cmp.ops["delta_us"].abs().sort_values(ascending=False).index).head(limit)
    return [[str(r.cell), short_op(str(r.op), 48), str(r.change), fmt_us(r.a_us), fmt_us(r.b_us), fmt_delta(r.delta_us)]
            for r in ops.itertuples()]


def print_comparison(cmp: Comparison, console: Console, op_limit: int = 15) -> None:
    table = Table(title="B vs A · median latency · ratio of medians with bootstrap CI", title_justify="left")
    for h in _HEADERS:
        table.add_column(h, justify="left" if h in ("cell", "verdict") else "right", no_wrap=h != "cell")
    for row in _rows(cmp):
        # Labels and op names are data: escaped so "[...]" in them is not read as rich markup.
        table.add_row(*map(escape, row[:-1]), f"[{_STYLE.get(row[-1], '')}]{escape(row[-1])}[/]")
    console.print(table)
    if not cmp.ops.empty:
        ops = Table(title="Op tables: largest changes in self device time per step", title_justify="left")
        for h in ("cell", "op", "change", "A", "B", "Δ"):
            ops.add_column(h, justify="right" if h in ("A", "B", "Δ") else "left", no_wrap=h != "cell")
        for row in _op_rows(cmp, op_limit):
            ops.add_row(*map(escape, row))
        console.print(ops)
    for label, names in _lists(cmp):
        console.print(f"[yellow]{label} ({len(names)}):[/] {escape(', '.join(names))}")
    for note in cmp.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    console.print(escape(verdict_line(cmp)))


def comparison_markdown(cmp: Comparison, a: str, b: str) -> str:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = ["# neuronexp compare", "", f"A: `{a}`  ", f"B: `{b}`", "", row(_HEADERS), "|" + "---|" * len(_HEADERS)]
    lines += [row(r) for r in _rows(cmp)]
    lines += ["", verdict_line(cmp), ""]
    if not cmp.ops.empty:
        heads = ["cell", "op", "change", "A", "B", "Δ"]
        lines += ["## Op tables", "", row(heads), "|" + "---|" * len(heads)]
        lines += [row(r) for r in _op_rows(cmp, 30)] + [""]
    extra = [f"{label[0].upper()}{label[1:]}: " + ", ".join(names) for label, names in _lists(cmp)] + [f"Note: {n}" for n in cmp.notes]
    lines += extra + ([""] if extra else [])
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="neuronexp-compare", description=__doc__.splitlines()[0].split(": ", 1)[1])
    p.add_argument("a", metavar="A", help="run or sweep directory: the reference")
    p.add_argument("b", metavar="B", help="run or sweep directory: the candidate")
    p.add_argument("--ignore", action="append", default=[], metavar="LABEL",
                   help="label that differs on purpose (backend, experiment, an override key); repeat or comma-separate")
    p.add_argument("--threshold", type=float, default=0.02, help="practical threshold: smaller changes are 'no change' (default 0.02 = 2%%)")
    p.add_argument("--alpha", type=float, default=0.05, help="false discovery rate across cells (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="also write the comparison as Markdown")
    p.add_argument("--csv", type=Path, metavar="FILE", help="also write the per-cell table as CSV")
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 when a cell is slower, or ran in A and fails in B")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not 0 <= args.threshold < 1 or not 0 < args.alpha < 1:
        parser.error(f"--threshold must be in [0, 1) and --alpha in (0, 1); got {args.threshold} and {args.alpha}")
    ignore = [name.strip() for item in args.ignore for name in item.split(",") if name.strip()]
    try:
        cmp = compare(load(args.a), load(args.b), ignore=ignore, threshold=args.threshold, alpha=args.alpha, seed=args.seed)
        if args.markdown:
            atomic_write_text(args.markdown, comparison_markdown(cmp, args.a, args.b))
        if args.csv:
            atomic_write_text(args.csv, cmp.cells.to_csv(index=False))
    except (CompareError, OSError, pa.ArrowException) as exc:  # ArrowException: a damaged Parquet file
        print(f"neuronexp-compare: error: {exc}", file=sys.stderr)
        return 2
    print_comparison(cmp, Console(highlight=False))
    return 1 if args.fail_on_regression and regressed(cmp) else 0


if __name__ == "__main__":
    sys.exit(main())
