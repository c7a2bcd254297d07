"""The report's headline lines: per group of comparable cells, which is fastest, and whether that is more than noise.

A group is a baseline cell and the cells compared with it (analysis.variants.baseline_run_ids): the same input
and the same everything else, only the baseline's keys differing. Cells of different groups are never ranked
against each other; without a baseline each cell stands alone. The same statistics as neuronexp-compare
(compare_stats): a cell within the practical threshold of the fastest, or not significantly slower after
Benjamini–Hochberg, is reported as a tie, not a loss.
"""

from __future__ import annotations

import pandas as pd

from neuronexp.analysis.stats import CellStats, benjamini_hochberg, compare_samples, verdict
from neuronexp.analysis.variants import names
from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.results import USABLE


def _groups(ok: pd.DataFrame) -> list[list[dict]]:
    """Cells grouped by their baseline cell, in input order, the reference first; cells without one alone."""
    refs = ok["baseline_run_id"] if "baseline_run_id" in ok else pd.Series(None, index=ok.index)
    key = refs.where(refs.notna(), "_alone_" + ok["run_id"].astype(str))
    ordered = ok.assign(_group=key, _ref=refs != ok["run_id"]).sort_values(["numel", "_input", "_ref"], kind="stable")
    return [g.drop(columns=["_group", "_ref"]).to_dict("records") for _, g in ordered.groupby("_group", sort=False)]


def _hotspot(cell: dict, spots: dict[str, pd.DataFrame]) -> str:
    spot = spots.get(str(cell["run_id"]))
    return "" if spot is None or spot.empty else f"; {cell['_variant']} hotspot {spot['op'].iloc[0]} {fmt_pct(spot['share'].iloc[0])}"


def findings(cells: pd.DataFrame, samples: pd.DataFrame, spots: dict[str, pd.DataFrame],
             threshold: float = 0.02, alpha: float = 0.05) -> list[str]:
    """One line per group: its fastest cell (or the tie), the speedup over the group's baseline cell with its
    95% CI, and a hotspot; a cell without a group gets its latency and hotspot only."""
    ok = cells[cells["status"].isin(USABLE) & cells["latency_median_us"].notna()]
    if ok.empty:
        return []
    variant, _, rows = names(ok)
    ok = ok.assign(_variant=variant, _input=rows.agg(" ".join, axis=1))
    by_run = {str(k): g["latency_us"] for k, g in samples.groupby("run_id")} if not samples.empty else {}
    groups = _groups(ok)
    pairs: list[tuple[int, str, CellStats]] = []
    for i, group in enumerate(groups):
        best = min(group, key=lambda c: c["latency_median_us"])
        for cell in group:
            if cell is not best:
                stats = compare_samples(by_run.get(str(best["run_id"]), []), by_run.get(str(cell["run_id"]), []))
                pairs.append((i, str(cell["run_id"]), stats))
    q = benjamini_hochberg([s.p_value for _, _, s in pairs])
    tied: dict[int, set[str]] = {}
    stats: dict[tuple[int, str], CellStats] = {}
    for (i, run, s), qv in zip(pairs, q):
        stats[(i, run)] = s
        if verdict(s.ratio, qv, alpha, threshold) in ("no change", "n/a"):
            tied.setdefault(i, set()).add(run)
    lines = []
    for i, group in enumerate(groups):
        best = min(group, key=lambda c: c["latency_median_us"])
        ref = next((c for c in group if c.get("baseline_run_id") == c["run_id"]), None)  # None: the baseline failed
        line = f"{best['_input']}: {best['_variant']}"
        if len(group) == 1:
            lines.append(line + f" {fmt_us(best['latency_median_us'])}" + _hotspot(best, spots))
            continue
        ties = [c["_variant"] for c in group if str(c["run_id"]) in tied.get(i, set())]
        line += f" fastest ({fmt_us(best['latency_median_us'])})" if not ties else \
            f" ({fmt_us(best['latency_median_us'])}) ties with {', '.join(ties)} (difference below {fmt_pct(threshold)} or not significant)"
        base_stats = stats.get((i, str(ref["run_id"]))) if ref is not None else None
        if ref is not None and base_stats is not None and str(ref["run_id"]) not in tied.get(i, set()):
            line += f", ×{base_stats.ratio:.2f} vs {ref['_variant']} (95% CI {base_stats.ci_low:.2f}–{base_stats.ci_high:.2f})"
        elif best is ref:
            line += " (the baseline)"
        lines.append(line + _hotspot(ref if ref is not None else best, spots))
    return lines
