"""The roofline of one cell: what its work and median latency achieved, as a share of the device's roofs
(achieved GB/s and TFLOP/s, intensity, the bound, % of each peak; docs/profile.md, "How far from the limit").
bytes_min is a lower bound on traffic, so achieved GB/s is too: above 100% means a cache held the data."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def roofline_columns(bytes_min: Any, flops: Any, latency_us: Any, peak_bw_gbs: Any, peak_tflops: Any) -> dict[str, Any]:
    """The cell's roofline columns (None where an input is missing: no latency, an unknown peak)."""
    nbytes, nflops, seconds = _finite(bytes_min), _finite(flops), _finite(latency_us)
    seconds = seconds / 1e6 if seconds and seconds > 0 else None
    bw, tflops = _finite(peak_bw_gbs), _finite(peak_tflops)
    achieved_gbs = _ratio(nbytes, seconds)
    achieved_gbs = achieved_gbs / 1e9 if achieved_gbs is not None else None
    achieved_tflops = _ratio(nflops, seconds)
    achieved_tflops = achieved_tflops / 1e12 if achieved_tflops is not None else None
    intensity = _ratio(nflops, nbytes)
    return {
        "intensity": intensity,
        "achieved_gbs": achieved_gbs,
        "achieved_tflops": achieved_tflops,
        "peak_bw_gbs": bw,
        "peak_tflops": tflops,
        "pct_peak_bw": 100 * achieved_gbs / bw if achieved_gbs is not None and bw else None,
        # No counted FLOPs (an elementwise layer): 0% of the compute roof would read as a finding; it is not one.
        "pct_peak_flops": 100 * achieved_tflops / tflops if achieved_tflops and tflops else None,
        "bound": bound(intensity, bw, tflops),
    }


def ridge(peak_bw_gbs: float | None, peak_tflops: float | None) -> float | None:
    """FLOP per byte where the bandwidth roof meets the compute roof."""
    return peak_tflops * 1e3 / peak_bw_gbs if peak_bw_gbs and peak_tflops else None


def bound(intensity: float | None, peak_bw_gbs: float | None, peak_tflops: float | None) -> str | None:
    """ "memory" or "compute" by the roofline; None when it cannot tell (an unknown roof, no work counted). A cell with
    no counted FLOPs is memory-bound whatever the compute roof: its intensity is 0."""
    if intensity is None:
        return None
    if intensity == 0:
        return "memory"
    point = ridge(peak_bw_gbs, peak_tflops)
    if point is None:
        return None
    return "memory" if intensity < point else "compute"


def fmt_share(pct: float) -> str:
    """A percentage with the digits that matter: 41%, 4.1%, 0.041%."""
    return f"{pct:.0f}%" if abs(pct) >= 9.5 else f"{pct:.2g}%"


def headline(cell: Mapping[str, Any]) -> str | None:
    """The one figure a table shows for how far a cell is from its limit: % of peak bandwidth, or % of peak
    FLOP/s for a compute-bound cell; None when neither is known."""
    if cell.get("bound") == "compute":
        pct = _finite(cell.get("pct_peak_flops"))
        return None if pct is None else f"{fmt_share(pct)} FLOP/s"
    pct = _finite(cell.get("pct_peak_bw"))
    return None if pct is None else f"{fmt_share(pct)} BW"
