"""Findings when the machine was busy: the noise said once for all cells, then what can still be concluded.

On a shared host most cells can be flagged noisy (cell.noise_columns); repeating each cell's reasons on every finding
made a wall of them, and a group's only quiet cell read like its winner. Here the reasons are grouped by kind with the
range of their figures, and the timing-free results (operators per step, output checks) are named, since the noise
cannot touch them."""

from __future__ import annotations

import re
from typing import Any

from neuronexp.analysis.noise import noisy
from neuronexp.report.cell_text import ops_text, output_differs

_FIGURE = re.compile(r"^(.*?)\s*([×]?[\d.]+%?)(?:\s*(cores))?$")


def _kind(reason: str) -> tuple[str, str, str]:
    """("other processes used", "1.20", " cores") from "other processes used 1.20 cores"; a reason without a
    figure is its own kind."""
    match = _FIGURE.match(reason.strip())
    return (match[1], match[2], f" {match[3]}" if match[3] else "") if match else (reason.strip(), "", "")


def _size(figure: str) -> float:
    return float(figure.strip("×%")) * (100 if figure.startswith("×") else 1)  # ×2 is 100% more


def noise_line(cells: list[dict[str, Any]]) -> str | None:
    """One line for every noisy cell: how many, and each kind of reason with its range and count."""
    flagged = [c for c in cells if noisy(c)]
    if not flagged:
        return None
    kinds: dict[tuple[str, str], list[str]] = {}
    for cell in flagged:
        for reason in str(cell.get("noise") or "noisy").split("; "):
            kind, figure, unit = _kind(reason)
            kinds.setdefault((kind, unit), []).append(figure)
    parts = []
    for (kind, unit), figures in kinds.items():
        shown = sorted({f for f in figures if f}, key=_size)
        span = (shown[0] if len(shown) == 1 else f"{shown[0]}–{shown[-1]}") + unit if shown else ""
        parts.append(f"{kind} {span}".strip() + f" in {len(figures)}")
    held = sum(bool(c.get("_paired")) for c in flagged)  # report.findings: timed together with their group
    if not held:
        return (
            f"noisy, not findings: {len(flagged)} of {len(cells)} cells ({'; '.join(parts)}): their latencies and "
            "speedups are left out of the comparisons below; rerun them on a quiet machine"
        )
    return (
        f"noisy: {len(flagged)} of {len(cells)} cells ({'; '.join(parts)}): their latencies are not findings; "
        f"{held} of them were timed paired with their group, so their speedups and ranking below stand (the drift "
        "fell on every variant alike, and their intervals hold what was left)"
        + ("" if held == len(flagged) else "; the others are left out: rerun them on a quiet machine")
    )


def concluded_line(cells: list[dict[str, Any]]) -> str | None:
    """What holds whatever the noise: operators per step and the output check, which no timing enters."""
    if not any(noisy(c) for c in cells):
        return None
    ops: dict[str, str] = {}
    for c in cells:
        if c.get("device_ops") == c.get("device_ops") and c.get("device_ops") is not None:
            ops.setdefault(c["_variant"], ops_text(c))
    checked = [c for c in cells if c.get("output_check") in ("pass", "FAIL")]
    bad = [c["_variant"] + " · " + c["_input"] for c in checked if output_differs(c)]
    parts = []
    if ops:
        parts.append("operators per step " + ", ".join(f"{v} {t}" for v, t in ops.items()))
    if checked:
        parts.append(
            f"output check {len(checked) - len(bad)} of {len(checked)} pass" + (f" (✗ {', '.join(bad)})" if bad else "")
        )
    if not parts:
        return None
    return "what the noise does not touch: " + "; ".join(parts) + " (the fusion view and the hotspots' shares too)"


def only_quiet_line(best: dict[str, Any], group: list[dict[str, Any]], latency: str) -> str:
    """A group whose one quiet cell has nothing quiet to be compared with: never worded as its winner."""
    faster = [c["_variant"] for c in group if c is not best and c["latency_median_us"] < best["latency_median_us"]]
    line = f"{best['_input']}: only {best['_variant']} was measured quietly ({latency}), so no comparison"
    if faster:
        line += f"; the noisy medians of {', '.join(faster)} were lower: it is not known to be the fastest"
    return line
