"""The findings, printed under a sweep's table, in summary.md and in the report: per group of comparable cells, which
is fastest, and whether that is more than noise (worded by report.finding_line).

Cells of different groups are never ranked against each other. The statistics are neuronexp-compare's, so a
cell within the threshold of the fastest, or not significantly slower, is a tie; a noisy cell is named, not ranked."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from neuronexp.analysis.paired import paired_samples, ratio_between
from neuronexp.analysis.samples import NO_SAMPLES, samples_by_run
from neuronexp.analysis.stats import CellStats, Criteria, benjamini_hochberg, compare_rounds, verdict
from neuronexp.analysis.variants import names
from neuronexp.report.busy import concluded_line, noise_line
from neuronexp.report.finding_line import Group, group_line, is_ref, left_aside, nonfinite
from neuronexp.results import usable_cells

INTERVAL_COLUMNS = ["run_id", "speedup", "ci_low", "ci_high"]
# compare's statistics: a cell ties with its group's fastest where compare would call no change (or n/a); an interval
# too wide to tell is a tie too, never "inconclusive" (the finding states the interval).
TIE = Criteria(inconclusive=None)


def _groups(ok: pd.DataFrame) -> list[list[dict]]:
    """Cells grouped by their baseline cell, in input order, the reference first; cells without one alone."""
    refs = ok["baseline_run_id"] if "baseline_run_id" in ok else pd.Series(None, index=ok.index)
    key = refs.where(refs.notna(), "_alone_" + ok["run_id"].astype(str))
    ordered = ok.assign(_group=key, _ref=refs != ok["run_id"]).sort_values(["numel", "_input", "_ref"], kind="stable")
    return [g.drop(columns=["_group", "_ref"]).to_dict("records") for _, g in ordered.groupby("_group", sort=False)]


def speedup_intervals(cells: pd.DataFrame) -> pd.DataFrame:
    """run_id, speedup, ci_low, ci_high: every usable cell's speedup over its usable baseline cell (`baseline_run_id`)
    with its 95% interval, as analysis.variants.add_speedups put them in the cells' columns (paired where the two were
    timed together, analysis.paired: the sweep's own rule). The findings state these figures and the speedup plot
    draws them; nothing is resampled again."""
    if "baseline_run_id" not in cells or "speedup_ci_low" not in cells:
        return pd.DataFrame(columns=INTERVAL_COLUMNS)
    ok = usable_cells(cells)
    ok = ok[ok["baseline_run_id"].notna() & (ok["baseline_run_id"] != ok["run_id"]) & ok["speedup_vs_baseline"].notna()]
    columns = ["run_id", "speedup_vs_baseline", "speedup_ci_low", "speedup_ci_high"]
    table = ok[columns].set_axis(INTERVAL_COLUMNS, axis=1).reset_index(drop=True)
    return table.astype({"run_id": str, "speedup": float, "ci_low": float, "ci_high": float})


def _mark_paired(group: list[dict]) -> None:
    """`_paired` on each cell of a group timed together (one timing_group, analysis.paired): there the host's drift
    fell on every variant alike, so a noisy flag (the level moved over the window) does not leave a cell out."""
    together = {c.get("timing_group") for c in group}
    paired = len(group) > 1 and len(together) == 1 and isinstance(next(iter(together)), str)
    for c in group:
        c["_paired"] = paired


def _fastest(group: list[dict], speedups: dict[str, float]) -> dict | None:
    """The group's fastest cell that can be compared: by paired speedup where the group was timed together (the
    baseline ×1), else by median latency."""
    quiet = [c for c in group if not left_aside(c)]
    if not quiet:
        return None
    if all(c["_paired"] for c in quiet):
        ranked = {str(c["run_id"]): speedups.get(str(c["run_id"]), 1.0 if is_ref(c) else math.nan) for c in quiet}
        if all(math.isfinite(v) for v in ranked.values()):
            return max(quiet, key=lambda c: ranked[str(c["run_id"])])
    return min(quiet, key=lambda c: c["latency_median_us"])


def _paired_tie(by_pair: dict[str, pd.DataFrame], cell: dict, best: dict, threshold: float) -> bool | None:
    """Whether `cell` ties with `best` by their per-pair ratio (timed together): slower only when the ratio's whole
    95% interval lies beyond the threshold, as compare calls a change; None when they share no pair. Where `cell` is
    the winner's baseline, that ratio is the winner's paired speedup, already in its row: read, not resampled again."""
    if best.get("speedup_method") == "paired" and best.get("baseline_run_id") == cell["run_id"]:
        low = float(best["speedup_ci_low"])  # ratio_between(by_pair, baseline, cell), as analysis.paired put it
    else:
        found = ratio_between(by_pair, str(cell["run_id"]), str(best["run_id"]))  # cell's time ÷ the winner's
        low = found[1] if found is not None else math.nan
    return None if not math.isfinite(low) else not low > 1 + threshold


def _ties(groups: list[list[dict]], bests: list[dict | None], samples: pd.DataFrame) -> list[set[str]]:
    """Per group, the run_ids that tie with its fastest cell: by their per-pair ratio where the two were timed
    together, else by compare's statistics (Benjamini–Hochberg over every group's comparisons)."""
    by_run, by_pair = samples_by_run(samples), paired_samples(samples)
    tied: list[set[str]] = [set() for _ in groups]
    pairs: list[tuple[int, str, CellStats]] = []
    for i, (group, best) in enumerate(zip(groups, bests)):
        for cell in group:
            if best is None or cell is best or left_aside(cell):
                continue
            tie = _paired_tie(by_pair, cell, best, TIE.threshold) if cell["_paired"] else None
            if tie is not None:  # timed together: the per-pair ratio decides
                if tie:
                    tied[i].add(str(cell["run_id"]))
                continue
            a, b = (by_run.get(str(c["run_id"]), NO_SAMPLES) for c in (best, cell))
            pairs.append((i, str(cell["run_id"]), compare_rounds(a, b)))
    for (i, run, s), qv in zip(pairs, benjamini_hochberg([s.p_value for _, _, s in pairs])):
        if verdict(s, qv, TIE) in ("no change", "n/a"):
            tied[i].add(run)
    return tied


def _no_finding(group: list[dict]) -> str:
    """A group with no cell that can be compared; a cell on its own (no baseline) is named: one line per cell, not
    the same line each."""
    broken = [c["_variant"] for c in group if nonfinite(c)]
    if broken:
        rest = ", the others noisy" if len(broken) < len(group) else ""
        return f"{group[0]['_input']}: NaN or inf in the output of {', '.join(broken)}{rest}: no finding"
    who = f"{group[0]['_variant']} is" if len(group) == 1 else "every cell is"
    return f"{group[0]['_input']}: {who} noisy, no finding"


@dataclass(frozen=True)
class _Decided:
    """What the findings decide, group by group: the cells (with their names), each group's fastest comparable cell
    (None: none), the run_ids tied with it, and every cell's speedup interval by run_id."""

    groups: list[list[dict]]
    bests: list[dict | None]
    tied: list[set[str]]
    intervals: dict[str, Any]


