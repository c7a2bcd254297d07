"""The notes under a comparison: what changed in the environment, and what the intervals rest on."""

from __future__ import annotations

from typing import Any

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


# env.json's record of what the kernel does to a CPU's speed (host.machine), and its settings in compare's words.
CPU_SETTINGS = "cpu_settings"
_CPU_SETTINGS = [
    ("governor", "governor"),
    ("boost", "boost"),
    ("smt", "SMT"),
    ("isolcpus", "isolcpus"),
    ("nohz_full", "nohz_full"),
]


def _cpu(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r[CPU_SETTINGS] for r in records if isinstance(r.get(CPU_SETTINGS), dict)]


def _values(cpus: list[dict[str, Any]], key: str) -> str:
    return "/".join(sorted({str(c.get(key, "unknown")) for c in cpus}))


def machine_notes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[str]:
    """The two sides' CPU settings from their env.json records (results.environment): each setting that differs, and
    the kernel command line's parameters on one side only; where none differs, the settings once (what a CI runner
    measured on)."""
    cpu_a, cpu_b = _cpu(a), _cpu(b)
    if not cpu_a or not cpu_b:
        side = "A" if not cpu_a else "B"
        return (
            [f"machine: {side}'s runs do not record their CPU settings (from before env.json had them)"]
            if a or b
            else []
        )
    differ = [
        f"{word} {_values(cpu_a, key)} vs {_values(cpu_b, key)}"
        for key, word in _CPU_SETTINGS
        if _values(cpu_a, key) != _values(cpu_b, key)
    ]
    params_a, params_b = (
        {p for c in cpus for p in str(c.get("kernel_cmdline", "")).split()} for cpus in (cpu_a, cpu_b)
    )
    if params_a != params_b:
        only = [
            f"{side} only: {' '.join(sorted(p))}"
            for side, p in (("A", params_a - params_b), ("B", params_b - params_a))
            if p
        ]
        differ.append(f"kernel command line ({'; '.join(only)})")
    if differ:
        return ["machine differs between A and B: " + "; ".join(differ)]
    return ["machine: A and B alike: " + ", ".join(f"{word} {_values(cpu_a, key)}" for key, word in _CPU_SETTINGS)]
