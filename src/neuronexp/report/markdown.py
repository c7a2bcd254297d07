"""report.md: the same report as Markdown for a pull request or an issue (text only; plots are in the HTML)."""

from __future__ import annotations

from neuronexp.formatting import md_cell as md
from neuronexp.report.model import Report
from neuronexp.report.sections import Body, Plot, Section, sections
from neuronexp.report.tables import TextTable, status_line


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


def render_section(section: Section, body: Body) -> list[str]:
    """A section as Markdown: its title, its note, what it shows (report.md, and results/summary.md's findings)."""
    return [f"## {md(section.title)}", ""] + ([md(section.note), ""] if section.note else []) + _body(body)


def _body(body: Body) -> list[str]:
    lines = [f"- {md(item)}" for item in body.items] + ([""] if body.items else [])
    if body.pairs:
        lines += ["| | |", "|---|---|"] + [f"| {md(k)} | {md(v)} |" for k, v in body.pairs] + [""]
    lines += render_table(body.table) if body.table is not None else []
    lines += [f"- {md(n)}" for n in body.notes] + ([""] if body.notes else [])
    for card in body.cards:
        links = " · ".join(_link(label, path) for label, path in card.links)
        lines += [f"### {md(card.heading)}", ""] + ([links, ""] if links else []) + render_table(card.table)
    lines += [f"- **{md(name)}**: {md(err)}" for name, err in body.errors] + ([""] if body.errors else [])
    return lines


def render_markdown(report: Report, figures: list[Plot] | None = None) -> str:
    source = f"{md(report.kind)} `{report.shown_source}`"
    lines = [
        f"# {md(report.title)}",
        "",
        f"{source} · {md(status_line(report))} · baseline {md(report.baseline or '—')}",
        "",
    ]
    for section, body in sections(report):
        if body is None:  # the plots: pictures, in report.html; named below
            continue
        lines += render_section(section, body)
    if figures:
        lines += [f"Plots ({', '.join(p.title for p in figures)}) are in report.html.", ""]
    return "\n".join(lines)
