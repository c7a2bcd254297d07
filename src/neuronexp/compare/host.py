"""How far the host itself moved between A and B: the host reference (host.reference) each cell's row carries,
B's median over its runs ÷ A's, one move per workload. compare widens each cell's interval by them
(analysis.floor.host_widened), so that a host that got slower is not called a regression of the code."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

# The reference's columns (results.contract) and the name of each move in the comparison's table.
HOST_COLUMNS = {"host_dispatch_us": "host_dispatch_move", "host_memory_us": "host_memory_move"}
# Above this no host measured either workload (16 floats added; 16 MiB multiplied: microseconds to milliseconds on
# any host that can run a cell): a figure beyond it, not finite or not positive was not measured, it was written.
MAX_REFERENCE_US = 1e6
# The most the host's own speed may move between A and B (B ÷ A, either way) and still excuse a cell's change
# (analysis.floor.host_widened): beyond it the reference says another host or an edited table, not drift, and a cell
# ×100 slower with its reference ×100 too is compared as measured, so --fail-on-regression still sees it.
MAX_HOST_MOVE = 4.0


def host_moves(cells_a: list[pd.Series], cells_b: list[pd.Series]) -> dict[str, float]:
    """{move column: B ÷ A} for each workload; NaN where a side has no figure (a run that predates the reference)."""
    return {move: _median(cells_b, col) / _median(cells_a, col) for col, move in HOST_COLUMNS.items()}


def _median(cells: list[pd.Series], column: str) -> float:
    values = [float(c[column]) for c in cells if column in c and plausible(c[column])]
    return float(np.median(values)) if values else math.nan


def plausible(value: object) -> bool:
    """A reference figure a host could have measured: a finite number of µs in (0, MAX_REFERENCE_US]."""
    try:
        number = float(value)  # type: ignore[arg-type]  # None, text: not a figure
    except (TypeError, ValueError):
        return False
    return math.isfinite(number) and 0 < number <= MAX_REFERENCE_US


def excusable(move: float) -> bool:
    """A host move the cells' intervals may take out: finite, within ×1/MAX_HOST_MOVE to ×MAX_HOST_MOVE."""
    return math.isfinite(move) and 1 / MAX_HOST_MOVE <= move <= MAX_HOST_MOVE


def implausible_notes(sides: list[pd.DataFrame]) -> list[str]:
    """The cells whose reference is there but cannot be a measurement: treated as missing, and said so."""
    bad = [
        f"{col}={cells.at[i, col]!r}"
        for cells in sides
        for col in HOST_COLUMNS
        if col in cells
        for i in cells.index[cells[col].notna()]
        if not plausible(cells.at[i, col])
    ]
    if not bad:
        return []
    return [
        f"{len(bad)} host reference figure(s) are not a measurement (not a finite number of µs in (0, "
        f"{MAX_REFERENCE_US:,.0f}]): treated as missing ({', '.join(bad[:3])}{' …' if len(bad) > 3 else ''})"
    ]


def host_notes(cells: pd.DataFrame, threshold: float, used: bool, paired: bool = False) -> list[str]:
    """What the host reference said: that the host moved (and the intervals hold it), or that a side lacks it;
    `paired`: runs in pairs, whose spread holds the host's drift (the reference widens nothing)."""
    moves = cells[list(HOST_COLUMNS.values())] if not cells.empty else pd.DataFrame()
    if moves.empty:
        return []
    missing = moves.isna().any(axis=1)
    beyond = ~missing & ~moves.map(excusable).all(axis=1)
    notes = []
    if beyond.any():
        worst = max((moves[beyond].max(axis=None), 1 / moves[beyond].min(axis=None)))
        notes.append(
            f"{int(beyond.sum())} cell(s) have a host reference that moved beyond ×{MAX_HOST_MOVE:g} between A and B "
            f"(up to ×{worst:.3g} either way): more than a host's own drift, so it excuses nothing and their "
            "intervals are as measured"
        )
    if missing.any():
        return [
            *notes,
            f"{int(missing.sum())} cell(s) lack the host reference on a side (runs measured before it): their "
            "intervals cannot hold a change in the host's own speed between A and B",
        ]
    far = moves[~beyond & (np.log(moves).abs() > math.log1p(threshold)).any(axis=1)]
    if far.empty:
        return notes
    span = ", ".join(
        f"{col.split('_')[1]} ×{far[col].min():.2f}–×{far[col].max():.2f}" for col in HOST_COLUMNS.values()
    )
    if paired:
        return [f"the host itself moved between A and B ({span}); the runs are paired, so the pairs' spread holds it"]
    if not used:
        return [*notes, f"the host itself moved between A and B ({span}); --no-host-reference: intervals as measured"]
    return [
        *notes,
        f"the host itself moved between A and B ({span}, its reference workloads B ÷ A): {len(far)} cell(s) have "
        "intervals that span the change as measured and with that move taken out (--no-host-reference: as measured)",
    ]
