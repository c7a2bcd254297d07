"""The report's sections, in reading order, as data: a title, the note under it and what it shows. report.md and
report.html both render this one list, so a section, its wording or its order cannot differ between the two."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from neuronexp.report.model import Report
from neuronexp.report.tables import (
    ROOFLINE_NOTE,
    TextTable,
    cell_links,
    failed_cells,
    fusion_rows,
    grid_table,
    hotspot_sections,
    roof_notes,
    roofline_table,
    summary_table,
)


@dataclass
class Card:
    """One cell's own block: a heading, its files (label, relative path) and its table."""

    heading: str
    links: list[tuple[str, str]]
    table: TextTable


@dataclass(kw_only=True)
class Body:
    """What a section shows, in this order; each renderer draws every part its own way."""

    items: list[str] = field(default_factory=list)  # a list of lines
    pairs: list[tuple[str, str]] = field(default_factory=list)  # a key/value list
    table: TextTable | None = None
    notes: list[str] = field(default_factory=list)  # lines under the table
    cards: list[Card] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (what failed, its error text)

    def empty(self) -> bool:
        return not (self.items or self.pairs or self.table or self.notes or self.cards or self.errors)


@dataclass(frozen=True)
class Plot:  # a figure of the Plots section (report.plots draws them)
    title: str
    caption: str
    svg: str  # an <svg> element, inline in the page
    wide: bool = False  # gets the page's full width (a bar per cell needs it)
    first: bool = False  # the answer's picture: shown right under the findings, on the page's first screen


@dataclass(frozen=True)
class Section:
    title: str
    note: str  # said under the title, "" for nothing
    # None: the plots, pictures that only the HTML can hold (the Markdown names them in its last line).
    build: Callable[[Report], Body] | None
    css: str = ""  # the HTML class of its table or list
    optional: bool = False  # left out when it has nothing to show
    # On the page's first screen, side by side with the other such sections (the answer: the findings and their chart);
    # a plot section shows the first-screen plots (Plot.first) then, else the others.
    first: bool = False


# Said in results/summary.md too (report.summary), with the sweep's findings.
FINDINGS = Section("Findings", "", lambda r: Body(items=list(r.findings)), css="findings", optional=True, first=True)
# The answer first: the findings, then the speedup chart they state (both on the first screen of the page), then
# what was measured and how.
SECTIONS: list[Section] = [
    FINDINGS,
    Section("Speedup", "", None, first=True),
    Section("Experiment and environment", "", lambda r: Body(pairs=list(r.environment)), css="env"),
    Section("Cells", "", lambda r: Body(table=summary_table(r)), css="summary"),
    # A noisy cell marked ~, its reasons left to the findings' one noise line.
    Section("Variants side by side", "", lambda r: Body(table=grid_table(r.cells, reasons=False)), css="grid"),
    Section(
        "How far from the limit",
        ROOFLINE_NOTE,
        lambda r: Body(table=roofline_table(r), notes=roof_notes(r)),
        css="roofline",
    ),
    Section("Plots", "", None),
    Section(
        "Fusion view",
        "Operators dispatched per profiled step, and which operators of the baseline are gone "
        "(fused away) or new in each variant, on the same input.",
        lambda r: Body(table=fusion_rows(r)),
        css="fusion",
    ),
    Section(
        "Hotspots",
        "Top operators by self time per profiled step, for every cell. Traces open in "
        "ui.perfetto.dev or chrome://tracing.",
        lambda r: Body(cards=[Card(heading, cell_links(cell), table) for heading, cell, table in hotspot_sections(r)]),
        css="cards",
    ),
    Section("Failed cells", "", lambda r: Body(errors=failed_cells(r)), optional=True),
]


def sections(report: Report) -> list[tuple[Section, Body | None]]:
    """The sections this report shows, each with what it shows (None for the plots), empty optional ones left out."""
    out: list[tuple[Section, Body | None]] = []
    for section in SECTIONS:
        body = section.build(report) if section.build is not None else None
        if body is not None and section.optional and body.empty():
            continue
        out.append((section, body))
    return out
