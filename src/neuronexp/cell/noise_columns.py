"""A cell's noise, named in its row: figures, what the machine was doing, and the warnings they earn.

A cell is `noisy` when its own figures say the latency cannot be trusted as a finding: the rounds
disagree, the samples scatter widely, or other processes took the cores it ran on (analysis.noise.judge, with the
`noise.*` thresholds). The figures are kept either way, so a reader can judge.
"""

from __future__ import annotations

import math
from typing import Any

from neuronexp.analysis.noise import DISTORTED_PROFILE, Thresholds, judge
from neuronexp.cell.timing import LatencyStats
from neuronexp.config.schema import NoiseConfig


def noise_columns(
    latency: LatencyStats, threads: int | None = None, cpus: str | None = None, limits: Thresholds | None = None
) -> dict[str, Any]:
    """Noise figures and machine activity of the timed pass, the `noisy` flag with its reasons (analysis.noise.judge),
    and what would help (`noise_hint`, for the row's warning). `limits`: NoiseConfig's defaults unless given."""
    act = latency.activity
    figures = {
        "latency_rounds": len(latency.round_medians_us),
        "round_spread": latency.round_spread,
        "p90_p10": latency.p90_us / latency.p10_us if latency.p10_us > 0 else math.nan,
        "load_avg_1m": act.load_avg_1m if act else None,
        "other_cpu": act.other_cpu if act else None,
        "cpu_steal": act.steal if act else None,
    }
    limits = NoiseConfig() if limits is None else limits
    reasons, hint = judge({**figures, "threads": threads, "placement_cpus": cpus}, limits)
    return {**figures, "noisy": bool(reasons), "noise": "; ".join(reasons) or None, "noise_hint": hint}


def profile_warning(profile_ratio: float) -> str | None:
    if math.isfinite(profile_ratio) and profile_ratio > DISTORTED_PROFILE:
        return (
            f"profiled time per step is {profile_ratio:.1f}x the wall-clock median: the profiler distorts this "
            "cell; use its op shares, not its absolute times"
        )
    return None


def join_warnings(*parts: str | None) -> str | None:
    """The row's `warnings`: distinct non-empty parts joined with " | " (the Neuron backend's separator)."""
    flat = [w for p in parts if p for w in p.split(" | ") if w]
    return " | ".join(dict.fromkeys(flat)) or None
