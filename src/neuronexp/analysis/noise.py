"""The `noisy` flag as every view reads it: the sweep table, summary.md, the report, the findings and compare
share this one definition, so a cell is never a finding in one view and noisy in another. The flag itself is
set when the cell runs (cell.noise, thresholds in docs/methodology.md, "Noise")."""

from __future__ import annotations

from typing import Any, Mapping

# Before a noisy cell's latency wherever it is shown ("~1.31 ms"), and before its name in compare's table.
NOISY_MARK = "~"
# The row warning that repeats the `noise` column starts with this (a view showing `noise` leaves it out).
NOISE_WARNING = "noisy: "


def noisy(cell: Mapping[str, Any]) -> bool:
    """The row's `noisy` flag (False for results written before it existed, or read back as NaN)."""
    value = cell.get("noisy")
    return bool(value) if value is not None and value == value else False


def fmt_spread(spread: float) -> str:
    """A round spread ((max - min) / median) as a reader takes it in: "55%" up to 100%, beyond it a factor ("×510",
    1 + spread: about how many medians the slowest round took), never "50864%"."""
    return f"{spread:.0%}" if spread <= 1 else f"×{1 + spread:.3g}"
