"""neuronexp-report's work as one function, for the command and for `neuronexp.Results.report`: the report gathered
from a run or sweep directory, rendered as HTML and Markdown, and both files replaced atomically, nothing written
unless everything rendered."""

from __future__ import annotations

from pathlib import Path

from neuronexp.report.html import render_html
from neuronexp.report.markdown import render_markdown
from neuronexp.report.model import Report, build_report
from neuronexp.report.plots import figures
from neuronexp.results.files import atomic_write_text


def write_report(source: Path, out_dir: Path | None = None, baseline: str | None = None, top: int = 8) -> Report:
    """report.html and report.md for `source` in `out_dir` (default: `source`, created if missing); the report.

    Raises:
        ReportError: nothing to report on, or a baseline no cell matches.
        DamagedResults, OSError, pyarrow.ArrowException: results that cannot be read, or a directory not written.
    """
    out_dir = Path(out_dir) if out_dir is not None else Path(source)
    report = build_report(Path(source), out_dir, baseline=baseline, top=top)
    figs = figures(report)
    page, text = render_html(report, figs), render_markdown(report, figs)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "report.html", page)
    atomic_write_text(out_dir / "report.md", text)
    return report
