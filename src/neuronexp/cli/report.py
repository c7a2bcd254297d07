"""`neuronexp-report DIR`: report.html and report.md for a run or sweep directory, and a short summary.

Exit status: 0 written; 2 bad input (no results there, an unwritable output directory). Nothing is written unless
everything rendered, and each file is replaced atomically."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow as pa
from rich.console import Console
from rich.markup import escape

from neuronexp.cli.common import add_version, positive_int, quiet_on_closed_stdout
from neuronexp.report.model import ReportError
from neuronexp.report.tables import status_line
from neuronexp.report.terminal import print_findings
from neuronexp.report.write import write_report
from neuronexp.results import DamagedResults


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="neuronexp-report", description="Render report.html and report.md for a run or sweep directory."
    )
    p.add_argument(
        "dir", type=Path, metavar="DIR", help="a run directory (cells.parquet) or a sweep directory (results/)"
    )
    p.add_argument("--out", type=Path, metavar="OUT", help="write the report here instead of DIR (created if missing)")
    p.add_argument(
        "--baseline",
        metavar="RULE",
        help="the reference cell of each group of otherwise-identical cells: "
        "a module name, KEY=VALUE[,KEY=VALUE] (e.g. compile.enabled=false), or none "
        "(default: the sweep's own baseline)",
    )
    p.add_argument("--top", type=positive_int, default=8, metavar="N", help="ops per hotspot table (default 8)")
    add_version(p)
    return p


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(highlight=False)
    out_dir = args.out or args.dir
    try:
        report = write_report(args.dir, out_dir, baseline=args.baseline, top=args.top)
    except (ReportError, DamagedResults, OSError, pa.ArrowException) as exc:  # ArrowException: a damaged Parquet file
        print(f"neuronexp-report: error: {exc}", file=sys.stderr)
        return 2
    # Escaped: op names and labels are data, and "[...]" would read as rich markup.
    console.print(
        f"[bold]{escape(report.title)}[/] · {status_line(report)} · baseline {escape(report.baseline or '—')}"
    )
    print_findings(report.findings, console)  # as under a sweep's table: folded between words, never mid-figure
    console.print(
        f"report: [cyan]{escape(str(out_dir / 'report.html'))}[/] and [cyan]{escape(str(out_dir / 'report.md'))}[/]"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
