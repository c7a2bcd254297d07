"""The report's headline lines: per input, which variant is fastest, and whether that is more than noise.

The same statistics as neuronexp-compare (compare_stats): a variant within the practical threshold of
the fastest, or not significantly slower after Benjamini–Hochberg, is reported as a tie, not a loss.
"""

from __future__ import annotations

import pandas as pd

from neuronexp.analysis.stats import CellStats, benjamini_hochberg, compare_samples, verdict
from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.analysis.variants import comparison_grid
from neuronexp.results import USABLE


def _pairs(grid: dict, samples: dict[str, pd.Series]) -> list[tuple[tuple, str, CellStats]]:
    """(input key, variant, stats of that variant against the input's fastest) for every other variant."""
    out = []
    for key, by_variant in grid.items():
        best = min(by_variant.values(), key=lambda c: c["latency_median_us"])
        for variant, cell in by_variant.items():
            if cell is not best:
                stats = compare_samples(samples.get(str(best["run_id"]), []), samples.get(str(cell["run_id"]), []))
                out.append((key, variant, stats))
    return out


def findings(cells: pd.DataFrame, samples: pd.DataFrame, baseline: str | None, spots: dict[str, pd.DataFrame],
             threshold: float = 0.02, alpha: float = 0.05) -> list[str]:
    """One line per input: fastest variant (or the tie), speedup over the baseline with its 95% CI, hotspot."""
    ok = cells[cells["status"].isin(USABLE) & cells["latency_median_us"].notna()]
    _, _, grid = comparison_grid(ok, baseline)
    by_run = {str(k): g["latency_us"] for k, g in samples.groupby("run_id")} if not samples.empty else {}
    pairs = _pairs(grid, by_run)
    q = benjamini_hochberg([s.p_value for _, _, s in pairs])
    tied: dict[tuple, list[str]] = {}
    stats: dict[tuple, dict[str, CellStats]] = {}
    for (key, variant, s), qv in zip(pairs, q):
        stats.setdefault(key, {})[variant] = s
        if verdict(s.ratio, qv, alpha, threshold) in ("no change", "n/a"):
            tied.setdefault(key, []).append(variant)
    lines = []
    for key, by_variant in grid.items():
        best = min(by_variant.values(), key=lambda c: c["latency_median_us"])
        name = best["_variant"]
        line = f"{' '.join(map(str, key))}: {name}"
        if len(by_variant) > 1:
            ties = tied.get(key, [])
            line += f" fastest ({fmt_us(best['latency_median_us'])})" if not ties else \
                f" ({fmt_us(best['latency_median_us'])}) ties with {', '.join(ties)} (difference below {fmt_pct(threshold)} or not significant)"
        else:
            line += f" {fmt_us(best['latency_median_us'])}"
        base_stats = stats.get(key, {}).get(baseline) if baseline else None
        if base_stats is not None and baseline not in tied.get(key, []):
            line += f", ×{base_stats.ratio:.2f} vs {baseline} (95% CI {base_stats.ci_low:.2f}–{base_stats.ci_high:.2f})"
        spotted = by_variant.get(baseline) if baseline in by_variant else best
        spot = spots.get(str(spotted["run_id"]))
        if spot is not None and not spot.empty:
            line += f"; {spotted['_variant']} hotspot {spot['op'].iloc[0]} {fmt_pct(spot['share'].iloc[0])}"
        lines.append(line)
    return lines
