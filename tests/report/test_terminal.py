"""The sweep's comparison in the terminal at 80 and 160 columns and piped to a file: no variant name cut, every
cell on its line, nothing wider than the terminal."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from helpers import FAST, run_cli
from neuronexp.analysis.baseline import parse_baseline
from neuronexp.report.terminal import print_sweep
from neuronexp.results import frame

# Six variants with names as long as real ones (Hugging Face layers, compiled): the case of issue 16.
VARIANTS = [
    "llama_mlp",
    "llama_mlp +compile",
    "llama_decoder_layer",
    "llama_decoder_layer +compile",
    "llama_attention_eager",
    "llama_attention_sdpa +compile",
]
SHAPES = ["[1,128,4096]", "[1,512,4096]", "[1,2048,4096]"]


def _cells(variants: list[str] = VARIANTS, failed: str | None = None):
    rows = []
    for s, shape in enumerate(SHAPES):
        for v, name in enumerate(variants):
            module, _, tag = name.partition(" +")
            median = 100.0 * (1 + s) + 7 * v  # distinct per cell ("100 µs" … "335 µs"): each must be found once
            ok = name != failed
            rows.append(
                dict(
                    run_id=f"{v}-{s}",
                    experiment="x",
                    module=module,
                    compiled=tag == "compile",
                    backend="cpu",
                    device="cpu",
                    device_name="cpu",
                    dtype="float32",
                    input_shape=shape,
                    numel=10 ** (s + 3),
                    status="ok" if ok else "error",
                    error=None if ok else "RuntimeError: out of memory " * 4,
                    latency_median_us=median if ok else None,
                    device_time_us=1.23e6 if ok else None,
                    device_ops=float(6 - v) if ok else None,
                    device_time_source="cpu_self_time",
                    top_op="aten::scaled_dot_product_attention_for_cpu" if ok else None,
                    top_op_share=0.5 if ok else None,
                    speedup_vs_baseline=100.0 * (1 + s) / median if ok else None,
                    overrides=f"module={module}",
                )
            )
    return frame("cells", rows)


def render(cells, width: int, baseline: str | None = "llama_mlp") -> str:
    out = io.StringIO()
    print_sweep(
        cells,
        parse_baseline(baseline),
        Path("sweep"),
        Console(file=out, width=width, highlight=False, color_system=None),
    )
    return out.getvalue()


def _check(text: str, width: int, cells) -> None:
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= width, "\n".join(ln for ln in lines if len(ln) > width)
    for name in VARIANTS:  # whole, somewhere: a header, a row or the legend
        assert re.search(rf"(^|[\s│┃]){re.escape(name)}(\s|[│┃]|$)", text, flags=re.M), name
    assert "…" not in "".join(n for n in VARIANTS if n in text)
    for median in cells["latency_median_us"].dropna():
        assert len(re.findall(rf"(?<![\d.]){median:.0f} µs", text)) == 1, median


@pytest.mark.parametrize("width", [80, 160])
def test_six_variants_fit_the_terminal_with_every_name_and_cell(width: int) -> None:
    cells = _cells()
    text = render(cells, width)
    _check(text, width, cells)
    rows = [ln for ln in text.splitlines() if re.search(r"\d µs", ln)]
    if width == 80:  # one line per cell, variants as keys explained by a legend
        assert len(rows) == len(cells)
        assert text.startswith("A  llama_mlp\nB  llama_mlp +compile\n")
        assert all(re.search(r"\s[A-F]\s", row) for row in rows)
    else:  # 160: one line per cell with the full names (the side-by-side grid needs more)
        assert len(rows) == len(cells) and not text.startswith("A  ")


def test_three_variants_side_by_side_when_they_fit() -> None:
    cells = _cells(VARIANTS[:3])
    text = render(cells, 160)
    header = next(ln for ln in text.splitlines() if "llama_mlp +compile" in ln)
    assert all(name in header for name in VARIANTS[:3])  # the variants are the columns
    assert max(len(ln) for ln in text.splitlines()) <= 160


def test_a_failed_cell_keeps_its_line_and_its_whole_error() -> None:
    cells = _cells(failed="llama_decoder_layer")
    text = render(cells, 80)
    assert len([ln for ln in text.splitlines() if re.search(r"\serror(\s|$)", ln)]) == len(SHAPES)
    assert text.count("failed: llama_decoder_layer · ") == len(SHAPES)
    assert "RuntimeError: out of memory RuntimeError: out of memory" in text.replace("\n", " ")


def test_piped_to_a_file_the_sweep_table_is_plain_and_80_columns(sweep: Path, tmp_path: Path) -> None:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    # The same sweep again into (a copy of) its directory: every cell is reused and the table printed, with
    # COLUMNS unset and stdout a pipe.
    args = [
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        "input.shape=[1,8,64],[1,64,512]",
        *FAST[:-1],
        f"hydra.sweep.dir={copy}",
    ]
    result = run_cli(args, cwd=tmp_path, env={"COLUMNS": ""})
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "\x1b[" not in out, out  # no colour codes in a file
    table = out[out.index("neuronexp sweep ·") : out.index("all cells ok")].splitlines()
    assert max(len(ln) for ln in table) <= 80, out
    assert "rmsnorm_naive" in out and "rmsnorm_fused" in out and out.count("(cached)") >= 4


def test_long_inputs_noisy_cells_and_percent_of_peak_fit_80_columns_with_every_figure_whole() -> None:
    # The attention study's case: 4-dim inputs, noisy medians ("~25.6 ms"), compute-bound "% FLOP/s" with the
    # failed-output mark; at 80 columns the hotspot gives way, never a name, a median or a % of peak.
    cells = _cells().assign(
        input_shape=lambda c: c["input_shape"].str.replace("[1,", "[1,32,", regex=False),
        bound="compute",
        pct_peak_flops=0.44,
        noisy=True,
    )
    cells["output_check"] = "FAIL"
    text = render(cells, 80)
    _check(text, 80, cells)
    assert text.count("~") >= len(cells) and text.count("44% FLOP/s") == len(cells), text
    table = text.split("────")[1]
    assert "…" not in table, text


@pytest.mark.parametrize("width", [80, 84, 86, 88, 90, 100])
def test_a_hotspot_shown_keeps_enough_of_its_op_name_to_say_which(width: int) -> None:
    # The attention study's case without noisy cells: 4-dim inputs and "% FLOP/s" leave little room; an op name
    # cut to "a…" names nothing, so below ten characters the column gives way, with a note.
    cells = _cells().assign(
        input_shape=lambda c: c["input_shape"].str.replace("[1,", "[1,32,", regex=False),
        bound="compute",
        pct_peak_flops=0.44,
    )
    text = render(cells, width)
    _check(text, width, cells)
    shown = re.findall(r"(\S+)… \d+(?:\.\d)?%", text)
    if "hotspot column left out at this width" in text:
        assert not shown and "hotspot" not in text.split("────")[0].splitlines()[-1], text
    else:
        assert shown and all(len(name) >= 9 for name in shown), text  # 9 characters and "…"


def test_speedup_intervals_come_with_what_they_cover_and_not_without_them() -> None:
    plain = _cells(VARIANTS[:3])
    assert "this run's 95% interval" not in render(plain, 160)
    with_intervals = plain.assign(
        speedup_ci_low=plain["speedup_vs_baseline"] * 0.95, speedup_ci_high=plain["speedup_vs_baseline"] * 1.05
    )
    for width in (80, 160):
        text = render(with_intervals, width)
        assert "(lo–hi): this run's 95% interval; on a changing host a rerun can land outside it" in text
        assert max(len(ln) for ln in text.splitlines()) <= width
    from neuronexp.report.summary import summary_markdown

    summary = summary_markdown(with_intervals, [], parse_baseline("llama_mlp"), Path("sweep"))
    assert "this run's 95% interval" in summary and "--also-a/--also-b" in summary
    assert "this run's 95% interval" not in summary_markdown(plain, [], parse_baseline("llama_mlp"), Path("sweep"))


@pytest.mark.parametrize("warnings", [None, float("nan"), "allocator: glibc refused"])
def test_a_single_cell_prints_its_warnings_only_when_it_has_some(warnings, tmp_path: Path) -> None:
    # A null warnings column comes back from Parquet as NaN: it printed "warnings: nan" under a clean cell.
    import pandas as pd

    from neuronexp.report.terminal import print_cell
    from neuronexp.results import Results

    row = (
        _cells(VARIANTS[:1])
        .iloc[[0]]
        .assign(
            timing_method="wallclock",
            latency_samples=100,
            latency_rounds=20,
            round_spread=0.08,
            latency_p10_us=90.0,
            latency_p90_us=110.0,
            first_call_s=0.04,
            warnings=warnings,
        )
    )
    out = io.StringIO()
    print_cell(Results(row, pd.DataFrame(), pd.DataFrame()), tmp_path, Console(file=out, width=100))
    text = out.getvalue()
    assert "100 samples in 20 rounds" in text and "nan" not in text
    assert ("warnings: allocator: glibc refused" in text) == isinstance(warnings, str)


@pytest.mark.parametrize("width", [80, 160])
def test_piped_lines_carry_no_trailing_spaces_and_blank_lines_are_empty(width: int) -> None:
    # Rich pads a table's title, its blank separator rows and a left-aligned last column (the hotspot) to the
    # table's width: invisible in a terminal, kept by a pipe, a file and a diff.
    for cells in (_cells(), _cells(VARIANTS[:3])):
        text = render(cells, width)
        lines = text.splitlines()
        assert not [ln for ln in lines if ln != ln.rstrip()], "\n".join(repr(ln) for ln in lines if ln != ln.rstrip())
        assert "" in lines or width == 160  # the blank line between inputs is there, empty


def test_the_notes_under_an_80_column_table_are_each_one_whole_line() -> None:
    # The attention study's case at 80 columns: the hotspot column left out, failed output checks, noisy cells.
    cells = _cells().assign(
        input_shape=lambda c: c["input_shape"].str.replace("[1,", "[1,32,", regex=False),
        bound="compute",
        pct_peak_flops=0.44,
        noisy=True,
    )
    cells["output_check"] = "FAIL"
    lines = render(cells, 80).splitlines()
    notes = [("hotspot column left out", "have it"), ("✗ output ≠ baseline:", "by how much)"), ("~ noisy", "stands")]
    for first, last in notes:
        (line,) = [ln for ln in lines if ln.startswith(first)]
        assert line.endswith(last), line


def test_a_single_cell_piped_carries_no_trailing_spaces(tmp_path: Path) -> None:
    # Its top-ops table's title is padded to the table's width, as the sweep's was.
    import pandas as pd

    from neuronexp.report.terminal import print_cell
    from neuronexp.results import Results, frame

    row = _cells(VARIANTS[:1]).iloc[[0]]
    labels = row[["run_id", "experiment", "module", "compiled", "backend", "device", "dtype", "input_shape"]]
    ops = frame(
        "ops",
        [
            dict(
                labels.iloc[0].to_dict(),
                cycle=0,
                op=op,
                device_type="CPU",
                calls=1.0,
                self_cpu_us=us,
                cpu_total_us=us,
                self_device_us=us,
                device_total_us=us,
                device_share=us / 30.0,
            )  # fmt: skip
            for op, us in (("aten::mul", 20.0), ("aten::add", 10.0))
        ],
    )
    row = row.assign(timing_method="wallclock", latency_samples=10, latency_rounds=1, latency_p10_us=90.0,
                     latency_p90_us=110.0, first_call_s=0.04)  # fmt: skip
    (tmp_path / "cells.parquet").write_bytes(b"")  # a run directory holds its files
    out = io.StringIO()
    print_cell(Results(row, ops, pd.DataFrame()), tmp_path, Console(file=out, width=100, color_system=None))
    lines = out.getvalue().splitlines()
    assert any("Top ops by self" in ln for ln in lines) and any("aten::mul" in ln for ln in lines), lines
    assert not [ln for ln in lines if ln != ln.rstrip()], lines
