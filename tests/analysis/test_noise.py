"""One definition of `noisy`: every view reads the flag through analysis.noise."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from neuronexp.analysis.noise import NOISY_MARK, noisy
from neuronexp.report.cell_text import cell_lines

SRC = Path(__file__).resolve().parents[2] / "src" / "neuronexp"


def test_the_flag_as_read_back_from_any_results() -> None:
    assert noisy({"noisy": True}) and noisy({"noisy": np.bool_(True)}) and noisy(pd.Series({"noisy": True}))
    # Results written before the column, or read back with a gap (NaN), are not noisy.
    assert not noisy({}) and not noisy({"noisy": None}) and not noisy({"noisy": math.nan})
    assert not noisy({"noisy": False}) and not noisy(pd.Series({"noisy": np.bool_(False)}))


def test_no_view_keeps_its_own_copy_of_the_flag_or_the_mark() -> None:
    copies = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name != "noise.py" and re.search(r"^def _?noisy\(|^NOISY_MARK\s*=|== \"~\"|\"~\" if", p.read_text(), re.M)
    ]
    assert copies == []


def test_summary_marks_the_cell_the_flag_names() -> None:
    base = {
        "status": "ok",
        "latency_median_us": 1300.0,
        "speedup_vs_baseline": math.nan,
        "device_time_us": 1200.0,
        "device_ops": 7.0,
        "ops_dispatched": 6.0,
        "top_op": None,
        "top_op_share": math.nan,
        "backend": "cpu",
        "device_time_source": "cpu_self_time",
    }
    quiet, loud = (
        cell_lines({**base, "noisy": False}),
        cell_lines({**base, "noisy": True, "noise": "rounds spread 34%"}),
    )
    assert not quiet[0].startswith(NOISY_MARK)
    assert loud[0].startswith(NOISY_MARK) and loud[-1] == "noisy: rounds spread 34%"
