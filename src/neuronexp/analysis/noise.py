"""The `noisy` flag as every view reads it, and the one rule that sets it.

The sweep table, summary.md, the report, the findings and compare share this definition, so a cell is never a finding in
one view and noisy in another. The cell judges itself when it runs (cell.noise_columns); a sweep judges its cells again
when it gathers them, with its own `noise.*` thresholds, so a threshold changed on a rerun applies to reused cells too
(docs/timing.md, "Noise")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol, TypeGuard

# Before a noisy cell's latency wherever it is shown ("~1.31 ms"), and before its name in compare's table.
NOISY_MARK = "~"
# The row warning that repeats the `noise` column starts with this (a view showing `noise` leaves it out).
NOISE_WARNING = "noisy: "
# Profiled time per step over the wall-clock median beyond which the profile is not a picture of the run: the
# profiler distorts the cell, or the host disturbed the profiled step (its op times are no cause of anything).
DISTORTED_PROFILE = 1.5


class Thresholds(Protocol):
    """Beyond these a cell is noisy: the `noise.*` keys (config.schema.NoiseConfig: defaults and why)."""

    round_spread: float
    p90_p10: float
    other_cpu: float
    steal: float


def noisy(cell: Mapping[str, Any]) -> bool:
    """The row's `noisy` flag (False for results written before it existed, or read back as NaN)."""
    value = cell.get("noisy")
    return bool(value) if value is not None and value == value else False


def _finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _cores(units: Any) -> int | None:
    """How many CPUs "0-1,3" names (the row's placement_cpus); None when it cannot be read."""
    if not isinstance(units, str) or not units:
        return None
    count = 0
    for part in units.split(","):
        low, _, high = part.partition("-")
        if not low.strip().isdigit() or (high and not high.strip().isdigit()):
            return None
        count += int(high) - int(low) + 1 if high else 1
    return count


def judge(figures: Mapping[str, Any], limits: Thresholds) -> tuple[list[str], str | None]:
    """(why the cell is noisy, empty when it is not; what would help) from its noise figures. Other processes count
    against the cores the cell's threads need: `other_cpu` is measured over the cell's own CPUs, so a one-thread cell on
    two of them has a core to spare before another process takes one of its own."""
    reasons = []
    spread, rounds = figures.get("round_spread"), figures.get("latency_rounds")
    if _finite(spread) and _finite(rounds) and rounds > 1 and spread > limits.round_spread:
        reasons.append(f"rounds spread {fmt_spread(spread)}")
    ratio = figures.get("p90_p10")
    if _finite(ratio) and ratio > limits.p90_p10:
        reasons.append(f"p90/p10 {ratio:.1f}")
    other, threads, cores = figures.get("other_cpu"), figures.get("threads"), _cores(figures.get("placement_cpus"))
    spare = max(0, cores - int(threads)) if cores is not None and _finite(threads) else 0
    busy = _finite(other) and other > spare + limits.other_cpu
    if busy:
        reasons.append(f"other processes used {other:.2f} cores" + (f" ({spare} spare)" if spare else ""))
    steal = figures.get("cpu_steal")
    if _finite(steal) and steal > limits.steal:
        reasons.append(f"CPU steal {steal:.0%}")
    if not reasons:
        return [], None
    if busy and _finite(threads) and threads > 1:
        hint = "other processes want these cores: threads=1 leaves them one, or rerun at a quieter moment"
    elif busy or (_finite(steal) and steal > limits.steal):
        hint = "rerun at a quieter moment"
    else:
        hint = "more time per cell (timing.max_seconds, timing.iters) or a quieter moment"
    return reasons, hint


def judge_cells(cells: Any, limits: Thresholds) -> Any:
    """`noisy`, `noise` and the noise warning of a cells table judged again with `limits` (a sweep's thresholds,
    at gathering)."""
    if cells.empty or "round_spread" not in cells:
        return cells
    cells = cells.copy()
    for i, row in zip(cells.index, cells.to_dict("records")):
        if not _finite(row.get("latency_rounds")):
            continue  # an error row: nothing was timed
        reasons, hint = judge(row, limits)
        text = row.get("warnings")  # a missing one is NaN where pandas reads the column as strings: no warning
        parts = [w for w in (text if isinstance(text, str) else "").split(" | ") if w]
        at = next((j for j, w in enumerate(parts) if w.startswith(NOISE_WARNING)), len(parts))  # where it stood
        kept = [w for w in parts if not w.startswith(NOISE_WARNING)]
        if reasons:
            kept.insert(min(at, len(kept)), f"{NOISE_WARNING}{'; '.join(reasons)} ({hint})")
        cells.at[i, "noisy"] = bool(reasons)
        cells.at[i, "noise"] = "; ".join(reasons) or None
        cells.at[i, "warnings"] = " | ".join(kept) or None
    return cells


def fmt_spread(spread: float) -> str:
    """A round spread ((max - min) / median) as a reader takes it in: "55%" up to 100%, beyond it a factor ("×510",
    1 + spread: about how many medians the slowest round took), never "50864%"."""
    return f"{spread:.0%}" if spread <= 1 else f"×{1 + spread:.3g}"
