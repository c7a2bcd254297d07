"""Words where a figure needs reading: a composite "fused" op said as such, a huge round spread as a factor, noise
reasons never cut mid-word."""

from __future__ import annotations

from pathlib import Path

from neuronexp.analysis.noise import fmt_spread
from neuronexp.cell.noise_columns import noise_columns
from neuronexp.cell.timing import summarize_samples
from neuronexp.report.cell_text import cell_lines, clip_reasons, composite_words
from neuronexp.report.summary import summary_markdown
from neuronexp.results import frame


def _cell(**kw) -> dict:
    base = dict(
        run_id="r0",
        experiment="x",
        module="rmsnorm_fused",
        compiled=False,
        backend="cpu",
        device="cpu",
        device_name="cpu",
        dtype="float32",
        input_shape="[1,8]",
        numel=8,
        status="ok",
        latency_median_us=10.0,
        device_time_us=9.0,
        device_ops=7.0,
        ops_dispatched=1.0,
        device_time_source="cpu_self_time",
        timing_method="wallclock",
        torch_version="2.13.0",
        overrides="module=rmsnorm_fused",
        speedup_vs_baseline=float("nan"),
        top_op=None,
        top_op_share=float("nan"),
    )
    return {**base, **kw}


def test_a_composite_op_is_said_in_words_in_summary_md() -> None:
    assert composite_words(_cell()) == "dispatched 1 op, executed 7: not one fused kernel here"
    assert composite_words(_cell(device_ops=1.0)) is None and composite_words(_cell(ops_dispatched=6.0)) is None
    text = summary_markdown(
        frame(
            "cells",
            [_cell(), _cell(run_id="r1", module="rmsnorm_naive", ops_dispatched=6.0, overrides="module=rmsnorm_naive")],
        ),
        [],
        None,
        Path("s"),
    )
    section = text.split("## Ops per step", 1)[1]
    assert "rmsnorm_fused" in section and "dispatched 1 op, executed 7: not one fused kernel here" in section
    assert "rmsnorm_naive" not in section


def test_a_huge_round_spread_is_a_factor_not_thousands_of_percent() -> None:
    assert fmt_spread(0.55) == "55%" and fmt_spread(0.999) == "100%"
    assert fmt_spread(508.64) == "×510" and fmt_spread(1.5) == "×2.5"
    stats = summarize_samples([10.0] * 3 + [5096.0] * 3 + [10.0] * 3, [0] * 3 + [1] * 3 + [2] * 3)
    assert noise_columns(stats)["noise"].startswith("rounds spread ×510")


def test_noise_reasons_are_cut_between_reasons_never_mid_word() -> None:
    noise = "rounds spread 55%; p90/p10 3.1; other processes used 1.20 cores; CPU steal 9%"
    assert clip_reasons(noise, 40) == "rounds spread 55%; p90/p10 3.1; +2 more"
    assert clip_reasons("rounds spread 55%", 40) == "rounds spread 55%"
    last = cell_lines(_cell(noisy=True, noise=noise))[-1]
    assert last.endswith("+2 more") and "othe" not in last


def test_the_report_marks_a_noisy_cell_and_says_its_reasons_once_elsewhere() -> None:
    """The report's grid marks a noisy cell ~ and leaves its reasons to the findings' one noise line (report.busy):
    repeated in every cell they filled the report's first screen. The terminal and summary.md, whose findings have no
    noise line, keep them in the cell."""
    noise = "rounds spread 55%; p90/p10 3.1; other processes used 1.20 cores; CPU steal 9%"
    lines = cell_lines(_cell(noisy=True, noise=noise), reasons=False)
    assert lines[0].startswith("~") and not any("rounds spread" in line or "noisy" in line for line in lines)
