"""Stage 4, the report: a model gathered from a run or sweep directory (model, findings, tables), rendered as
HTML, Markdown and plots, plus the terminal and summary.md views of a sweep (terminal, summary)."""

from neuronexp.report.model import Report, ReportError, build_report

__all__ = ["Report", "ReportError", "build_report"]
