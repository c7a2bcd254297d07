"""One group's finding in words: who wins (or the tie, "no difference within ±x%"), its speedup over the baseline,
every other cell against the baseline, and why in operators (report.why), for winners and losers alike."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from neuronexp.analysis.noise import noisy
from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.report.busy import only_quiet_line
from neuronexp.report.cell_text import output_differs
from neuronexp.report.why import direction, median_note, reason, speedup_words, verdict_words, within


def nonfinite(cell: dict) -> bool:
    """NaN or inf in the cell's own output (`output_nonfinite`): whatever its time, it computed no usable result."""
    value = cell.get("output_nonfinite")
    return isinstance(value, (int, float)) and value == value and value > 0


def left_aside(cell: dict) -> bool:
    """Noisy and not held by pairing (`_paired`, report.findings), or NaN or inf in its output: its latency cannot be
    compared with its group's."""
    return (noisy(cell) and not cell.get("_paired")) or nonfinite(cell)


def is_ref(cell: dict) -> bool:
    return cell.get("baseline_run_id") == cell["run_id"]


def _output_flag(cells: list[dict]) -> str:
    """Never a winner without its flag: the named cells whose output failed the check against the baseline's."""
    bad = [c for c in cells if output_differs(c)]
    if not bad:
        return ""

    def err(cell: dict) -> str:
        value = cell.get("max_rel_err")
        return f" (max rel err {value:.2g})" if isinstance(value, float) and math.isfinite(value) else ""

    names = ", ".join(c["_variant"] + err(c) for c in bad)
    return f"; ✗ output differs from the baseline's beyond tolerance: {names}"


def _hotspot(cell: dict, spots: dict[str, pd.DataFrame]) -> str:
    spot = spots.get(str(cell["run_id"]))
    if spot is None or spot.empty:
        return ""
    return f"; {cell['_variant']} hotspot {spot['op'].iloc[0]} {fmt_pct(spot['share'].iloc[0])}"


def _left_out(group: list[dict]) -> str:
    """The group's noisy cells by name only (their reasons are in the one noise line, report.busy), and those whose
    output holds NaN or inf."""
    broken = [c["_variant"] for c in group if nonfinite(c)]
    flagged = [c["_variant"] for c in group if left_aside(c) and not nonfinite(c)]
    return (f"; noisy, left out: {', '.join(flagged)}" if flagged else "") + (
        f"; NaN or inf in the output of {', '.join(broken)}: no finding" if broken else ""
    )


def _other(group: list[dict], best: dict) -> dict | None:
    """What the winner is explained against when there is no baseline to compare with: the runner-up."""
    rest = [c for c in group if c is not best and not left_aside(c)]
    return min(rest, key=lambda c: c["latency_median_us"]) if rest else None


@dataclass(kw_only=True)
class Group:
    """A group of comparable cells as its line needs it: the cells (the baseline's first), the fastest, the ones
    tied with it, each cell's speedup interval (by run_id: findings.speedup_intervals' rows) and op profile."""

    cells: list[dict]
    best: dict
    ties: list[dict]
    intervals: dict
    ops: dict[str, pd.DataFrame]
    threshold: float

    @property
    def ref(self) -> dict | None:
        """The baseline cell; None where it failed."""
        return next((c for c in self.cells if is_ref(c)), None)

    @property
    def against(self) -> dict | None:
        """The baseline cell where it can be compared with (measured quietly, or timed paired with the others)."""
        return self.ref if self.ref is not None and not left_aside(self.ref) else None

    def why(self, cell: dict, other: dict, side: int) -> str:
        return reason(cell, other, self.ops.get(str(cell["run_id"])), self.ops.get(str(other["run_id"])), side)

    def speedup(self, cell: dict, ref: dict, versus: str = "") -> str:
        """ "×1.39 (95% CI 1.32–1.48)" against `ref` (named when `versus`), with the medians where they disagree."""
        interval = self.intervals[str(cell["run_id"])]
        return speedup_words(interval, versus, median_note(cell, ref, interval))

    def tie_words(self) -> str:
        return f"ties with {', '.join(c['_variant'] for c in self.ties)}"


