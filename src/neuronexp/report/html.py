"""report.html: one self-contained page (inline CSS, plots as inline SVG, no script, no network).

Every piece of text from the results (op names, labels, errors, paths) goes through `html.escape`; only the markup built
in this module is emitted raw."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from urllib.parse import quote

from neuronexp import __version__
from neuronexp.report.model import Report
from neuronexp.report.plots import report_colours
from neuronexp.report.sections import Body, Card, Plot, Section, sections
from neuronexp.report.tables import TextTable, status_line

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1440px;
padding:0 16px;color:#1d1d1f;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:14px;margin:0 0 6px}.muted{color:#666}code{font:12px ui-monospace,Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f7;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafafa}.envs{display:flex;flex-wrap:wrap;gap:0 16px;align-items:flex-start}
.env td:first-child{font-weight:600;white-space:nowrap}
.grid td{white-space:pre-line}td.op{overflow-wrap:anywhere;min-width:12em}.ops{white-space:normal;max-width:420px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:12px}
.card{border:1px solid #ddd;border-radius:6px;padding:10px;min-width:0}
.card table{width:100%;table-layout:fixed;font-size:12px}.card th,.card td{padding:3px 5px}
.card th:nth-child(1){width:46%}.card th:nth-child(2){width:13%}.card th:nth-child(4){width:16%}
.card code{overflow-wrap:anywhere}
.bar{background:#4c78a8;height:8px;border-radius:2px}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:12px;align-items:start}
figure{margin:0}figure.wide{grid-column:1/-1}figure svg{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#666;font-size:12px}
.legend{margin:4px 0 10px}
.legend span.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;
margin:0 4px 0 12px}
.findings li{margin:2px 0}.error{color:#b00020}
.scroll{overflow-x:auto;max-width:100%;margin:6px 0 12px}.scroll table{margin:0}
.summary th,.summary td{padding:4px 6px}
"""
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


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _link(label: str, path: str) -> str:
    # Relative paths from the report; quoted so spaces or '#' in a directory name still resolve.
    return f'<a href="{esc(quote(path))}">{esc(label)}</a>'


def _cell_class(header: str) -> str:
    if header in _NUMERIC or header.startswith(("speedup", "profiled", "self ")):
        return ' class="num"'
    # An op name has no space to wrap at: a long kernel name would push the table off the page.
    return ' class="op"' if header == "top op" else ""


def render_table(table: TextTable, cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in table.headers)
    body = []
    for i, row in enumerate(table.rows):
        tds = [f"<td{_cell_class(h)}>{esc(v)}</td>" for h, v in zip(table.headers, row)]
        if table.links:
            tds[-1] = "<td>" + " · ".join(_link(label, path) for label, path in table.links[i]) + "</td>"
        body.append("<tr>" + "".join(tds) + "</tr>")
    # In a box that scrolls sideways: a table wider than the page (the cells' fourteen columns at 1400 px) stays
    # within it, rather than pushing the page wider than the window.
    return (
        f'<div class="scroll"><table class="{esc(cls)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _card(card: Card) -> str:
    rows = []
    for op, calls, time, share in card.table.rows:
        width = share.rstrip("%") if share.endswith("%") else "0"
        rows.append(
            f'<tr><td><code>{esc(op)}</code><div class="bar" style="width:{esc(min(float(width), 100.0))}%"></div></td>'
            f'<td class="num">{esc(calls)}</td><td class="num">{esc(time)}</td><td class="num">{esc(share)}</td></tr>'
        )
    head = "".join(f"<th>{esc(h)}</th>" for h in card.table.headers)
    links = " · ".join(_link(label, path) for label, path in card.links)
    return (
        f'<div class="card"><h3>{esc(card.heading)}</h3><div class="muted">{links}</div>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _figure(plot: Plot) -> str:
    # Matplotlib's own SVG (the figure's text escaped by its writer), inline: no image request, crisp at any zoom.
    cls = ' class="wide"' if plot.wide else ""
    return (
        f'<figure{cls} aria-label="{esc(plot.title)}"><h3>{esc(plot.title)}</h3>{plot.svg}'
        f"<figcaption>{esc(plot.caption)}</figcaption></figure>"
    )


def _legend(colours: dict[str, str]) -> str:
    """The variants' colours, the same in every plot (ids nx-colour-<i>, in the plots' variant numbering)."""
    items = "".join(
        f'<span class="swatch" id="nx-colour-{i}" style="background:{esc(c)}"></span>{esc(v)}'
        for i, (v, c) in enumerate(colours.items())
    )
    return f'<div class="legend">Variants:{items}</div>'


def _pairs(pairs: list[tuple[str, str]]) -> str:
    half = (len(pairs) + 1) // 2  # two tables side by side: the page is wide, the list is long
    tables = [
        '<table class="env">' + "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in part) + "</table>"
        for part in (pairs[:half], pairs[half:])
        if part
    ]
    return '<div class="envs">' + "".join(tables) + "</div>"


def _list(items: list[str], css: str = "") -> str:
    """`items` (<li> elements) as a list, of HTML class `css`; nothing without items."""
    return (f'<ul class="{esc(css)}">' if css else "<ul>") + "".join(items) + "</ul>" if items else ""


def _body(section: Section, body: Body) -> str:
    parts = [
        _list([f"<li>{esc(item)}</li>" for item in body.items], section.css),
        _pairs(body.pairs) if body.pairs else "",
        render_table(body.table, section.css) if body.table is not None else "",
        _list([f'<li class="muted">{esc(n)}</li>' for n in body.notes]),
        f'<div class="{esc(section.css)}">' + "".join(_card(c) for c in body.cards) + "</div>" if body.cards else "",
        _list([f'<li><b>{esc(name)}</b>: <span class="error">{esc(err)}</span></li>' for name, err in body.errors]),
    ]
    return "".join(parts)


def _plots(report: Report, figures: list[Plot]) -> str:
    return _legend(report_colours(report)) + '<div class="figs">' + "".join(_figure(f) for f in figures) + "</div>"


def render_html(report: Report, figures: list[Plot]) -> str:
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<h1>{esc(report.title)}</h1>",
        f'<p class="muted">{esc(report.kind)} <code>{esc(report.source)}</code> · {esc(status_line(report))} · '
        f"baseline {esc(report.baseline or '—')} · generated {esc(generated)} by neuronexp {esc(__version__)}</p>",
    ]
    for section, body in sections(report):
        if body is None and not figures:
            continue
        note = f'<p class="muted">{esc(section.note)}</p>' if section.note else ""
        parts.append(
            f"<h2>{esc(section.title)}</h2>{note}"
            + (_body(section, body) if body is not None else _plots(report, figures))
        )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(report.title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(parts)
        + "\n</body></html>\n"
    )
