"""The notes under a comparison: what changed in the environment, and what the intervals rest on."""

from __future__ import annotations

import pandas as pd

from neuronexp.formatting import fmt_word

# Not join keys (a new torch is exactly what one compares), but a reader should know they changed.
_ENVIRONMENT = [
    "torch_version",
    "neuronx_version",
    "device_name",
    "host",
    "timing_method",
    "threads",
    "allocator",
    "malloc",
]


def environment_notes(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    notes = []
    for col in _ENVIRONMENT:
        if col in a.columns and col in b.columns:
            va, vb = (sorted({fmt_word(v) for v in side[col].dropna()}) for side in (a, b))
            if va != vb:
                notes.append(f"{col} differs: {'/'.join(va) or '—'} vs {'/'.join(vb) or '—'}")
    return notes


def statistics_notes(cells: pd.DataFrame, threshold: float) -> list[str]:
    """What the intervals rest on: a side of one run (its noise floor), one round on a side, noisy cells."""
    notes: list[str] = []
    if cells.empty:
        return notes
    floored = cells[(cells["runs_a"] < 2) | (cells["runs_b"] < 2)]
    if len(floored):
        notes.append(
            f"{len(floored)} cell(s) have one run on a side: their intervals add a process-to-process term "
            "measured from each side's drift over its rounds (floor_a/floor_b); --also-a/--also-b measure it"
        )
    single = cells[(cells["rounds_a"] < 2) | (cells["rounds_b"] < 2)]
    if len(single):
        notes.append(
            f"{len(single)} cell(s) have one timing round on a side: only a difference whose whole interval "
            f"lies beyond ±{threshold:.0%} is called (timing.rounds > 1 on both sides lifts this)"
        )
    flagged = cells[cells["noisy"]] if "noisy" in cells.columns else cells.iloc[0:0]
    if len(flagged):
        notes.append(
            f"noisy in A or B (their `noise` column says why; the interval holds that noise, so a call there "
            f"still stands): {', '.join(map(str, flagged['cell']))}"
        )
    return notes
