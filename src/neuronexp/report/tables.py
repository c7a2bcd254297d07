"""The report's tables as headers and rows of plain text, shared by the HTML and Markdown renderers.

Text only: each renderer escapes it for its own format, so nothing here is trusted markup."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from neuronexp.analysis.baseline import Baseline
from neuronexp.analysis.noise import NOISY_MARK, noisy
from neuronexp.analysis.roofline import fmt_share, headline
from neuronexp.analysis.variants import comparison_grid
from neuronexp.formatting import device_word, fmt_bytes, fmt_flops, fmt_pct, fmt_speedup_ci, fmt_us, short_op
from neuronexp.report.cell_text import cell_lines, composite_words, ops_text, roof_sources
from neuronexp.report.model import Report


@dataclass
class TextTable:
    headers: list[str]
    rows: list[list[str]]
    # Per row: (label, relative path) links to put in the last column, in order.
    links: list[list[tuple[str, str]]] = field(default_factory=list)
    labels: int = 0  # how many leading columns name the row (the terminal never wraps them)


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
    headers = [
        "variant",
        "input",
        "status",
        "median",
        "p10–p90",
        "n",
        *speedup,
        "profiled time/step",
        "ops/step",
        "top op",
        "% of peak",
        "output",
        "first call",
        "files",
    ]
    rows, links = [], []
    for _, c in cells.sort_values(["numel", "input_shape"], kind="stable").iterrows():
        # A failed cell has no figures (nor a speedup: analysis.variants gives it none): a dash in every column.
        figures = _figures(c, bool(speedup)) if c["status"] != "error" else ["—"] * (len(headers) - 4)
        rows.append([str(c["variant"]), str(c["input"]), str(c["status"]), *figures, ""])
        links.append(cell_links(c))
    return TextTable(headers, rows, links)


def _figures(c: pd.Series, speedup: bool) -> list[str]:
    """A cell's figures in summary_table's columns, from the median to the first call."""
    top = f"{short_op(str(c['top_op']), 40)} {fmt_pct(c['top_op_share'])}" if isinstance(c["top_op"], str) else "—"
    return [
        (NOISY_MARK if noisy(c) else "") + fmt_us(c["latency_median_us"]),
        f"{fmt_us(c['latency_p10_us'])} – {fmt_us(c['latency_p90_us'])}",
        str(int(c["latency_samples"])) if pd.notna(c["latency_samples"]) else "—",
        *([fmt_speedup_ci(c) or "—"] if speedup else []),
        f"{device_word(c)} {fmt_us(c['device_time_us'])}",
        ops_text(c) if pd.notna(c["device_ops"]) else "—",
        top,
        headline(c) or "—",
        output_word(c),
        f"{c['first_call_s']:.3g} s" if pd.notna(c["first_call_s"]) else "—",
    ]


def output_word(cell: pd.Series) -> str:
    """The output check in a word or two: "pass", "FAIL ×1.5e-1" (its max relative error), "baseline", ..."""
    check = cell.get("output_check")
    if not isinstance(check, str):
        return "—"
    if check == "FAIL" and pd.notna(cell.get("max_rel_err")):
        return f"FAIL (rel {cell['max_rel_err']:.2g})"
    return check


def _fmt(value: Any, spec: str, scale: float = 1.0) -> str:
    return "—" if value is None or pd.isna(value) else format(float(value) * scale, spec)


ROOFLINE_NOTE = (
    "bytes_min: inputs, weights read once and outputs written once; FLOPs: FlopCounterMode (matmul, "
    "convolution, attention; other operators count 0); GB/s and GFLOP/s over the median latency; % of "
    "the roofs below; output: checked against the baseline cell's output on the same inputs "
    "(docs/methodology.md)."
)


def roofline_table(report: Report) -> TextTable:
    """Per cell: the work, what it achieved, its roofs and share of them, the bound, peak memory, the check."""
    headers = [
        "variant",
        "input",
        "bytes_min",
        "FLOPs",
        "FLOP/B",
        "GB/s",
        "% peak BW",
        "GFLOP/s",
        "% peak FLOP/s",
        "bound",
        "peak memory",
        "output",
        "max abs / rel err",
    ]
    rows: list[list[str]] = []
    cells = report.cells
    if "bytes_min" not in cells:
        return TextTable(headers, rows)
    for _, c in cells[cells["status"] != "error"].sort_values(["numel", "input_shape"], kind="stable").iterrows():
        errors = "—" if pd.isna(c.get("max_abs_err")) else f"{c['max_abs_err']:.2g} / {c['max_rel_err']:.2g}"
        rows.append(
            [
                str(c["variant"]),
                str(c["input"]),
                fmt_bytes(c["bytes_min"]),
                fmt_flops(c["flops"]),
                _fmt(c["intensity"], ".3g"),
                _fmt(c["achieved_gbs"], ".3g"),
                "—" if pd.isna(c["pct_peak_bw"]) else fmt_share(c["pct_peak_bw"]),
                _fmt(c["achieved_tflops"], ".3g", 1e3),
                "—" if pd.isna(c["pct_peak_flops"]) else fmt_share(c["pct_peak_flops"]),
                str(c["bound"]) if isinstance(c["bound"], str) else "—",
                fmt_bytes(c["peak_memory_bytes"]),
                output_word(c),
                errors,
            ]
        )
    return TextTable(headers, rows)


def roof_notes(report: Report) -> list[str]:
    """Where the roofs come from, how peak memory was measured and how outputs were checked, once each."""
    cells = report.cells
    notes = [f"roofs: {s}" for s in roof_sources(cells)]
    for col, label in (("peak_memory_method", "peak memory"), ("flops_note", "FLOPs")):
        if col in cells:
            notes += [f"{label}: {v}" for v in dict.fromkeys(cells[col].dropna().astype(str))]
    return notes


def grid_table(cells: pd.DataFrame, baseline: Baseline | None = None, reasons: bool = True) -> TextTable:
    """Per input, the variants side by side, lines joined by newlines: the report's section, the sweep's table in the
    terminal and in summary.md (`baseline` finds the reference variants where the cells do not say them). `reasons`:
    a noisy cell's reasons in it (not in the report, whose findings say them once for every cell)."""
    axes, variants, grid = comparison_grid(cells, baseline)
    rows = [
        [*map(str, key), *("\n".join(cell_lines(by.get(v), reasons)) for v in variants)] for key, by in grid.items()
    ]
    return TextTable([*axes, *variants], rows, labels=len(axes))


