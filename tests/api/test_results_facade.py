"""neuronexp.Results, the façade over what the reader commands do (as HTA's TraceAnalysis is over its analyses): what
load, run and sweep return; a short repr and a notebook table of the findings; the findings as data; and hotspots,
compare, report and plot, each the command's own code, so each gives what the command gives."""

from __future__ import annotations

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
