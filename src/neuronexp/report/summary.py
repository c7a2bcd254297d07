"""The sweep's comparison in text: what each table cell says, and `results/summary.md`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from neuronexp.analysis.noise import NOISE_WARNING, NOISY_MARK, noisy
from neuronexp.analysis.roofline import headline
from neuronexp.analysis.variants import cell_labels, comparison_grid, describe_baseline
from neuronexp.formatting import device_word, fmt_pct, fmt_speedup_ci, fmt_us, fmt_word, md_cell, short_op


def ops_text(cell: Mapping[str, Any]) -> str:
    """"6→7 ops": dispatched by the module → executed (leaf ops or device kernels); one figure when they agree
    or when the results predate the split."""
    executed, dispatched = cell["device_ops"], cell.get("ops_dispatched")
    if dispatched is None or dispatched != dispatched or dispatched == executed:
        return f"{executed:g} ops"
    return f"{dispatched:g}→{executed:g} ops"


def composite_words(cell: Mapping[str, Any]) -> str | None:
    """In words, where there is room: one op dispatched that ran as several is a composite on this backend
    (`aten::rms_norm` on a CPU), not one fused kernel; None otherwise."""
    executed, dispatched = cell.get("device_ops"), cell.get("ops_dispatched")
    if dispatched != 1 or not isinstance(executed, (int, float)) or not executed > 1:
        return None
    return f"dispatched 1 op, executed {executed:g}: not one fused kernel here"


def clip_reasons(noise: str, width: int) -> str:
    """The noise reasons that fit in `width`, whole ("; "-separated), and how many more: never cut mid-word."""
    reasons = [r for r in noise.split("; ") if r]
    shown: list[str] = []
    for i, reason in enumerate(reasons):
        more = len(reasons) - i - 1
        tail = f"; +{more} more" if more else ""
        if shown and len("; ".join([*shown, reason]) + tail) > width:
            break
        shown.append(reason)
    rest = len(reasons) - len(shown)
    return "; ".join(shown) + (f"; +{rest} more" if rest else "")


OUTPUT_FLAG = "✗ output ≠ baseline"


def output_differs(cell: Mapping[str, Any]) -> bool:
    """The output check failed: the cell's output is beyond tolerance of its baseline's."""
    return cell.get("output_match") is False or cell.get("output_check") == "FAIL"


def limit_line(cell: Mapping[str, Any]) -> str | None:
    """How far from the limit, in a few characters: "41% BW" (or "% FLOP/s" when compute-bound), and the
    output check's flag when it failed."""
    parts = [p for p in (headline(cell), OUTPUT_FLAG if output_differs(cell) else None) if p]
    return " · ".join(parts) or None


def cell_lines(cell: Mapping[str, Any] | None) -> list[str]:
    """What one table cell says: latency, profiled time and ops per step, speedup, hotspot, and how far from
    the limit (% of peak, a failed output check); a noisy cell's latency is marked "~" and its last line says
    why it is not a finding."""
    if cell is None:
        return ["—"]
    if cell["status"] == "error":
        return ["error", str(cell["error"])[:60]]
    device = device_word(cell)
    first = (NOISY_MARK if noisy(cell) else "") + fmt_us(cell["latency_median_us"])
    if fmt_speedup_ci(cell):
        first += " " + fmt_speedup_ci(cell)
    lines = [first, f"{device} {fmt_us(cell['device_time_us'])} · {ops_text(cell)}"]
    if isinstance(cell["top_op"], str):
        lines.append(f"{short_op(cell['top_op'], 24)} {fmt_pct(cell['top_op_share'])}")
    limit = limit_line(cell)
    if limit:
        lines.append(limit)
    if cell["status"] == "cached":
        lines.append("(cached)")
    if noisy(cell):
        lines.append(f"{NOISE_WARNING}{clip_reasons(str(cell.get('noise') or ''), 40)}")
    return lines


ROOF_CAPTION = ("% BW: bytes_min / median latency as a share of the device's peak bandwidth (% FLOP/s for "
                "compute-bound cells)")


def roof_sources(cells: pd.DataFrame) -> list[str]:
    """Where the roofs of these cells come from, once each (the row's `peak_source`)."""
    if "peak_source" not in cells:
        return []
    return [str(s) for s in dict.fromkeys(cells["peak_source"].dropna())]


