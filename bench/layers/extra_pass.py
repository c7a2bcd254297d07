"""A variant known to be slower: naive RMSNorm plus one more elementwise pass over its input (bench/truth_checks.py ab).

`x * 1.0` reads x and writes a copy as large as x before the usual six calls, which make about four such passes:
about 1.2-1.3x the naive time on memory-bound shapes, plus one operator's dispatch on small ones.
"""

from __future__ import annotations

import torch

from neuronexp.modules import NaiveRMSNorm


class ExtraPassRMSNorm(NaiveRMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x * 1.0)
