"""The report's tables as headers and rows of plain text, shared by the HTML and Markdown renderers.

Text only: each renderer escapes it for its own format, so nothing here is trusted markup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from neuronexp.formatting import device_word, fmt_pct, fmt_us, short_op
from neuronexp.report.model import Report
from neuronexp.analysis.variants import comparison_grid
from neuronexp.report.summary import cell_lines


@dataclass
class TextTable:
    headers: list[str]
    rows: list[list[str]]
    # Per row: (label, relative path) links to put in the last column, in order.
    links: list[list[tuple[str, str]]] = field(default_factory=list)


def fmt_speedup(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(float(value)) else f"×{float(value):.2f}"


def cell_links(cell: pd.Series) -> list[tuple[str, str]]:
    out = []
    if isinstance(cell.get("trace_link"), str):
        out.append(("trace", cell["trace_link"]))
    if isinstance(cell.get("profile_link"), str):
        out.append(("Neuron profile", cell["profile_link"]))
    return out


def summary_table(report: Report) -> TextTable:
    """One row per cell, in sweep order: latency with spread, speedup, profiled time, ops, hotspot."""
    cells = report.cells
    speedup = [f"speedup vs {report.baseline}"] if report.baseline else []  # no baseline, no column
    headers = ["variant", "input", "status", "median", "p10–p90", "n", *speedup,
               "profiled time/step", "ops/step", "top op", "first call", "files"]
    rows, links = [], []
    for _, c in cells.sort_values(["numel", "shape"], kind="stable").iterrows():
        ok = c["status"] != "error"
        top = f"{short_op(str(c['top_op']), 40)} {fmt_pct(c['top_op_share'])}" if ok and isinstance(c["top_op"], str) else "—"
        rows.append([
            str(c["variant"]), str(c["input"]), str(c["status"]),
            fmt_us(c["latency_median_us"]) if ok else "—",
            f"{fmt_us(c['latency_p10_us'])} – {fmt_us(c['latency_p90_us'])}" if ok else "—",
            str(int(c["latency_samples"])) if ok and pd.notna(c["latency_samples"]) else "—",
            *([fmt_speedup(c["speedup_vs_baseline"])] if speedup else []),
            f"{device_word(c)} {fmt_us(c['device_time_us'])}" if ok else "—",
            f"{c['device_ops']:g}" if ok and pd.notna(c["device_ops"]) else "—",
            top,
            f"{c['first_call_s']:.3g} s" if ok and pd.notna(c["first_call_s"]) else "—",
            "",
        ])
        links.append(cell_links(c))
    return TextTable(headers, rows, links)


def grid_table(report: Report) -> TextTable:
    """Per input, the variants side by side (the sweep's own summary layout), lines joined by newlines."""
    axes, variants, grid = comparison_grid(report.cells)
    rows = [[*map(str, key), *("\n".join(cell_lines(by.get(v))) for v in variants)] for key, by in grid.items()]
    return TextTable([*axes, *variants], rows)


def fusion_rows(report: Report) -> TextTable:
    headers = ["input", "variant", "ops/step", "profiled time/step", "median latency",
               f"ops gone vs {report.baseline or 'baseline'}", "ops new"]
    rows = []
    for r in report.fusion.itertuples():
        gone = ", ".join(short_op(o, 40) for o in r.removed) or ("(baseline)" if r.is_baseline else "none" if r.compared else "—")
        new = ", ".join(short_op(o, 40) for o in r.added) or ("none" if r.compared else "" if r.is_baseline else "—")
        rows.append([r.input, r.variant, f"{r.device_ops:g}" if pd.notna(r.device_ops) else "—",
                     fmt_us(r.device_time_us), fmt_us(r.latency_median_us), gone, new])
    return TextTable(headers, rows)


def hotspot_sections(report: Report) -> list[tuple[str, pd.Series, TextTable]]:
    """(heading, cell, table) for every cell that has an op table, in sweep order."""
    out = []
    for _, c in report.cells.sort_values(["numel", "shape"], kind="stable").iterrows():
        spots = report.hotspots.get(str(c["run_id"]))
        if spots is None or spots.empty:
            continue
        word = device_word(c)
        rows = [[str(r.op), f"{r.calls:g}", fmt_us(r.self_device_us), fmt_pct(r.share)] for r in spots.itertuples()]
        heading = f"{c['variant']} · {c['input']}"
        out.append((heading, c, TextTable(["op", "calls", f"self {word}/step", "share"], rows)))
    return out


def failed_cells(report: Report) -> list[tuple[str, str]]:
    failed = report.cells[report.cells["status"] == "error"]
    return [(f"{r.variant} · {r.input}", str(r.error)) for r in failed.itertuples()]


def status_line(report: Report) -> str:
    counts = report.cells["status"].value_counts()
    line = f"{len(report.cells)} cell(s): " + ", ".join(f"{n} {s}" for s, n in counts.items())
    if report.missing:  # planned (jobs.json) but never finished: a killed or interrupted sweep
        line += (f"; {len(report.missing)} planned cell(s) never finished (job {', '.join(report.missing)}): "
                 "rerun the sweep into this directory to complete it")
    return line
