"""A cell's noise, named in its row: figures, what the machine was doing, and the warnings they earn.

A cell is `noisy` when its own figures say the latency cannot be trusted as a finding: the rounds
disagree, the samples scatter widely, or other processes took the cores it ran on. The thresholds are
documented in docs/methodology.md ("Noise"); the figures are kept either way, so a reader can judge.
"""

from __future__ import annotations

import math
from typing import Any

from neuronexp.cell.timing import LatencyStats
from neuronexp.analysis.noise import fmt_spread

# (max - min) / median of the round medians. On the quiet 2-core VM of docs/methodology.md, a 1 ms cell's
# rounds spread 3-12%; another process on its cores makes it 30% and more.
NOISY_ROUND_SPREAD = 0.25
# p90 / p10 of every sample; 1.1-1.6 on a quiet host, 25-49x when two threads share cores with other work.
NOISY_P90_P10 = 2.0
# Cores' worth of CPU used by other processes on the cell's own CPUs (its affinity), whatever its thread count:
# measured here, one thread on a 2-vCPU VM ran 4.5x slower while another process kept the other vCPU busy
# (the two vCPUs share a physical core's caches and memory bandwidth, or are SMT siblings).
NOISY_OTHER_CPU = 0.25
# Share of CPU time stolen by the hypervisor.
NOISY_STEAL = 0.05
# Profiled time per step over the wall-clock median beyond which the profile is not a picture of the run.
DISTORTED_PROFILE = 1.5


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def noise_columns(latency: LatencyStats) -> dict[str, Any]:
    """Noise figures and machine activity of the timed pass, and the `noisy` flag with its reasons."""
    spread = latency.round_spread
    ratio = latency.p90_us / latency.p10_us if latency.p10_us > 0 else math.nan
    act = latency.activity
    other = act.other_cpu if act else None
    steal = act.steal if act else None
    reasons = []
    if len(latency.round_medians_us) > 1 and spread > NOISY_ROUND_SPREAD:
        reasons.append(f"rounds spread {fmt_spread(spread)}")
    if _finite(ratio) and ratio > NOISY_P90_P10:
        reasons.append(f"p90/p10 {ratio:.1f}")
    if other is not None and other > NOISY_OTHER_CPU:
        reasons.append(f"other processes used {other:.2f} cores")
    if steal is not None and steal > NOISY_STEAL:
        reasons.append(f"CPU steal {steal:.0%}")
    return {
        "latency_rounds": len(latency.round_medians_us),
        "round_spread": spread,
        "p90_p10": ratio,
        "load_avg_1m": act.load_avg_1m if act else None,
        "other_cpu": other,
        "cpu_steal": steal,
        "noisy": bool(reasons),
        "noise": "; ".join(reasons) or None,
    }


def profile_warning(profile_ratio: float) -> str | None:
    if _finite(profile_ratio) and profile_ratio > DISTORTED_PROFILE:
        return (f"profiled time per step is {profile_ratio:.1f}x the wall-clock median: the profiler distorts this "
                "cell; use its op shares, not its absolute times")
    return None


def join_warnings(*parts: str | None) -> str | None:
    """The row's `warnings`: distinct non-empty parts joined with " | " (the Neuron backend's separator)."""
    flat = [w for p in parts if p for w in p.split(" | ") if w]
    return " | ".join(dict.fromkeys(flat)) or None
