"""report.html: one self-contained page (inline CSS, plots as inline SVG, no script, no network), rendered from
report/templates/report.html.j2 by jinja2 with autoescape on: every value from the results (op names, labels, errors,
paths) is text unless it is Markup, and the only Markup is the template's own and matplotlib's SVG."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from neuronexp.report.model import Report
from neuronexp.report.plots import report_colours
from neuronexp.report.sections import Plot, sections
from neuronexp.report.tables import status_line
from neuronexp.version import __version__

_NUMERIC = {
    "median",
    "p10–p90",
    "n",
    "ops/step",
    "first call",
    "calls",
    "share",
    "median latency",
    "% of peak",
    "bytes_min",
    "FLOPs",
    "FLOP/B",
    "GB/s",
    "% peak BW",
    "GFLOP/s",
    "% peak FLOP/s",
    "peak memory",
    "max abs / rel err",
}


def _cell_class(header: str) -> Markup:
    if header in _NUMERIC or header.startswith(("speedup", "profiled", "self ")):
        return Markup(' class="num"')
    # An op name has no space to wrap at: a long kernel name would push the table off the page.
    return Markup(' class="op"' if header == "top op" else "")


def _bar_width(share: str) -> float:
    """A hotspot's bar, as a share of the card's width: its "12.5%", at most 100."""
    return min(float(share.rstrip("%")), 100.0) if share.endswith("%") else 0.0


def _halves(pairs: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    half = (len(pairs) + 1) // 2  # two tables side by side: the page is wide, the list is long
    return [part for part in (pairs[:half], pairs[half:]) if part]


def _text(value: Any) -> Any:
    """Every `{{ value }}` of the template: Markup as it is, anything else escaped as `html.escape` spells it (`&quot;`,
    `&#x27;`, where markupsafe writes `&#34;`, `&#39;`), so the page did not change by a byte when jinja2 came in.
    Autoescape stays on beneath it: a value is never emitted raw unless it is Markup."""
    return value if isinstance(value, Markup) else Markup(html.escape(str(value), quote=True))


_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("neuronexp.report", "templates"),
    autoescape=True,
    finalize=_text,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
# Links are relative paths from the report, quoted so spaces or '#' in a directory name still resolve.
_TEMPLATES.filters["urlquote"] = quote
_TEMPLATES.globals.update(zip=zip, cell_class=_cell_class, bar_width=_bar_width, halves=_halves)


def render_html(report: Report, figures: list[Plot]) -> str:
    shown = [
        (section, body, [f for f in figures if f.first == section.first] if body is None else [])
        for section, body in sections(report)
    ]
    return _TEMPLATES.get_template("report.html.j2").render(
        title=report.title,
        kind=report.kind,
        source=report.shown_source,
        status=status_line(report),
        baseline=report.baseline,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        shown=[(section, body, figs) for section, body, figs in shown if body is not None or figs],
        colours=report_colours(report),
    )


def render_results(head: str, headers: list[str], rows: list[list[str]], sentences: list[str]) -> str:
    """neuronexp.Results in a notebook (its _repr_html_): `head`, the findings table, the sentences; escaped as the
    report is."""
    page = _TEMPLATES.get_template("results.html.j2")
    return page.render(head=head, headers=headers, rows=rows, sentences=sentences)
