"""Stage 4, the report: a model gathered from a run or sweep directory (model, findings, tables), rendered as
HTML, Markdown and plots, plus the terminal and summary.md views of a sweep (terminal, summary)."""
