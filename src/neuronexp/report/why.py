"""How one cell compares with its baseline cell, in words: faster, slower or no different (from the speedup's 95%
interval), and why in operators (the ops column's dispatched→executed, the operators gone or new, or the one whose
time moved most), or that the operators do not account for it. One clause of a finding line (report.findings), for
winners and losers alike."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from neuronexp.analysis.noise import DISTORTED_PROFILE, noisy
from neuronexp.formatting import fmt_pct, fmt_us, short_op
from neuronexp.report.cell_text import composite_words, ops_text

# Operators listed by name in a clause; more are counted ("+3 more").
_LISTED = 3


def _names(ops: list[str]) -> str:
    shown = ", ".join(short_op(o, 40) for o in ops[:_LISTED])
    return shown + (f" +{len(ops) - _LISTED} more" if len(ops) > _LISTED else "")


def _finite(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def direction(low: float, high: float, threshold: float) -> int:
    """1 faster, -1 slower (the whole interval of the speedup beyond the threshold), 0 otherwise."""
    if not _finite(low, high):
        return 0
    return 1 if low > 1 + threshold else -1 if high < 1 / (1 + threshold) else 0


def within(low: float, high: float) -> str | None:
    """ "no difference within ±3.4%" when the interval straddles 1 (the tie in words: a difference, if any, is
    smaller than the farther end); None when it does not, or there is no interval."""
    if not _finite(low, high) or not low <= 1 <= high:
        return None
    return f"no difference within ±{fmt_pct(max(1 - low, high - 1))}"


def verdict_words(low: float, high: float, threshold: float) -> str:
    """faster / slower beyond the threshold, the tie in words, or a small difference said as such; "" without an
    interval (the ×figure alone is then all there is)."""
    if not _finite(low, high):
        return ""
    if side := direction(low, high, threshold):
        return "faster" if side > 0 else "slower"
    return within(low, high) or f"{'faster' if low > 1 else 'slower'}, not clearly beyond {fmt_pct(threshold)}"


def speedup_words(interval: Any, versus: str = "", note: str = "") -> str:
    """ "×1.39 vs NAME (95% CI 1.32–1.48)": the interval where there is one, and median_note's `note` in it."""
    inside = [f"95% CI {interval.ci_low:.2f}–{interval.ci_high:.2f}"] if _finite(interval.ci_low) else []
    text = f"×{interval.speedup:.2f}" + (f" vs {versus}" if versus else "") + (" per pair" if note else "")
    shown = [*inside, *([note] if note else [])]
    return text + (f" ({'; '.join(shown)})" if shown else "")


# A ratio of the medians within this factor of the speedup's interval reads as the same answer (145 µs and 130 µs
# beside ×1.10); beyond it, or on the other side of 1, the two figures look like a contradiction and are both said.
_AGREES = 1.10


def median_note(cell: Mapping[str, Any], ref: Mapping[str, Any], interval: Any) -> str:
    """Where the two medians of the table give a ratio that reads as another answer than the paired speedup (a noisy
    cell: ~6.12 ms beside 1.64 ms and ×0.71), that ratio, said next to the speedup: the speedup is the median of
    per-pair ratios, which the host's drift over the window cancels. "" where they agree, or it is not paired."""
    ratio = ref["latency_median_us"] / cell["latency_median_us"]
    low, high = interval.ci_low, interval.ci_high
    if cell.get("speedup_method") != "paired" or not _finite(low, high, ratio):
        return ""
    other_side = (ratio < 1 < low) or (high < 1 < ratio)
    if not other_side and low / _AGREES <= ratio <= high * _AGREES:
        return ""
    kind = "noisy medians" if noisy(cell) or noisy(ref) else "medians"
    return f"the {kind} {fmt_us(ref['latency_median_us'])} and {fmt_us(cell['latency_median_us'])} give ×{ratio:.2f}"


def _count(cell: Mapping[str, Any]) -> str:
    """The ops column (cell_text.ops_text), "1 op" in the singular; "" without a count."""
    if not _finite(cell.get("device_ops")):
        return ""
    return "1 op" if (text := ops_text(cell)) == "1 ops" else text


