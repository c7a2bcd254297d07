"""What one cell says in text, wherever a table shows it: ops per step, latency lines, the limit and output
flags. Read by the report's tables, the terminal views and results/summary.md alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from neuronexp.analysis.noise import NOISE_WARNING, NOISY_MARK, noisy
from neuronexp.analysis.roofline import headline
from neuronexp.formatting import device_word, fmt_pct, fmt_speedup_ci, fmt_us, short_op


def ops_text(cell: Mapping[str, Any]) -> str:
    """ "6→7 ops": dispatched by the module → executed (leaf ops or device kernels); one figure when they agree
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


OUTPUT_FLAG = "✗ output ≠ baseline"


def output_differs(cell: Mapping[str, Any]) -> bool:
    """The output check failed: the cell's output is beyond tolerance of its baseline's."""
    return cell.get("output_match") is False or cell.get("output_check") == "FAIL"


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


def cell_lines(cell: Mapping[str, Any] | None, reasons: bool = True) -> list[str]:
    """What one table cell says: latency, profiled time and ops per step, speedup, hotspot, and how far from
    the limit (% of peak, a failed output check); a noisy cell's latency is marked "~" and, with `reasons`, its last
    line says why it is not a finding (the report says that once, in its findings' noise line, instead)."""
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
    if limit := [p for p in (headline(cell), OUTPUT_FLAG if output_differs(cell) else None) if p]:  # "41% BW"
        lines.append(" · ".join(limit))
    if cell["status"] == "cached":
        lines.append("(cached)")
    if reasons and noisy(cell):
        lines.append(f"{NOISE_WARNING}{clip_reasons(str(cell.get('noise') or ''), 40)}")
    return lines


def roof_sources(cells: pd.DataFrame) -> list[str]:
    """Where the roofs of these cells come from, once each (the row's `peak_source`)."""
    return [str(s) for s in dict.fromkeys(cells["peak_source"].dropna())] if "peak_source" in cells else []
