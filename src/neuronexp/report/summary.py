"""`results/summary.md`, the sweep's own summary: counts, devices, the variants side by side, what failed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from neuronexp.analysis.baseline import Baseline, describe_baseline
from neuronexp.analysis.noise import NOISY_MARK, noisy
from neuronexp.analysis.ops import hotspots
from neuronexp.analysis.variants import cell_labels
from neuronexp.formatting import INTERVAL_LEGEND, fmt_word, has_intervals, md_cell
from neuronexp.report.cell_text import composite_words, output_differs, roof_sources
from neuronexp.report.findings import findings
from neuronexp.report.markdown import render_section, render_table
from neuronexp.report.sections import FINDINGS, Body
from neuronexp.report.tables import grid_table
from neuronexp.results.table_file import read_table

ROOF_CAPTION = (
    "% BW: bytes_min / median latency as a share of the device's peak bandwidth (% FLOP/s for compute-bound cells)"
)


def host_line(cells: pd.DataFrame) -> str:
    """What the host did to the measurements: malloc and allocator mode, threads, timing rounds."""

    def values(col: str) -> str:
        if col not in cells.columns:
            return "?"
        return "/".join(sorted({fmt_word(v) for v in cells[col].dropna()})) or "?"

    return (
        f"malloc {values('malloc')} (allocator {values('allocator')}), {values('threads')} thread(s), "
        f"{values('latency_rounds')} timing round(s) per cell"
    )


def speedup_caption(cells: pd.DataFrame, baseline: Baseline | None) -> str:
    """What the table's ×figures are against; never a baseline that no cell of the sweep matched."""
    name = describe_baseline(baseline)
    if name is None:
        return "(no baseline: no speedups)"
    if "baseline_run_id" not in cells or cells["baseline_run_id"].isna().all():
        return f"(baseline {name} is not in this sweep: no speedups)"
    return f"×speedup vs {name}"


def _table(sweep_dir: Path, name: str) -> pd.DataFrame:
    path = sweep_dir / "results" / f"{name}.parquet"
    # Read from the sweep directory down, no link followed (results.regular); a link there is refused, not skipped.
    return read_table(path, name, sweep_dir).to_pandas() if path.is_file() or path.is_symlink() else pd.DataFrame()


def sweep_findings(
    cells: pd.DataFrame, sweep_dir: Path, tables: tuple[pd.DataFrame, pd.DataFrame] | None = None
) -> list[str]:
    """One finding per group of comparable cells (report.findings: who wins or the tie, and why in operators), from
    the sweep's (ops, samples): `tables` as the sweep aggregated them, else read from its results/. The lines the
    terminal prints under the sweep's table and summary.md under its own, the same as the report's. Without a
    baseline, none (a cell alone is its row of the table)."""
    if "baseline_run_id" not in cells or cells["baseline_run_id"].isna().all():
        return []
    ops, samples = tables if tables is not None else (_table(sweep_dir, "ops"), _table(sweep_dir, "samples"))
    every = hotspots(ops, top=len(ops)) if not ops.empty else {}
    return findings(cells, samples, every, all_ops=every, notes=False)


def _heading(cells: pd.DataFrame, missing: list[str], sweep_dir: Path) -> list[str]:
    """The experiment, the directory and the cells by status (planned cells with no row: "not run")."""
    counts = cells["status"].value_counts().to_dict() if not cells.empty else {}
    parts = [f"{n} {s}" for s, n in sorted(counts.items())]
    if missing:  # planned but with no row: interrupted, or never started; not failed (no error to report)
        parts.append(f"{len(missing)} not run")
    experiment = ", ".join(sorted(cells["experiment"].dropna().unique())) if not cells.empty else ""
    return [
        f"# Sweep summary: {md_cell(experiment) if experiment else 'no cell finished'}",
        "",
        f"Directory: `{sweep_dir}`  ",
        f"Cells: {', '.join(parts) or 'none'}",
        "",
    ]


def _how_measured(cells: pd.DataFrame, baseline: Baseline | None) -> list[str]:
    """Devices, latency method, what the host did, what the table's figures are against, where the roofs come from."""
    devices = "; ".join(sorted({f"{b} ({d})" for b, d in zip(cells["backend"], cells["device_name"])}))
    methods = ", ".join(sorted(cells["timing_method"].dropna().unique()))
    lines = [
        f"Devices: {md_cell(devices)}  ",
        f"Latency method: {md_cell(methods)}; torch {cells['torch_version'].iloc[0]}  ",
        f"Host: {md_cell(host_line(cells))}  ",
        f"Median latency {md_cell(speedup_caption(cells, baseline))}; {md_cell(ROOF_CAPTION)}  ",
    ]
    return lines + [f"Roofs: {md_cell(source)}  " for source in roof_sources(cells)] + [""]


def _comparison(cells: pd.DataFrame, baseline: Baseline | None, found: list[str]) -> list[str]:
    """The variants side by side and the findings, as the report's sections have them, and the noisy cells."""
    lines = render_table(grid_table(cells, baseline))
    if has_intervals(cells):  # a pooled figure that holds the host's changes needs reruns: compare --also-a/-b
        lines += [f"{md_cell(INTERVAL_LEGEND)} (`neuronexp-compare --also-a/--also-b` pools reruns)", ""]
    lines += render_section(FINDINGS, Body(items=found)) if found else []
    if flagged := int(cells.apply(noisy, axis=1).sum()):
        lines += [
            f"{NOISY_MARK} noisy: {flagged} cell(s) measured with noise (their `noise` column says why): their "
            "latencies are not findings; a speedup timed paired with its baseline stands, its interval holds the "
            "drift; rerun the rest on a quiet machine.",
            "",
        ]
    return lines


def _cell_lists(cells: pd.DataFrame) -> list[str]:
    """The cells that need a word of their own, a section each where there are any: ops per step in words, outputs
    that differ, failures (every text as Markdown already)."""
    labels = cell_labels(cells)
    differs, failed = cells[cells.apply(output_differs, axis=1)], cells[cells["status"] == "error"]
    said = {
        "Ops per step": [(i, md_cell(words)) for i, c in cells.iterrows() if (words := composite_words(c))],
        "Outputs that differ from their baseline's": list(zip(differs.index, map(md_cell, differs["output_note"]))),
        "Failed cells": [
            (i, f"{md_cell(r.error)} ({md_cell(r.overrides)})") for i, r in zip(failed.index, failed.itertuples())
        ],
    }
    lines: list[str] = []
    for title, items in said.items():
        if items:
            lines += [f"## {title}", ""] + [f"- {md_cell(labels[i])}: {text}" for i, text in items] + [""]
    return lines


def summary_markdown(
    cells: pd.DataFrame, missing: list[str], baseline: Baseline | None, sweep_dir: Path, found: list[str] | None = None
) -> str:
    """results/summary.md: counts, devices, the variants side by side, the findings (`found`: sweep_findings's lines,
    made once by the sweep; else made here), and every failed or missing cell. Every value from the results goes through
    md_cell: error texts and op names are data, never markup."""
    lines = _heading(cells, missing, sweep_dir)
    if not cells.empty:
        found = sweep_findings(cells, sweep_dir) if found is None else found
        lines += _how_measured(cells, baseline) + _comparison(cells, baseline, found) + _cell_lists(cells)
    if missing:
        lines += [
            "## Cells not run",
            "",
            f"Interrupted, or never started: run the same command with `hydra.sweep.dir={sweep_dir}` to resume "
            "(finished cells are reused).",
            "",
        ]
        lines += [f"- job {md_cell(m)}" for m in missing] + [""]
    return "\n".join(lines)