def counts(cell: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    """The ops column in words: "1 op dispatched, 7 executed" (a composite: one op in, seven ran), else
    "1 op instead of 6→7" where the counts differ from the baseline's; "" where they do not."""
    if composite_words(cell):  # one op dispatched ran as several (report.cell_text)
        return f"1 op dispatched, {cell['device_ops']:g} executed"
    mine, theirs = _count(cell), _count(ref)
    return f"{mine} instead of {theirs}" if mine and theirs and mine != theirs else ""


def _times(ops: pd.DataFrame) -> pd.Series:
    """Self time per step by op, ops that ran only (calls > 0), largest first, ties by name."""
    ran = ops[ops["calls"] > 0].groupby("op")["self_device_us"].sum()
    return ran.sort_index().sort_values(ascending=False, kind="stable")


def moved(cell_ops: pd.DataFrame | None, ref_ops: pd.DataFrame | None, side: int) -> tuple[str, float]:
    """The operators that make the difference in the direction `side` (1: the cell is faster, -1: slower), and how
    many µs per step they account for: those gone from the baseline's step and those that took their place, where
    that change saved (or cost) more than the ops both run moved; else the shared op that moved most
    ("aten::copy_ 219 µs → 671 µs"). ("", 0) without both profiles, or where no operator moved the cell's way."""
    if not side or cell_ops is None or ref_ops is None or cell_ops.empty or ref_ops.empty:
        return "", 0.0
    mine, theirs = _times(cell_ops), _times(ref_ops)
    gone, new = theirs.drop(mine.index, errors="ignore"), mine.drop(theirs.index, errors="ignore")
    shared = theirs.index.intersection(mine.index)
    toward = (theirs[shared] - mine[shared]) * side  # positive: this op moved the cell's way
    swapped = (gone.sum() - new.sum()) * side
    if swapped > 0 and swapped >= toward.sum():
        if not len(new):
            return f"{_names(list(gone.index))} gone ({fmt_us(gone.sum())})", swapped
        if not len(gone):
            return f"{_names(list(new.index))} new ({fmt_us(new.sum())})", swapped
        return (
            f"{_names(list(gone.index))} ({fmt_us(gone.sum())}) replaced by {_names(list(new.index))} "
            f"({fmt_us(new.sum())})",
            swapped,
        )
    if not len(shared) or toward.max() <= 0:
        return "", 0.0
    op = toward.sort_index().idxmax()
    return f"{short_op(str(op), 40)} {fmt_us(theirs[op])} → {fmt_us(mine[op])}", float(toward[op])


# Below this share of the measured difference, the operators' change is not named as its cause (docs/reports.md).
EXPLAINED_SHARE = 0.5


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def gap_us(cell: Mapping[str, Any], ref: Mapping[str, Any]) -> float:
    """How much faster (or slower) per call `cell` is than `ref`: from its paired speedup over its baseline where
    `ref` is that baseline, else from the two medians; NaN when neither is known."""
    ref_us, mine = _number(ref.get("latency_median_us")), _number(cell.get("latency_median_us"))
    speedup = _number(cell.get("speedup_vs_baseline"))
    if cell.get("baseline_run_id") == ref.get("run_id") and math.isfinite(ref_us * speedup) and speedup > 0:
        return abs(ref_us - ref_us / speedup)
    return abs(ref_us - mine)  # NaN where either is unknown


def _disturbed(cell: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    """Where either profiled step is far from its timed call (profile_ratio beyond DISTORTED_PROFILE): the host
    disturbed it, or the profiler distorts the cell, and no operator's time in it is a cause."""
    for c in (ref, cell):
        ratio = c.get("profile_ratio")
        if isinstance(ratio, float) and math.isfinite(ratio) and ratio > DISTORTED_PROFILE:
            who = c.get("_variant", "one")
            return f"the profiled step was disturbed ({who}'s is {ratio:.1f}× its timed median): rerun"
    return ""


def _outside(cell: Mapping[str, Any], ref: Mapping[str, Any], side: int) -> str:
    """Where no operator moved the cell's way although its time did: the profiled steps, which say the difference
    lies outside the operators (a compiled region's guards at a tiny shape, Python, the allocator)."""
    mine, theirs = cell.get("device_time_us"), ref.get("device_time_us")
    if not (side and isinstance(mine, float) and isinstance(theirs, float) and _finite(mine, theirs)):
        return ""
    if (theirs - mine) * side > 0:  # the step did move its way: an operator-free "why" would mislead
        return ""
    return f"profiled step {fmt_us(theirs)} → {fmt_us(mine)}: the difference lies outside the profiled operators"


def reason(
    cell: Mapping[str, Any],
    ref: Mapping[str, Any],
    cell_ops: pd.DataFrame | None,
    ref_ops: pd.DataFrame | None,
    side: int,
) -> str:
    """Why `cell` is faster (side 1), slower (-1) or no different (0) than its baseline cell `ref`, in operators:
    "1 op dispatched, 7 executed; aten::copy_ 219 µs → 671 µs"; where the profiles hold no operator that moved its
    way, its profiled step against the baseline's (the time went elsewhere); where the operators' change is less
    than EXPLAINED_SHARE of the measured difference, or a profiled step was disturbed, that instead of a cause;
    "" when nothing can be said."""
    ops, explained = moved(cell_ops, ref_ops, side)
    profiled = cell_ops is not None and ref_ops is not None and not cell_ops.empty and not ref_ops.empty
    if side and profiled and (disturbed := _disturbed(cell, ref)):
        ops = disturbed
    elif ops and (gap := gap_us(cell, ref)) > 0 and explained < EXPLAINED_SHARE * gap:
        ops = (
            f"mostly outside the profiled operators: their change ({fmt_us(explained)}) is "
            f"{fmt_pct(explained / gap)} of the {fmt_us(gap)} difference"
        )
    elsewhere = _outside(cell, ref, side) if profiled and not ops else ""
    return "; ".join(p for p in (counts(cell, ref), ops, elsewhere) if p)
