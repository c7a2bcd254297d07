"""neuronexp.Results, the façade over what the reader commands do (as HTA's TraceAnalysis is over its analyses): what
load, run and sweep return; a short repr and a notebook table of the findings; the findings as data; and hotspots,
compare, report and plot, each the command's own code, so each gives what the command gives."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest

import neuronexp
from helpers import FAST, run_cli
from neuronexp.analysis.ops import hotspots
from neuronexp.report.findings import FINDING_COLUMNS
from neuronexp.report.model import ReportError, build_report
from neuronexp.results import Results as Tables

CPU = [*FAST, "backend=cpu", "input.dtype=float32", "roofline.probe=off", "input.shape=[1,8,64],[1,16,128]"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[Path, neuronexp.Results]:
    out = tmp_path_factory.mktemp("facade") / "sweep"
    return out, neuronexp.sweep("module=rmsnorm_naive,rmsnorm_fused", *CPU, baseline="rmsnorm_naive", out=out)


def test_load_run_and_sweep_return_the_facade_which_is_still_the_tables(swept) -> None:
    out, res = swept
    loaded = neuronexp.load(out)
    for found in (res, loaded):
        assert isinstance(found, neuronexp.Results) and isinstance(found, Tables)
        cells, ops, samples = found  # unpacks as the tables always did
        assert len(cells) == 4 and not ops.empty and not samples.empty and found.source == out


def test_the_repr_is_a_few_lines_with_the_findings_not_the_tables(swept) -> None:
    out, res = swept
    text = repr(res)
    lines = text.splitlines()
    assert lines[0].startswith(f"neuronexp.Results · sweep {out} · 4 cell(s): 4 ok · baseline rmsnorm_naive")
    assert lines[1:] == build_report(out).findings  # the report's sentences, as neuronexp-report prints them
    assert "rows x" not in text and "latency_median_us" not in text and len(lines) <= 8


def test_the_notebook_shows_the_findings_table_and_the_sentences(swept) -> None:
    _, res = swept
    page = res._repr_html_()
    assert page.count("<tr><td>") == 4 and "<th>speedup (95% CI)</th>" in page and page.count("<li>") >= 2
    findings = build_report(res.source).findings
    assert all(line.replace("'", "&#x27;") in page for line in findings if "<" not in line)


def test_the_findings_are_data_and_say_what_the_report_says(swept) -> None:
    _, res = swept
    found = res.findings
    assert list(found.columns) == FINDING_COLUMNS and len(found) == 4
    assert set(found["outcome"]) <= {"fastest", "tie", "slower", "noisy", "no finding"}
    assert found.groupby("input")["baseline"].sum().eq(1).all()  # one baseline per group
    assert found.loc[found["baseline"], "variant"].eq("rmsnorm_naive").all()
    sentences = set(build_report(res.source).findings)
    assert set(found["finding"]) <= sentences and found["finding"].nunique() == 2  # one sentence per group
    fused = found[~found["baseline"]].set_index("run_id")
    cells = res.cells.set_index("run_id").loc[fused.index]
    pd.testing.assert_series_equal(fused["speedup"], cells["speedup_vs_baseline"], check_names=False)


def test_hotspots_are_the_reports_per_cell(swept) -> None:
    _, res = swept
    spots = res.hotspots(top=3)
    expected = hotspots(res.ops, top=3)
    assert set(spots["run_id"]) == set(expected) and spots.groupby("run_id").size().le(3).all()
    for run, ops in expected.items():
        assert list(spots.loc[spots["run_id"] == run, "op"]) == list(ops["op"])


def _page(path: Path) -> str:
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated <time>", path.read_text())


def test_report_writes_what_neuronexp_report_writes(swept, tmp_path: Path) -> None:
    out, res = swept
    page = res.report(tmp_path / "mine")
    assert page == tmp_path / "mine" / "report.html"
    done = run_cli([str(out), "--out", str(tmp_path / "cli")], cwd=tmp_path, script="neuronexp-report")
    assert done.returncode == 0, done.stderr
    assert _page(page) == _page(tmp_path / "cli" / "report.html")
    assert (tmp_path / "mine" / "report.md").read_text() == (tmp_path / "cli" / "report.md").read_text()


def test_compare_is_neuronexp_compares(swept, tmp_path: Path) -> None:
    out, res = swept
    cmp = res.compare(neuronexp.load(out))
    done = run_cli([str(out), str(out), "--csv", "c.csv"], cwd=tmp_path, script="neuronexp-compare")
    assert done.returncode == 0, done.stderr
    cli = pd.read_csv(tmp_path / "c.csv")
    assert list(cmp.cells["verdict"]) == list(cli["verdict"]) and list(cmp.cells["ratio"]) == list(cli["ratio"])
    assert cmp.cells["p_faster"].round(6).tolist() == cli["p_faster"].round(6).tolist()


def test_plot_is_the_reports_speedup_chart(swept) -> None:
    _, res = swept
    figure = res.plot()
    svg = figure._repr_svg_()  # what a notebook draws
    assert svg.startswith("<svg") and 'id="nx-speedup-1-0"' in svg and 'id="nx-speedup-1-1"' in svg
    assert figure.axes[0].get_ylabel() == "speedup: baseline median ÷ median"


def test_tables_from_two_directories_say_why_the_readers_need_one(swept) -> None:
    out, _ = swept
    loaded = neuronexp.load(out)
    several = neuronexp.Results.of_tables(
        loaded._replace(cells=loaded.cells.assign(source_dir=[str(out), str(out), "elsewhere", "elsewhere"]))
    )
    assert several.source is None and repr(several).startswith(f"neuronexp.Results from {out}, elsewhere")
    with pytest.raises(ReportError, match=f"one run or sweep directory; these come from {re.escape(str(out))}"):
        several.findings  # noqa: B018
    with pytest.raises(ReportError, match="none: tables built in memory"):
        neuronexp.Results.of_tables(loaded._replace(cells=loaded.cells.drop(columns="source_dir"))).plot()


def test_the_first_line_counts_each_table_and_the_notebook_table_has_a_row_per_finding(swept) -> None:
    out, res = swept
    assert (
        repr(res).splitlines()[0].endswith(f" · tables: cells (4), ops ({len(res.ops)}), samples ({len(res.samples)})")
    )
    page = res._repr_html_()
    header = "".join(f"<th>{h}</th>" for h in ("input", "variant", "median", "speedup (95% CI)", "outcome"))
    assert f"<tr>{header}</tr>" in page
    assert f"<p><b>{repr(res).splitlines()[0]}</b></p>" in page  # the repr's first line heads it
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr><td>.*?</tr>", page)]
    found = res.findings
    assert [r[1] for r in rows] == list(found["variant"]) and [r[4] for r in rows] == list(found["outcome"])
    assert all(r[2].endswith("µs") for r in rows)
    assert all(re.match(r"×\d", r[3]) for r in rows)  # each cell's speedup over its group's baseline


def test_hotspots_keep_each_cells_eight_slowest_operators_by_default(swept) -> None:
    _, res = swept
    every = hotspots(res.ops, top=100)
    assert max(len(ops) for ops in every.values()) > 8  # rmsnorm_naive's leaf operators
    spots = res.hotspots()
    assert spots.groupby("run_id").size().to_dict() == {run: min(len(ops), 8) for run, ops in every.items()}
    assert list(spots.index) == list(range(len(spots)))  # one table, numbered anew
    named = res.findings.set_index("run_id")  # each cell's variant and input, as the findings name them
    assert list(spots["variant"]) == list(named.loc[spots["run_id"], "variant"])
    assert list(spots["input"]) == list(named.loc[spots["run_id"], "input"])


def test_a_single_run_has_no_speedup_to_draw_and_says_so(tmp_path: Path) -> None:
    one = [a for a in CPU if not a.startswith("input.shape")]
    res = neuronexp.run("module=rmsnorm_fused", *one, out=tmp_path / "r")
    head = repr(res).splitlines()[0]
    assert head.startswith(f"neuronexp.Results · run {tmp_path / 'r'} · 1 cell(s): 1 ok · baseline — · tables: ")
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr><td>.*?</tr>", res._repr_html_())]
    assert [r[1] for r in rows] == ["rmsnorm_fused"] and rows[0][3] == "—"  # no speedup: a dash
    with pytest.raises(ReportError) as raised:
        res.plot()
    assert str(raised.value) == (
        "no speedup to draw: no cell has a baseline (sweep with baseline=MODULE, or report one)"
    )
    assert res.report() == tmp_path / "r" / "report.html" and (tmp_path / "r" / "report.md").is_file()  # its source


def test_tables_built_in_memory_show_their_sizes_only() -> None:
    from neuronexp.results import no_results

    res = neuronexp.Results.of_tables(no_results())
    assert res.source is None and repr(res) == "neuronexp.Results · tables: cells (0), ops (0), samples (0)"
    with pytest.raises(ReportError) as raised:
        res.hotspots()
    assert str(raised.value) == (
        "this needs the results of one run or sweep directory; these come from none: tables built in memory"
    )


def test_tables_from_two_directories_name_both_in_the_refusal(swept) -> None:
    out, res = swept
    several = neuronexp.Results.of_tables(res._replace(cells=res.cells.assign(source_dir=[str(out)] * 3 + ["b"])))
    with pytest.raises(ReportError) as raised:
        several.plot()
    assert str(raised.value) == f"this needs the results of one run or sweep directory; these come from {out}, b"


def test_report_and_compare_take_the_commands_options(swept, tmp_path: Path) -> None:
    out, res = swept
    res.report(tmp_path / "b", baseline="rmsnorm_fused", top=2)  # neuronexp-report --baseline rmsnorm_fused --top 2
    page = (tmp_path / "b" / "report.md").read_text()
    assert f"sweep `{os.path.relpath(out, tmp_path / 'b')}` · 4 cell(s): 4 ok · baseline rmsnorm_fused" in page
    cards = page.split("\n## Hotspots\n")[1].split("\n## ")[0].split("\n### ")[1:]  # a card per cell
    rows = [sum(line.startswith("| ") for line in card.splitlines()) - 1 for card in cards]  # less the header
    assert rows == [2, 2, 2, 2]  # each cell's two slowest ops (rmsnorm_naive has more than eight)
    assert res.compare(neuronexp.load(out), ignore=["threads"]).ignored == ["threads"]  # --ignore threads


def test_a_run_without_operators_has_an_empty_hotspots_table_with_its_columns(tmp_path: Path) -> None:
    one = [a for a in CPU if not a.startswith("input.shape")]
    res = neuronexp.run("module._target_=helpers.layers.Broken", *one, out=tmp_path / "bad")
    spots = res.hotspots()
    assert list(res.cells["status"]) == ["error"] and res.ops.empty
    assert spots.empty and list(spots.columns) == [
        "variant",
        "input",
        "op",
        "calls",
        "self_device_us",
        "share",
        "run_id",
    ]


def test_a_run_with_time_per_module_returns_its_modules_table(tmp_path: Path) -> None:
    one = [a for a in CPU if not a.startswith("input.shape")]
    res = neuronexp.run("module=rmsnorm_naive", *one, "profiler.modules=true", out=tmp_path / "r")
    assert not res.modules.empty and res.modules.equals(neuronexp.load(tmp_path / "r").modules)
    assert set(res.modules["run_id"]) == set(res.cells["run_id"])