def host_line(cells: pd.DataFrame) -> str:
    """What the host did to the measurements: malloc and allocator mode, threads, timing rounds."""
    def values(col: str) -> str:
        if col not in cells.columns:
            return "?"
        return "/".join(sorted({fmt_word(v) for v in cells[col].dropna()})) or "?"

    return (f"malloc {values('malloc')} (allocator {values('allocator')}), {values('threads')} thread(s), "
            f"{values('latency_rounds')} timing round(s) per cell")


def speedup_caption(cells: pd.DataFrame, baseline: Any) -> str:
    """What the table's ×figures are against; never a baseline that no cell of the sweep matched."""
    name = describe_baseline(baseline)
    if name is None:
        return "(no baseline: no speedups)"
    if "baseline_run_id" not in cells or cells["baseline_run_id"].isna().all():
        return f"(baseline {name} is not in this sweep: no speedups)"
    return f"×speedup vs {name}"


def summary_markdown(cells: pd.DataFrame, missing: list[str], baseline: Any, sweep_dir: Path) -> str:
    """results/summary.md: counts, devices, the variants side by side, and every failed or missing cell.

    Every value from the results goes through md_cell: error texts and op names are data, never markup.
    """
    counts = cells["status"].value_counts().to_dict() if not cells.empty else {}
    parts = [f"{n} {s}" for s, n in sorted(counts.items())]
    if missing:  # planned but with no row: interrupted, or never started; not failed (no error to report)
        parts.append(f"{len(missing)} not run")
    experiment = ", ".join(sorted(cells["experiment"].dropna().unique())) if not cells.empty else ""
    lines = [f"# Sweep summary: {md_cell(experiment) if experiment else 'no cell finished'}", "",
             f"Directory: `{sweep_dir}`  ", f"Cells: {', '.join(parts) or 'none'}", ""]
    if not cells.empty:
        devices = "; ".join(sorted({f"{b} ({d})" for b, d in zip(cells["backend"], cells["device_name"])}))
        methods = ", ".join(sorted(cells["timing_method"].dropna().unique()))
        lines += [f"Devices: {md_cell(devices)}  ", f"Latency method: {md_cell(methods)}; torch {cells['torch_version'].iloc[0]}  ",
                  f"Host: {md_cell(host_line(cells))}  ",
                  f"Median latency {md_cell(speedup_caption(cells, baseline))}; {md_cell(ROOF_CAPTION)}  "]
        lines += [f"Roofs: {md_cell(source)}  " for source in roof_sources(cells)] + [""]
        axes, variants, grid = comparison_grid(cells, baseline)
        lines.append("| " + " | ".join(md_cell(h) for h in axes + variants) + " |")
        lines.append("|" + "---|" * (len(axes) + len(variants)))
        for key, by_variant in grid.items():
            row = [md_cell(k) for k in key] + ["<br>".join(md_cell(x) for x in cell_lines(by_variant.get(v))) for v in variants]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        flagged = int(cells.apply(noisy, axis=1).sum())
        if flagged:
            lines += [f"{NOISY_MARK} noisy: {flagged} cell(s) measured with noise (their `noise` column says why): "
                      "not findings; rerun them on a quiet machine.", ""]
    composite = [(i, composite_words(c)) for i, c in cells.iterrows()] if not cells.empty else []
    composite = [(i, words) for i, words in composite if words]
    if composite:
        labels = cell_labels(cells)
        lines += ["## Ops per step", ""] + [f"- {md_cell(labels[i])}: {md_cell(words)}" for i, words in composite] + [""]
    differs = cells[cells.apply(output_differs, axis=1)] if not cells.empty else cells
    if len(differs):
        labels = cell_labels(cells)
        lines += ["## Outputs that differ from their baseline's", ""]
        lines += [f"- {md_cell(labels[i])}: {md_cell(note)}" for i, note in zip(differs.index, differs["output_note"])] + [""]
    failed = cells[cells["status"] == "error"] if not cells.empty else cells
    if len(failed):
        lines += ["## Failed cells", ""]
        labels = cell_labels(cells)
        lines += [f"- {md_cell(labels[i])}: {md_cell(r.error)} ({md_cell(r.overrides)})" for i, r in zip(failed.index, failed.itertuples())]
        lines.append("")
    if missing:
        lines += ["## Cells not run", "",
                  f"Interrupted, or never started: run the same command with `hydra.sweep.dir={sweep_dir}` to resume "
                  "(finished cells are reused).", ""]
        lines += [f"- job {md_cell(m)}" for m in missing] + [""]
    return "\n".join(lines)
