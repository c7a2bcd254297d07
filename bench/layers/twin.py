"""A variant known to cost the same as the naive RMSNorm: the same code under another class name
(bench/paired_truth.py same): its speedup must be ×1 within noise, its interval must contain 1."""

from __future__ import annotations

from neuronexp.modules import NaiveRMSNorm


class TwinRMSNorm(NaiveRMSNorm):
    pass