def fusion_rows(report: Report) -> TextTable:
    headers = [
        "input",
        "variant",
        "ops/step (dispatched→executed)",
        "profiled time/step",
        "median latency",
        f"ops gone vs {report.baseline or 'baseline'}",
        "ops new",
    ]
    rows = []
    for r in report.fusion.itertuples():
        gone = ", ".join(short_op(o, 40) for o in r.removed) or (
            "(baseline)" if r.is_baseline else "none" if r.compared else "—"
        )
        new = ", ".join(short_op(o, 40) for o in r.added) or ("none" if r.compared else "" if r.is_baseline else "—")
        counts = {"device_ops": r.device_ops, "ops_dispatched": r.ops_dispatched}
        ops = ops_text(counts) if pd.notna(r.device_ops) else "—"
        words = composite_words(counts) if pd.notna(r.device_ops) else None
        ops += f" ({words})" if words else ""
        rows.append([r.input, r.variant, ops, fmt_us(r.device_time_us), fmt_us(r.latency_median_us), gone, new])
    return TextTable(headers, rows)


def hotspot_sections(report: Report) -> list[tuple[str, pd.Series, TextTable]]:
    """(heading, cell, table) for every cell that has an op table, in sweep order."""
    out = []
    for _, c in report.cells.sort_values(["numel", "input_shape"], kind="stable").iterrows():
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
        line += (
            f"; {len(report.missing)} planned cell(s) not run, interrupted or never started (job "
            f"{', '.join(report.missing)}): rerun the sweep into this directory to complete it"
        )
    return line
