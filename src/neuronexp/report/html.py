"""report.html: one self-contained page (inline CSS, plots as inline SVG, no script, no network).

Every piece of text from the results (op names, labels, errors, paths) goes through `html.escape`;
only the markup built in this module is emitted raw.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from urllib.parse import quote

from neuronexp import __version__
from neuronexp.report.plots import Plot, report_colours
from neuronexp.report.model import Report
from neuronexp.report.tables import (
    ROOFLINE_NOTE, TextTable, cell_links, failed_cells, fusion_rows, grid_table, hotspot_sections, roof_notes,
    roofline_table, status_line, summary_table,
)

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1200px;
padding:0 16px;color:#1d1d1f;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:14px;margin:0 0 6px}.muted{color:#666}code{font:12px ui-monospace,Menlo,Consolas,monospace}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f7;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafafa}.envs{display:flex;flex-wrap:wrap;gap:0 16px;align-items:flex-start}
.env td:first-child{font-weight:600;white-space:nowrap}
.grid td{white-space:pre-line}td.op{overflow-wrap:anywhere;min-width:14em}.ops{white-space:normal;max-width:420px}
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
"""
_NUMERIC = {"median", "p10–p90", "n", "ops/step", "first call", "calls", "share", "median latency", "% of peak",
            "bytes_min", "FLOPs", "FLOP/B", "GB/s", "% peak BW", "GFLOP/s", "% peak FLOP/s", "peak memory",
            "max abs / rel err"}


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _link(label: str, path: str) -> str:
    # Relative paths from the report; quoted so spaces or '#' in a directory name still resolve.
    return f'<a href="{esc(quote(path))}">{esc(label)}</a>'


def _numeric(header: str) -> bool:
    return header in _NUMERIC or header.startswith(("speedup", "profiled", "self "))


def render_table(table: TextTable, cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in table.headers)
    body = []
    for i, row in enumerate(table.rows):
        # An op name has no space to wrap at: a long kernel name would push the table off the page.
        tds = [f'<td class="num">{esc(v)}</td>' if _numeric(h) else f'<td class="op">{esc(v)}</td>' if h == "top op"
               else f"<td>{esc(v)}</td>" for h, v in zip(table.headers, row)]
        if table.links:
            tds[-1] = "<td>" + " · ".join(_link(label, path) for label, path in table.links[i]) + "</td>"
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _hotspot_card(heading: str, cell, table: TextTable) -> str:
    rows = []
    for op, calls, time, share in table.rows:
        width = share.rstrip("%") if share.endswith("%") else "0"
        rows.append(f'<tr><td><code>{esc(op)}</code><div class="bar" style="width:{esc(min(float(width), 100.0))}%"></div></td>'
                    f'<td class="num">{esc(calls)}</td><td class="num">{esc(time)}</td><td class="num">{esc(share)}</td></tr>')
    head = "".join(f"<th>{esc(h)}</th>" for h in table.headers)
    links = " · ".join(_link(label, path) for label, path in cell_links(cell))
    return (f'<div class="card"><h3>{esc(heading)}</h3><div class="muted">{links}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def _figure(plot: Plot) -> str:
    # Matplotlib's own SVG (the figure's text escaped by its writer), inline: no image request, crisp at any zoom.
    cls = ' class="wide"' if plot.wide else ""
    return (f'<figure{cls} aria-label="{esc(plot.title)}"><h3>{esc(plot.title)}</h3>{plot.svg}'
            f"<figcaption>{esc(plot.caption)}</figcaption></figure>")


def _legend(colours: dict[str, str]) -> str:
    """The variants' colours, the same in every plot (ids nx-colour-<i>, in the plots' variant numbering)."""
    items = "".join(f'<span class="swatch" id="nx-colour-{i}" style="background:{esc(c)}"></span>{esc(v)}'
                    for i, (v, c) in enumerate(colours.items()))
    return f'<div class="legend">Variants:{items}</div>'





def render_html(report: Report, figures: list[Plot]) -> str:
    half = (len(report.environment) + 1) // 2  # two tables side by side: the page is wide, the list is long
    env = "".join('<table class="env">' + "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in part) + "</table>"
                  for part in (report.environment[:half], report.environment[half:]) if part)
    findings = "".join(f"<li>{esc(line)}</li>" for line in report.findings)
    cards = "".join(_hotspot_card(*section) for section in hotspot_sections(report))
    failed = "".join(f'<li><b>{esc(name)}</b>: <span class="error">{esc(err)}</span></li>' for name, err in failed_cells(report))
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<h1>{esc(report.title)}</h1>",
        f'<p class="muted">{esc(report.kind)} <code>{esc(report.source)}</code> · {esc(status_line(report))} · '
        f"baseline {esc(report.baseline or '—')} · generated {esc(generated)} by neuronexp {esc(__version__)}</p>",
        f'<h2>Findings</h2><ul class="findings">{findings}</ul>' if findings else "",
        f'<h2>Experiment and environment</h2><div class="envs">{env}</div>',
        "<h2>Cells</h2>", render_table(summary_table(report), "summary"),
        "<h2>Variants side by side</h2>", render_table(grid_table(report), "grid"),
        "<h2>How far from the limit</h2><p class=\"muted\">" + esc(ROOFLINE_NOTE) + "</p>",
        render_table(roofline_table(report), "roofline"),
        "<ul>" + "".join(f"<li class=\"muted\">{esc(n)}</li>" for n in roof_notes(report)) + "</ul>",
        '<h2>Plots</h2>' + _legend(report_colours(report)) + '<div class="figs">' + "".join(_figure(f) for f in figures) + "</div>"
        if figures else "",
        "<h2>Fusion view</h2><p class=\"muted\">Operators dispatched per profiled step, and which operators of the "
        "baseline are gone (fused away) or new in each variant, on the same input.</p>",
        render_table(fusion_rows(report), "fusion"),
        "<h2>Hotspots</h2><p class=\"muted\">Top operators by self time per profiled step, for every cell. "
        "Traces open in ui.perfetto.dev or chrome://tracing.</p>",
        f'<div class="cards">{cards}</div>',
        f"<h2>Failed cells</h2><ul>{failed}</ul>" if failed else "",
    ]
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{esc(report.title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(p for p in parts if p) + "\n</body></html>\n")
