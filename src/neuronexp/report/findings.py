"""The report's headline lines: per group of comparable cells, which is fastest, and whether that is more than noise.

Cells of different groups are never ranked against each other. The statistics are neuronexp-compare's, so a
cell within the threshold of the fastest, or not significantly slower, is a tie; a noisy cell is named, not ranked."""

from __future__ import annotations

import math

import pandas as pd

from neuronexp.analysis.noise import noisy
from neuronexp.analysis.paired import paired_samples, ratio_between, speedup_table
from neuronexp.analysis.samples import NO_SAMPLES, samples_by_run
from neuronexp.analysis.stats import CellStats, benjamini_hochberg, compare_rounds, verdict
from neuronexp.analysis.variants import names
from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.report.busy import concluded_line, noise_line, only_quiet_line
from neuronexp.report.cell_text import output_differs
from neuronexp.report.why import explain
from neuronexp.results import usable_cells

INTERVAL_COLUMNS = ["run_id", "speedup", "ci_low", "ci_high"]


def _groups(ok: pd.DataFrame) -> list[list[dict]]:
    """Cells grouped by their baseline cell, in input order, the reference first; cells without one alone."""
    refs = ok["baseline_run_id"] if "baseline_run_id" in ok else pd.Series(None, index=ok.index)
    key = refs.where(refs.notna(), "_alone_" + ok["run_id"].astype(str))
    ordered = ok.assign(_group=key, _ref=refs != ok["run_id"]).sort_values(["numel", "_input", "_ref"], kind="stable")
    return [g.drop(columns=["_group", "_ref"]).to_dict("records") for _, g in ordered.groupby("_group", sort=False)]


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
    return (
        ""
        if spot is None or spot.empty
        else f"; {cell['_variant']} hotspot {spot['op'].iloc[0]} {fmt_pct(spot['share'].iloc[0])}"
    )


def speedup_intervals(cells: pd.DataFrame, samples: pd.DataFrame) -> pd.DataFrame:
    """run_id, speedup, ci_low, ci_high: every usable cell's speedup over its usable baseline cell (`baseline_run_id`)
    with its 95% interval, paired where the two were timed together (analysis.paired, the sweep's own rule). The
    findings state these figures and the speedup plot draws them."""
    return speedup_table(cells, samples)[INTERVAL_COLUMNS]


def _mark_paired(group: list[dict]) -> None:
    """`_paired` on each cell of a group timed together (one timing_group, analysis.paired): there the host's drift
    fell on every variant alike, so a noisy flag (the level moved over the window) does not leave a cell out."""
    together = {c.get("timing_group") for c in group}
    paired = len(group) > 1 and len(together) == 1 and isinstance(next(iter(together)), str)
    for c in group:
        c["_paired"] = paired


def _left_aside(cell: dict) -> bool:
    """Noisy and not held by pairing: its latency cannot be compared with its group's."""
    return noisy(cell) and not cell.get("_paired")


def _fastest(group: list[dict], speedups: dict[str, float]) -> dict | None:
    """The group's fastest cell that can be compared: by paired speedup where the group was timed together (the
    baseline ×1), else by median latency."""
    quiet = [c for c in group if not _left_aside(c)]
    if not quiet:
        return None
    if all(c["_paired"] for c in quiet):
        ranked = {str(c["run_id"]): speedups.get(str(c["run_id"]), 1.0 if _is_ref(c) else math.nan) for c in quiet}
        if all(math.isfinite(v) for v in ranked.values()):
            return max(quiet, key=lambda c: ranked[str(c["run_id"])])
    return min(quiet, key=lambda c: c["latency_median_us"])


def _is_ref(cell: dict) -> bool:
    return cell.get("baseline_run_id") == cell["run_id"]


def _left_out(group: list[dict]) -> str:
    """The group's noisy cells by name only: their reasons are in the one noise line (report.busy)."""
    flagged = [c["_variant"] for c in group if _left_aside(c)]
    return f"; noisy, left out: {', '.join(flagged)}" if flagged else ""


def _other(group: list[dict], best: dict, ref: dict | None) -> dict | None:
    """What the winner is explained against: the group's baseline cell, or the runner-up when the baseline wins
    or is noisy (None when that cell ties with the winner: then there is no difference to explain)."""
    if ref is not None and ref is not best and not _left_aside(ref):
        return ref
    rest = [c for c in group if c is not best and not _left_aside(c)]
    return min(rest, key=lambda c: c["latency_median_us"]) if rest else None


def _paired_tie(by_pair: dict[str, pd.DataFrame], cell: dict, best: dict, threshold: float) -> bool | None:
    """Whether `cell` ties with `best` by their per-pair ratio (timed together): slower only when the ratio's whole
    95% interval lies beyond the threshold, as compare calls a change; None when they share no pair."""
    found = ratio_between(by_pair, str(cell["run_id"]), str(best["run_id"]))  # cell's time ÷ the winner's
    if found is None or not math.isfinite(found[1]):
        return None
    return not found[1] > 1 + threshold