def _head(g: Group) -> str:
    """Who wins: the fastest cell, or what ties with it (with the baseline: "no difference within ±x%"), and its
    speedup over the baseline with why in operators."""
    best, ref = g.best, g.against
    vague = f" (difference below {fmt_pct(g.threshold)} or not significant)"
    interval = g.intervals.get(str(best["run_id"]))
    if best is g.ref:  # every other cell follows, each against it
        return f"{best['_variant']} (the baseline) " + (g.tie_words() if g.ties else "fastest")
    won = f"{best['_variant']} {g.tie_words()}{vague}" if g.ties else f"{best['_variant']} fastest"
    if ref is None or interval is None:  # nothing to state a speedup against: the runner-up explains it
        other = _other(g.cells, best)
        why = g.why(best, other, 1) if other is not None and not any(other is c for c in g.ties) else ""
        return won + (f": {why}" if why else "")
    if any(c is ref for c in g.ties):  # no difference from the baseline shown: no speedup claimed over it
        words = within(interval.ci_low, interval.ci_high)
        head = f"{best['_variant']} {g.tie_words()}" + (f": {words}, {g.speedup(best, ref)}" if words else vague)
        return head + (f"; {why}" if (why := g.why(best, ref, 0)) else "")
    head = f"{won}, {g.speedup(best, ref, ref['_variant'])}"
    why = g.why(best, ref, direction(interval.ci_low, interval.ci_high, g.threshold))
    return head + (f": {why}" if why else "")


def _clause(g: Group, cell: dict) -> str:
    """Another cell against the baseline: faster, slower or no different, its speedup, and why in operators."""
    interval, ref = g.intervals.get(str(cell["run_id"])), g.against
    if interval is None or ref is None:
        return ""
    words = verdict_words(interval.ci_low, interval.ci_high, g.threshold)
    text = (
        f"{cell['_variant']} {words}, {g.speedup(cell, ref)}"
        if words in ("faster", "slower")
        else f"{cell['_variant']} {g.speedup(cell, ref)}" + (f", {words}" if words else "")
    )
    if output_differs(cell):  # a cell said faster, or no different, is never so without its flag
        text += " (✗ output differs from the baseline's beyond tolerance)"
    why = g.why(cell, ref, direction(interval.ci_low, interval.ci_high, g.threshold))
    return text + (f": {why}" if why else "")


def group_line(g: Group, spots: dict[str, pd.DataFrame]) -> str:
    """One line for a group: who wins (or the tie, in words), then every other cell against the baseline, each
    with why in operators; a winner whose output differs is flagged; noisy cells left out are named."""
    best, group = g.best, g.cells
    if sum(not left_aside(c) for c in group) == 1:
        if len(group) == 1:  # a cell on its own (no baseline): its latency and hotspot
            return f"{best['_input']}: {best['_variant']} {fmt_us(best['latency_median_us'])}" + _hotspot(best, spots)
        if any(nonfinite(c) for c in group):  # the others computed NaN or inf: nothing to compare with
            line = f"{best['_input']}: {best['_variant']} {fmt_us(best['latency_median_us'])}, no comparison"
            return line + _hotspot(best, spots) + _left_out(group)
        return only_quiet_line(best, group, fmt_us(best["latency_median_us"])) + _hotspot(best, spots)
    # The flag right after the winner: a winner whose output differs from the baseline's is never named without it.
    parts = [_head(g) + _output_flag([best, *g.ties])]
    parts += [_clause(g, c) for c in group if c is not best and c is not g.ref and not left_aside(c)]
    # Sentences, one per cell: a cell's reason may hold "; " and its operators commas.
    return f"{best['_input']}: " + ". ".join(p for p in parts if p) + _left_out(group)
