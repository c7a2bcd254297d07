"""`neuronexp-compare A B`: is B faster or slower than A, cell by cell, and is the difference real?

Intervals carry the variance between processes (several runs a side, or a noise floor from one), so a cell too
noisy to tell is "inconclusive" (docs/compare.md). Exit status: 0 compared; 1 with --fail-on-regression, a
regression; 3 with --fail-on-inconclusive, a cell it could not tell (and no regression); 2 bad input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow as pa
from rich.console import Console

from neuronexp.analysis.stats import Criteria
from neuronexp.cli.common import add_version, quiet_on_closed_stdout
from neuronexp.compare import (
    CompareError,
    CompareOptions,
    cell_lists,
    compare,
    comparison_markdown,
    exit_status,
    print_comparison,
)
from neuronexp.compare.render import REGRESSION_EXIT
from neuronexp.results import DamagedResults, load
from neuronexp.results.files import atomic_write_text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="neuronexp-compare",
        description=__doc__.splitlines()[0].split(": ", 1)[1],
        epilog="exit status: 0 compared; 1 a regression (--fail-on-regression); 3 a cell it could not tell, and no "
        "regression (--fail-on-inconclusive); 2 bad input",
    )
    _sides(p)
    _decisions(p)
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="also write the comparison as Markdown")
    p.add_argument("--csv", type=Path, metavar="FILE", help="also write the per-cell table as CSV")
    add_version(p)
    return p


def _sides(p: argparse.ArgumentParser) -> None:
    """What is compared: A and B, their further runs, and the labels not joined on."""
    p.add_argument("a", metavar="A", help="run or sweep directory: the reference")
    p.add_argument("b", metavar="B", help="run or sweep directory: the candidate")
    p.add_argument(
        "--also-a",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="a further run of A's cells (repeat): the intervals then hold run-to-run variance",
    )
    p.add_argument(
        "--also-b", action="append", default=[], type=Path, metavar="DIR", help="a further run of B's cells (repeat)"
    )
    p.add_argument(
        "--paired",
        action="store_true",
        help="the runs were made in pairs, A then B or B then A, in the order given (A with B, each --also-a with the "
        "--also-b in the same place): each ratio is the median over the pairs, each interval resamples them (a CI job "
        "that interleaves the sides: docs/compare.md, 'A CI gate')",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="LABEL",
        help="label that differs on purpose (backend, experiment, an override key); repeat or comma-separate",
    )


def _decisions(p: argparse.ArgumentParser) -> None:
    """When a cell is called, and when the exit status says so."""
    p.add_argument(
        "--threshold",
        type=float,
        default=0.02,
        help="practical threshold: smaller changes are 'no change' (default 0.02 = 2%%)",
    )
    p.add_argument(
        "--inconclusive",
        type=float,
        default=0.25,
        metavar="SIZE",
        help="a cell not called whose CI still allows a change beyond this is 'inconclusive' (default 0.25 = ±25%%)",
    )
    p.add_argument(
        "--no-host-reference",
        dest="host_reference",
        action="store_false",
        help="intervals as measured: do not widen them by how far the host's own reference workloads moved",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="false discovery rate across cells (default 0.05)")
    p.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when a cell is slower, or ran in A and fails in B"
    )
    p.add_argument(
        "--fail-on-inconclusive",
        action="store_true",
        help="exit 3 when compare cannot tell a cell (inconclusive: its CI allows a change beyond --inconclusive; n/a: "
        "no samples on a side) and no regression failed it first",
    )


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not 0 <= args.threshold < 1 or not 0 < args.alpha < 1 or not args.inconclusive > args.threshold:
        parser.error(
            f"--threshold must be in [0, 1), --alpha in (0, 1) and --inconclusive above --threshold; got "
            f"{args.threshold}, {args.alpha} and {args.inconclusive}"
        )
    if args.paired and len(args.also_a) != len(args.also_b):
        parser.error(
            f"--paired pairs each --also-a with an --also-b: got {len(args.also_a)} --also-a and {len(args.also_b)} "
            "--also-b"
        )
    ignore = [name.strip() for item in args.ignore for name in item.split(",") if name.strip()]
    try:
        paths = [args.a, args.b, *args.also_a, *args.also_b]
        results = [load(path) for path in paths]
        for path, side in zip(paths, results):
            if side.cells.empty:
                raise CompareError(f"{path}: the results hold no cells")
        a, b, more = results[0], results[1], results[2:]
        criteria = Criteria(threshold=args.threshold, alpha=args.alpha, inconclusive=args.inconclusive)
        options = CompareOptions(
            ignore=ignore, criteria=criteria, seed=args.seed, host_reference=args.host_reference, paired=args.paired
        )
        cmp = compare(a, b, options, more_a=more[: len(args.also_a)], more_b=more[len(args.also_a) :])
        if cmp.cells.empty:  # matched, but no cell ran on both sides: nothing to compare, say why
            why = "no cell ran in both A and B; " + "; ".join(
                f"{label} ({len(names)}): {', '.join(names)}" for label, names in cell_lists(cmp)
            )
            if cmp.broken and args.fail_on_regression:  # every cell that ran in A fails in B: a regression
                print(f"neuronexp-compare: {why}", file=sys.stderr)
                return REGRESSION_EXIT
            raise CompareError(why)
        if args.markdown:
            atomic_write_text(args.markdown, comparison_markdown(cmp, args.a, args.b))
        if args.csv:
            atomic_write_text(args.csv, cmp.cells.to_csv(index=False))
    except (CompareError, DamagedResults, OSError, pa.ArrowException) as exc:  # ArrowException: a damaged Parquet file
        print(f"neuronexp-compare: error: {exc}", file=sys.stderr)
        return 2
    print_comparison(cmp, Console(highlight=False))
    return exit_status(cmp, args.fail_on_regression, args.fail_on_inconclusive)


if __name__ == "__main__":
    sys.exit(main())