def findings(
    cells: pd.DataFrame,
    samples: pd.DataFrame,
    spots: dict[str, pd.DataFrame],
    threshold: float = 0.02,
    alpha: float = 0.05,
    all_ops: dict[str, pd.DataFrame] | None = None,
    intervals: pd.DataFrame | None = None,
) -> list[str]:
    """One line per group: its fastest cell (or the tie), the speedup over the group's baseline cell with its
    95% CI, and why it wins (report.why, from `all_ops`: every op of each cell as analysis.ops.hotspots gives them;
    `spots` when absent), else a hotspot; a cell without a group gets its latency and hotspot only.
    `intervals`: speedup_intervals' table when the caller has it already."""
    ok = usable_cells(cells)
    if ok.empty:
        return []
    variant, _, rows = names(ok)
    ok = ok.assign(_variant=variant, _input=rows.agg(" ".join, axis=1))
    by_run, by_pair = samples_by_run(samples), paired_samples(samples)
    groups = _groups(ok)
    for group in groups:
        _mark_paired(group)
    pairs: list[tuple[int, str, CellStats]] = []
    tied: dict[int, set[str]] = {}
    if intervals is None:
        intervals = speedup_intervals(cells, samples)
    by_cell = {str(r.run_id): r for r in intervals.itertuples()}
    speedups = {run: float(r.speedup) for run, r in by_cell.items()}
    bests = [_fastest(group, speedups) for group in groups]  # each group's fastest comparable cell, or None
    for i, (group, best) in enumerate(zip(groups, bests)):
        for cell in group:
            if best is not None and cell is not best and not _left_aside(cell):
                tie = _paired_tie(by_pair, cell, best, threshold) if cell["_paired"] else None
                if tie is not None:  # timed together: the per-pair ratio decides
                    if tie:
                        tied.setdefault(i, set()).add(str(cell["run_id"]))
                    continue
                (xa, ra), (xb, rb) = (
                    by_run.get(str(best["run_id"]), NO_SAMPLES),
                    by_run.get(str(cell["run_id"]), NO_SAMPLES),
                )
                pairs.append((i, str(cell["run_id"]), compare_rounds(xa, xb, ra, rb)))
    q = benjamini_hochberg([s.p_value for _, _, s in pairs])
    for (i, run, s), qv in zip(pairs, q):
        if verdict(s.ratio, qv, alpha, threshold, s.separable, s.ci_low, s.ci_high) in ("no change", "n/a"):
            tied.setdefault(i, set()).add(run)
    ops = all_ops if all_ops is not None else spots
    lines = []
    for i, (group, best) in enumerate(zip(groups, bests)):
        if best is None:  # a cell on its own (no baseline) is named: one line per cell, not the same line each
            who = f"{group[0]['_variant']} is" if len(group) == 1 else "every cell is"
            lines.append(f"{group[0]['_input']}: {who} noisy, no finding")
            continue
        ref = next((c for c in group if _is_ref(c)), None)  # None: the baseline failed
        line = f"{best['_input']}: {best['_variant']}"
        if sum(not _left_aside(c) for c in group) == 1:
            if len(group) == 1:  # a cell on its own (no baseline): its latency and hotspot
                lines.append(line + f" {fmt_us(best['latency_median_us'])}" + _hotspot(best, spots))
            else:
                lines.append(only_quiet_line(best, group, fmt_us(best["latency_median_us"])) + _hotspot(best, spots))
            continue
        tie_cells = [c for c in group if str(c["run_id"]) in tied.get(i, set())]
        ties = [c["_variant"] for c in tie_cells]
        line += (
            f" fastest ({fmt_us(best['latency_median_us'])})"
            if not ties
            else f" ({fmt_us(best['latency_median_us'])}) ties with {', '.join(ties)} "
            f"(difference below {fmt_pct(threshold)} or not significant)"
        )
        interval = by_cell.get(str(best["run_id"])) if ref is not None and best is not ref else None
        if (
            interval is not None
            and ref is not None
            and not _left_aside(ref)
            and str(ref["run_id"]) not in tied.get(i, set())
        ):
            line += (
                f", ×{interval.speedup:.2f} vs {ref['_variant']} (95% CI {interval.ci_low:.2f}–{interval.ci_high:.2f})"
            )
        elif best is ref:
            line += " (the baseline)"
        other = _other(group, best, ref)
        if other is not None and str(other["run_id"]) in tied.get(i, set()):
            other = None  # no difference to explain (a tie with another cell leaves the one with the baseline)
        why = explain(best, other, ops.get(str(best["run_id"])), ops.get(str(other["run_id"]))) if other else None
        # The flag before the why: a winner whose output differs from the baseline's is never named without it.
        lines.append(
            line
            + _output_flag([best, *tie_cells])
            + (f"; {why}" if why else _hotspot(ref if ref is not None else best, spots))
            + _left_out(group)
        )
    # The noise once for all cells, first; last, what holds whatever the noise.
    every = [c for group in groups for c in group]
    return [x for x in (noise_line(every),) if x] + lines + [x for x in (concluded_line(every),) if x]
