"""The `noise.*` keys: the thresholds beyond which a cell's latency is noisy, not a finding (analysis.noise.judge).

Not part of a cell's run_id: they judge what was measured, and a sweep applies its own when it gathers results.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NoiseConfig:
    # (max - min) / median of the round medians. On the quiet 2-core VM of docs/methodology.md, a 1 ms cell's
    # rounds spread 3-12%; another process on its cores makes it 30% and more.
    round_spread: float = 0.25
    # p90 / p10 of every sample; 1.1-1.6 on a quiet host, 25-49x when two threads share cores with other work.
    p90_p10: float = 2.0
    # Cores' worth of CPU used by other processes on the cell's own CPUs, beyond those its threads leave spare.
    other_cpu: float = 0.25
    # Share of CPU time stolen by the hypervisor.
    steal: float = 0.05
