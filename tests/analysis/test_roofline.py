"""The roofline arithmetic with known answers."""

from __future__ import annotations

import pytest

from neuronexp.analysis.roofline import bound, fmt_share, headline, ridge, roofline_columns


def test_known_answers() -> None:
    # 2 GB moved and 4 TFLOP done in 1 s (1e6 µs) against 10 GB/s and 100 TFLOP/s roofs.
    cols = roofline_columns(2e9, 4e12, 1e6, 10.0, 100.0)
    assert cols["achieved_gbs"] == pytest.approx(2.0) and cols["pct_peak_bw"] == pytest.approx(20.0)
    assert cols["achieved_tflops"] == pytest.approx(4.0) and cols["pct_peak_flops"] == pytest.approx(4.0)
    assert cols["intensity"] == pytest.approx(2000.0)
    assert ridge(10.0, 100.0) == pytest.approx(10_000.0)  # 100e12 FLOP/s / 10e9 B/s
    assert cols["bound"] == "memory"  # 2,000 FLOP/B is below the 10,000 FLOP/B ridge
    assert roofline_columns(1e6, 1e11, 1.0, 10.0, 100.0)["bound"] == "compute"  # 100,000 FLOP/B


def test_missing_inputs_stay_empty_never_zero() -> None:
    no_peak = roofline_columns(1e9, 0.0, 1e3, None, None)
    assert no_peak["achieved_gbs"] == pytest.approx(1000.0) and no_peak["pct_peak_bw"] is None
    assert no_peak["bound"] == "memory"  # no counted FLOPs: intensity 0, below any ridge
    assert no_peak["pct_peak_flops"] is None  # 0 FLOPs counted is not "0% of the compute roof"
    failed = roofline_columns(1e9, 1e9, float("nan"), 10.0, 1.0)
    assert failed["achieved_gbs"] is None and failed["pct_peak_bw"] is None
    assert bound(5.0, None, None) is None  # FLOPs counted but no roof to place them against


def test_headline_is_bandwidth_unless_compute_bound() -> None:
    assert headline({"bound": "memory", "pct_peak_bw": 41.2, "pct_peak_flops": 3.0}) == "41% BW"
    assert headline({"bound": "compute", "pct_peak_bw": 2.0, "pct_peak_flops": 12.4}) == "12% FLOP/s"
    assert headline({"bound": None, "pct_peak_bw": None}) is None
    assert (fmt_share(4.14), fmt_share(0.0412), fmt_share(104.0)) == ("4.1%", "0.041%", "104%")
