"""report.md: the same report as Markdown for a pull request or an issue (text only; plots are in the HTML)."""

from __future__ import annotations

from neuronexp.formatting import md_cell as md
from neuronexp.report.plots import Plot
from neuronexp.report.model import Report
from neuronexp.report.tables import (
    ROOFLINE_NOTE, TextTable, cell_links, failed_cells, fusion_rows, grid_table, hotspot_sections, roof_notes,
    roofline_table, status_line, summary_table,
)


def _link(label: str, path: str) -> str:
    return f"[{md(label)}](<{path.replace('>', '%3E')}>)"


def render_table(table: TextTable) -> list[str]:
    lines = ["| " + " | ".join(md(h) for h in table.headers) + " |", "|" + "---|" * len(table.headers)]
    for i, row in enumerate(table.rows):
        cells = [md(v) for v in row]
        if table.links:
            cells[-1] = " ".join(_link(label, path) for label, path in table.links[i])
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def render_markdown(report: Report, figures: list[Plot] | None = None) -> str:
    lines = [f"# {md(report.title)}", "",
             f"{md(report.kind)} `{report.source}` · {md(status_line(report))} · baseline {md(report.baseline or '—')}", ""]
    if report.findings:
        lines += ["## Findings", ""] + [f"- {md(f)}" for f in report.findings] + [""]
    lines += ["## Experiment and environment", "", "| | |", "|---|---|"]
    lines += [f"| {md(k)} | {md(v)} |" for k, v in report.environment] + [""]
    lines += ["## Cells", ""] + render_table(summary_table(report))
    lines += ["## Variants side by side", ""] + render_table(grid_table(report))
    lines += ["## How far from the limit", "", md(ROOFLINE_NOTE), ""] + render_table(roofline_table(report))
    lines += [f"- {md(n)}" for n in roof_notes(report)] + [""]
    lines += ["## Fusion view", "", "Operators dispatched per profiled step; baseline operators gone or new per variant.", ""]
    lines += render_table(fusion_rows(report))
    lines += ["## Hotspots", "", "Top operators by self time per profiled step.", ""]
    for heading, cell, table in hotspot_sections(report):
        links = " · ".join(_link(label, path) for label, path in cell_links(cell))
        lines += [f"### {md(heading)}", ""] + ([links, ""] if links else []) + render_table(table)
    failed = failed_cells(report)
    if failed:
        lines += ["## Failed cells", ""] + [f"- **{md(name)}**: {md(err)}" for name, err in failed] + [""]
    if figures:
        lines += [f"Plots ({', '.join(p.title for p in figures)}) are in report.html.", ""]
    return "\n".join(lines)