def _decide(cells: pd.DataFrame, samples: pd.DataFrame) -> _Decided | None:
    ok = usable_cells(cells)
    if ok.empty:
        return None
    variant, _, rows = names(ok)
    ok = ok.assign(_variant=variant, _input=rows.agg(" ".join, axis=1))
    groups = _groups(ok)
    for group in groups:
        _mark_paired(group)
    by_cell = {str(r.run_id): r for r in speedup_intervals(cells).itertuples()}
    speedups = {run: float(r.speedup) for run, r in by_cell.items()}
    bests = [_fastest(group, speedups) for group in groups]  # each group's fastest comparable cell, or None
    return _Decided(groups, bests, _ties(groups, bests, samples), by_cell)


def _lines(decided: _Decided, spots: dict[str, pd.DataFrame], ops: dict[str, pd.DataFrame]) -> list[str]:
    """One line per group, in the groups' order."""
    lines = []
    for group, best, ties in zip(decided.groups, decided.bests, decided.tied):
        if best is None:
            lines.append(_no_finding(group))
            continue
        tie = [c for c in group if str(c["run_id"]) in ties]
        line = Group(cells=group, best=best, ties=tie, intervals=decided.intervals, ops=ops, threshold=TIE.threshold)
        lines.append(group_line(line, spots))
    return lines


def findings(
    cells: pd.DataFrame,
    samples: pd.DataFrame,
    spots: dict[str, pd.DataFrame],
    all_ops: dict[str, pd.DataFrame] | None = None,
    notes: bool = True,
) -> list[str]:
    """One line per group of comparable cells (per input, with a baseline): its fastest cell or the tie in words,
    the speedup over the baseline cell with its 95% CI, and every other cell against the baseline, each with why in
    operators (report.why, from `all_ops`: every op of each cell as analysis.ops.hotspots gives them; `spots` when
    absent); a cell without a group gets its latency and hotspot only. With `notes`, the noise said once first and
    what it does not touch last (report.busy). The terminal, results/summary.md and the report all print these."""
    decided = _decide(cells, samples)
    if decided is None:
        return []
    lines = _lines(decided, spots, all_ops if all_ops is not None else spots)
    if not notes:
        return lines
    # The noise once for all cells, first; last, what holds whatever the noise.
    every = [c for group in decided.groups for c in group]
    return [x for x in (noise_line(every),) if x] + lines + [x for x in (concluded_line(every),) if x]


FINDING_COLUMNS = [
    "input",
    "variant",
    "run_id",
    "baseline",
    "latency_median_us",
    "speedup",
    "ci_low",
    "ci_high",
    "outcome",
    "finding",
]


def _outcome(cell: dict, best: dict | None, tied: set[str]) -> str:
    """How a cell fared in its group: fastest, tie (with the fastest), slower (than it), noisy (left out of the
    comparison), or no finding (nothing in its group could be compared)."""
    if left_aside(cell):
        return "noisy"
    if best is None:
        return "no finding"
    return "fastest" if cell is best else "tie" if str(cell["run_id"]) in tied else "slower"


def finding_table(
    cells: pd.DataFrame,
    samples: pd.DataFrame,
    spots: dict[str, pd.DataFrame],
    all_ops: dict[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """The findings as data (neuronexp.Results.findings): one row per usable cell, in the findings' order, with its
    group's input, its name, whether it is the baseline, its median, its speedup over the baseline with the 95%
    interval the sentence states, its outcome in the group, and the group's sentence (as `findings` words it)."""
    decided = _decide(cells, samples)
    if decided is None:
        return pd.DataFrame(columns=FINDING_COLUMNS)
    lines = _lines(decided, spots, all_ops if all_ops is not None else spots)
    rows = []
    for group, best, tied, line in zip(decided.groups, decided.bests, decided.tied, lines):
        for cell in group:
            interval = decided.intervals.get(str(cell["run_id"]))
            figures = (interval.speedup, interval.ci_low, interval.ci_high) if interval is not None else (math.nan,) * 3
            rows.append(
                [cell["_input"], cell["_variant"], str(cell["run_id"]), is_ref(cell), cell["latency_median_us"]]
                + [*figures, _outcome(cell, best, tied), line]
            )
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)
