"""neuronexp-report on real sweep and run output, escaping of hostile names, bad input, and a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from helpers import FAST, run_cli, run_dirs
from helpers.svg import check_one_colour_per_variant
from neuronexp.report.html import render_html
from neuronexp.report.markdown import render_markdown
from neuronexp.report.model import build_report
from neuronexp.report.plots import figures
from neuronexp.results import frame

EVIL_OP = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def reported(sweep: Path) -> Path:
    result = run_cli([str(sweep)], cwd=sweep.parent, script="neuronexp-report")
    assert result.returncode == 0, result.stderr
    assert "report.html" in result.stdout and "[1,64,512]" in result.stdout
    return sweep


def _images(page: str) -> list[str]:
    """The plots: inline <svg> elements, one per figure."""
    return re.findall(r"<figure[^>]*>.*?(<svg\b.*?</svg>)", page, flags=re.S)


@pytest.mark.slow  # 9 s on the 2-core VM
def test_sweep_report_is_self_contained_with_plots_tables_and_links(reported: Path) -> None:
    page = (reported / "report.html").read_text()
    images = _images(page)
    # latency, speedup, achieved bandwidth, op breakdown, samples by timing round, achieved vs the roofs
    assert len(images) == 6 and all('xmlns="http://www.w3.org/2000/svg"' in img for img in images)
    # No script and nothing fetched: no src/href to any scheme but in-page ones and relative paths.
    assert "<script" not in page and not re.search(r'(src|href)="(https?:|//|file:)', page)
    assert "<img" not in page and not re.search(r"url\((?!#)", page)  # the SVGs reference only their own clip paths
    for section in (
        "Findings",
        "Experiment and environment",
        "Cells",
        "Variants side by side",
        "How far from the limit",
        "Fusion view",
        "Hotspots",
    ):
        assert f"<h2>{section}</h2>" in page
    links = re.findall(r'<a href="([^"]+)"', page)
    assert len(links) == 2 * 4  # every cell's trace, in the summary and on its hotspot card
    assert all((reported / link).is_file() for link in links)
    text = (reported / "report.md").read_text()
    assert "## Fusion view" in text and "| rmsnorm_fused | [1,64,512] |" in text and "[trace](<0/trace.json>)" in text


def test_the_environment_says_the_hosts_cpu_settings(sweep: Path) -> None:
    """From each job's env.json (host.machine): the governor, boost, SMT, isolated and tickless CPUs, as this host has
    them ("unknown" where its kernel does not say)."""
    from neuronexp.host.machine import cpu_noise

    env, here = dict(build_report(sweep).environment), cpu_noise()
    assert (env["CPU governor"], env["turbo/boost"], env["SMT"]) == (here["governor"], here["boost"], here["smt"])
    assert (env["isolated CPUs"], env["tickless CPUs"]) == (here["isolcpus"], here["nohz_full"])


def test_report_model_fusion_view_and_hotspots(sweep: Path) -> None:
    report = build_report(sweep)
    assert report.kind == "sweep" and report.baseline == "rmsnorm_naive"
    fusion = report.fusion.set_index(["input", "variant"])
    assert fusion.loc[("[1,64,512]", "rmsnorm_naive"), "ops_dispatched"] == 6  # mul ×3, mean, add, rsqrt
    assert fusion.loc[("[1,64,512]", "rmsnorm_fused"), "ops_dispatched"] == 1  # one torch.rms_norm call …
    # … that executes the same seven operations on a CPU (a composite there): nothing is fused.
    assert (
        fusion.loc[("[1,64,512]", "rmsnorm_fused"), "device_ops"]
        == fusion.loc[("[1,64,512]", "rmsnorm_naive"), "device_ops"]
        == 7
    )
    fused_new = fusion.loc[("[1,64,512]", "rmsnorm_fused"), "added"]
    assert "aten::pow" in fused_new and "aten::_fused_rms_norm" not in fused_new  # leaf ops, not the wrapper
    naive = report.cells[
        (report.cells["module"] == "rmsnorm_naive") & (report.cells["input_shape"] == "[1,64,512]")
    ].iloc[0]
    spots = report.hotspots[naive["run_id"]]
    assert "aten::mul" in set(spots["op"]) and spots["self_device_us"].is_monotonic_decreasing
    assert spots.loc[spots["op"] == "aten::mul", "calls"].iloc[0] == 3
    assert report.cells.loc[report.cells["module"] == "rmsnorm_naive", "speedup_vs_baseline"].eq(1.0).all()
    env = dict(report.environment)
    assert env["backend"] == "cpu" and env["torch"].startswith("2.") and "[1,8,64]; [1,64,512]" == env["shapes"]


def _fusion_cell(module: str, dtype: str, status: str = "ok", ref: str | None = None, **columns: float) -> dict:
    run = f"{module}-{dtype}"
    return dict(run_id=run, experiment="x", module=module, backend="cpu", device="cpu", dtype=dtype, numel=512,
                input_shape="[1,8,64]", overrides=f"module={module}", status=status, baseline_run_id=ref or run,
                latency_median_us=columns.get("latency", 10.0), device_time_us=columns.get("device", 8.0),
                device_ops=columns.get("device_ops", 4.0), ops_dispatched=columns.get("dispatched", 4.0))  # fmt: skip


def _fusion_op(run: str, op: str, calls: float = 1.0, leaf: bool = True, device_type: str = "CPU") -> dict:
    return dict(run_id=run, cycle=0, op=op, device_type=device_type, calls=calls, leaf=leaf, self_device_us=1.0)


def test_the_fusion_view_lists_the_leaf_host_ops_a_variant_lost_and_gained_against_its_usable_baseline() -> None:
    """Constructed cells of two dtypes (two input axes): float32's baseline is usable, bfloat16's failed. Only leaf
    host ops that ran (calls > 0) count, their names keyed across builds; a baseline, and a variant whose baseline
    failed, list nothing (`compared` false); a failed cell has no row."""
    from neuronexp.analysis.ops import FUSION_COLUMNS, fusion_table

    cells = [
        _fusion_cell("rmsnorm_naive", "float32", dispatched=6.0),
        _fusion_cell("rmsnorm_fused", "float32", ref="rmsnorm_naive-float32", latency=5.0, device=3.0, device_ops=2.0,
                     dispatched=1.0),
        _fusion_cell("rmsnorm_naive", "bfloat16", status="error"),
        _fusion_cell("rmsnorm_fused", "bfloat16", ref="rmsnorm_naive-bfloat16"),
    ]  # fmt: skip
    naive, fused = "rmsnorm_naive-float32", "rmsnorm_fused-float32"
    ops = [
        *(
            _fusion_op(naive, op)
            for op in ("aten::mul", "aten::div", "## Call CompiledFxGraph abc123def456ghi789jk ##")
        ),
        _fusion_op(naive, "aten::zero_", calls=0.0),  # dispatched, never ran: in neither list
        _fusion_op(fused, "aten::mul"),
        _fusion_op(fused, "aten::pow", calls=1.0),
        _fusion_op(fused, "## Call CompiledFxGraph zzz999yyy888xxx777ww ##"),  # the same graph, another build
        _fusion_op(fused, "aten::_fused_rms_norm", leaf=False),  # the wrapper: its work is its children's
        _fusion_op(fused, "triton_red_fused_0", device_type="CUDA"),  # a kernel: the host rows are the ops
        _fusion_op("rmsnorm_fused-bfloat16", "aten::pow"),
    ]
    table = fusion_table(frame("cells", cells), frame("ops", ops))
    assert list(table.columns) == FUSION_COLUMNS
    assert list(zip(table["input"], table["variant"])) == [  # inputs in order, the baseline first
        ("bfloat16 [1,8,64]", "rmsnorm_fused"),
        ("float32 [1,8,64]", "rmsnorm_naive"),
        ("float32 [1,8,64]", "rmsnorm_fused"),
    ]
    rows = table.set_index(["input", "variant"])
    base, mine, orphan = (rows.loc[k] for k in [("float32 [1,8,64]", "rmsnorm_naive"),
                                                ("float32 [1,8,64]", "rmsnorm_fused"),
                                                ("bfloat16 [1,8,64]", "rmsnorm_fused")])  # fmt: skip
    assert (mine["removed"], mine["added"]) == (["aten::div"], ["aten::pow"])
    assert bool(mine["compared"]) and not mine["is_baseline"]
    assert (mine["ops_dispatched"], mine["device_ops"], mine["device_time_us"], mine["latency_median_us"]) == (
        1.0, 2.0, 3.0, 5.0,
    )  # fmt: skip
    assert base["is_baseline"] and not base["compared"] and base["removed"] == base["added"] == []
    assert base["ops_dispatched"] == 6.0
    assert not orphan["is_baseline"] and not orphan["compared"] and orphan["removed"] == orphan["added"] == []
    # No ops profiled at all: nothing to list, every row still there.
    empty = fusion_table(frame("cells", cells), frame("ops", []))
    assert len(empty) == 3 and all(r == [] for r in [*empty["removed"], *empty["added"]])


@pytest.mark.slow  # 7 s on the 2-core VM
def test_report_of_a_single_run_written_elsewhere(tmp_path: Path) -> None:
    run = run_cli(["module=rmsnorm_fused", *FAST], cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    (job,) = run_dirs(tmp_path)
    result = run_cli([str(job), "--out", "reports/one"], cwd=tmp_path, script="neuronexp-report")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "reports" / "one"
    page = (out / "report.html").read_text()
    (link,) = set(re.findall(r'<a href="([^"]+)"', page))
    assert link.startswith("../../outputs/runs/") and (out / link).resolve() == (job / "trace.json").resolve()
    assert len(_images(page)) == 5  # latency, bandwidth, breakdown, rounds, roofs; no speedup without a baseline cell
    assert not (job / "report.html").exists()


@pytest.mark.parametrize("problem", ["empty", "missing", "damaged"])
def test_bad_input_is_one_line_exit_2_and_no_files(tmp_path: Path, problem: str) -> None:
    target = tmp_path / "dir"
    if problem != "missing":
        target.mkdir()
    if problem == "damaged":
        (target / "cells.parquet").write_bytes(b"not parquet")
        for name in ("ops", "samples"):
            (target / f"{name}.parquet").write_bytes(b"")
    result = run_cli([str(target)], cwd=tmp_path, script="neuronexp-report")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuronexp-report: error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.rglob("report.*")) and not list(tmp_path.rglob(".*tmp-*"))


def _hostile_run(job: Path, **extra) -> None:
    job.mkdir()
    labels = dict(
        run_id="r1",
        experiment="<img src=x onerror=alert(2)>",
        module="evil</td><b>",
        compiled=False,
        backend="cpu",
        device="cpu",
        device_name="cpu & <i>co</i>",
        dtype="float32",
        input_shape="[1,8]",
    )
    cell = dict(
        labels,
        numel=8,
        status="ok",
        latency_median_us=5.0,
        latency_p10_us=4.0,
        latency_p90_us=6.0,
        latency_samples=3,
        timing_method="wallclock",
        device_time_us=3.0,
        cpu_time_us=3.0,
        device_ops=1.0,
        device_time_source="cpu_self_time",
        top_op=EVIL_OP,
        top_op_share=1.0,
        overrides="module=evil",
        started_at="2026-01-01T00:00:00",
        **extra,
    )
    ops = [
        dict(
            labels,
            cycle=0,
            op=EVIL_OP,
            device_type="CPU",
            calls=1.0,
            self_cpu_us=3.0,
            cpu_total_us=3.0,
            self_device_us=3.0,
            device_total_us=3.0,
            device_share=1.0,
        )
    ]
    samples = [dict(run_id="r1", sample=i, latency_us=v) for i, v in enumerate([4.0, 5.0, 6.0])]
    for name, rows in (("cells", [cell]), ("ops", ops), ("samples", samples)):
        frame(name, rows).to_parquet(job / f"{name}.parquet")


def test_op_names_and_labels_are_escaped(tmp_path: Path) -> None:
    _hostile_run(tmp_path / "job")
    report = build_report(tmp_path / "job")
    page = render_html(report, figures(report))
    assert "<script" not in page and "<img src=x" not in page and "</td><b>" not in page and "<i>co</i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "evil&lt;/td&gt;&lt;b&gt;" in page
    text = render_markdown(report)
    assert "<script" not in text and "<img" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_the_page_is_autoescaped_but_for_the_plots_own_svg(tmp_path: Path) -> None:
    """jinja2's autoescape, spelled as html.escape spells it (the page did not change by a byte when jinja2 came in):
    a title, a figure's title and caption are text in every context (element, attribute); only the SVG is markup."""
    import dataclasses

    from neuronexp.report.sections import Plot

    _hostile_run(tmp_path / "job")
    report = dataclasses.replace(build_report(tmp_path / "job"), title='<i>"t"</i>')
    plot = Plot(title='a" onload="x', caption="<b>c</b> & 'd'", svg='<svg id="s"></svg>')
    page = render_html(report, [plot])
    assert "<title>&lt;i&gt;&quot;t&quot;&lt;/i&gt;</title>" in page and "<h1>&lt;i&gt;" in page
    assert 'aria-label="a&quot; onload=&quot;x"' in page
    assert "<figcaption>&lt;b&gt;c&lt;/b&gt; &amp; &#x27;d&#x27;" in page
    assert '<svg id="s"></svg>' in page and "<i>" not in page


def test_trace_and_neuron_profile_links(tmp_path: Path) -> None:
    job = tmp_path / "job"
    _hostile_run(job, trace_path="trace.json", neuron_profile_dir="neuron_profile", neuron_system_profile=True)
    (job / "trace.json").write_text("{}")
    (job / "neuron_profile" / "i-0abc_pid_1").mkdir(parents=True)
    page = render_html(build_report(job, tmp_path / "out"), [])
    assert '<a href="../job/trace.json">trace</a>' in page
    assert '<a href="../job/neuron_profile">Neuron profile</a>' in page
    (job / "neuron_profile" / "i-0abc_pid_1").rmdir()
    (job / "neuron_profile").rmdir()
    assert "Neuron profile</a>" not in render_html(build_report(job), [])  # a link only to what exists


def _cells(medians: dict[str, float], n: int = 50, noise: float = 0.03):
    rng = np.random.default_rng(0)
    cells, samples = [], []
    for module, median in medians.items():
        lat = median * np.exp(noise * rng.standard_normal(n))
        cells.append(
            dict(
                run_id=module,
                experiment="x",
                module=module,
                compiled=False,
                backend="cpu",
                device="cpu",
                dtype="float32",
                input_shape="[1,8]",
                numel=8,
                status="ok",
                latency_median_us=float(np.median(lat)),
            )
        )
        samples += [dict(run_id=module, sample=i, latency_us=float(v)) for i, v in enumerate(lat)]
    return frame("cells", cells), frame("samples", samples)


def test_findings_give_the_speedup_with_its_interval_and_call_ties() -> None:
    from neuronexp.analysis.baseline import parse_baseline
    from neuronexp.analysis.variants import add_speedups
    from neuronexp.report.findings import findings

    cells, samples = _cells({"rmsnorm_naive": 100.0, "rmsnorm_fused": 101.0, "rmsnorm_compiled": 50.0})
    (line,) = findings(add_speedups(cells, parse_baseline("rmsnorm_naive"), samples), samples, {})
    assert line.startswith("[1,8]: rmsnorm_compiled fastest") and re.search(
        r"×(1\.9|2\.0)\d vs rmsnorm_naive \(95% CI", line
    )
    cells, samples = _cells({"rmsnorm_naive": 100.0, "rmsnorm_fused": 100.5})
    (line,) = findings(add_speedups(cells, parse_baseline("rmsnorm_naive"), samples), samples, {})
    assert "ties with" in line and "vs rmsnorm_naive" not in line
    # No baseline: nothing is ranked, each cell stands alone.
    alone = findings(cells, samples, {})
    assert [ln.split(" ")[1] for ln in alone] == ["rmsnorm_naive", "rmsnorm_fused"]
    assert not any("fastest" in ln or "ties" in ln or "×" in ln for ln in alone)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def browser() -> str:
    """Debian's chromium; the test skips without it, except where NEURONEXP_REQUIRE_BROWSER=1 (CI: .ci/run sets
    it) makes a missing browser a failure, so CI cannot pass without running this test."""
    found = _chromium()
    if found is None:
        if os.environ.get("NEURONEXP_REQUIRE_BROWSER") == "1":
            pytest.fail("NEURONEXP_REQUIRE_BROWSER=1 but chromium is not on PATH (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def _headless(browser: str, page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        page.resolve().as_uri(),
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def _console_messages(stderr: str) -> list[str]:
    # Chromium logs every page console message (errors, uncaught exceptions) as INFO:CONSOLE lines.
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.browser
@pytest.mark.slow  # 4 s on the 2-core VM
def test_report_renders_in_headless_chromium(browser: str, reported: Path, tmp_path: Path) -> None:
    # Control: the console check must see a page's errors, or a clean result below would mean nothing.
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><p>x</p><script>console.error("boom"); undefinedFn();</script>')
    control = _headless(browser, bad, tmp_path / "profile-control", "--dump-dom")
    assert any("boom" in line for line in _console_messages(control.stderr)), control.stderr[-2000:]

    page = reported / "report.html"
    dom = _headless(browser, page, tmp_path / "profile-dom", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console_messages(dom.stderr) == []
    assert dom.stdout.count("<table") >= 4 + 4 and len(_images(dom.stdout)) == 6  # + a hotspot table per cell
    assert "aten::mul" in dom.stdout and "Fusion view" in dom.stdout
    # As the browser parsed it: each variant one colour, the legend's, in every plot; every speedup bar its interval.
    marks = check_one_colour_per_variant(dom.stdout, variants=2)
    assert marks["bars"] == {(1, 0), (1, 1)}  # rmsnorm_fused over the baseline, on both inputs

    shot = tmp_path / "report.png"
    run = _headless(
        browser, page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,3200", "--hide-scrollbars"
    )
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    assert _console_messages(run.stderr) == []
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    # Tall enough for the plots below the environment, cells and roofline tables.
    assert pixels.shape == (3200, 1280, 3)
    # The plots drew: matplotlib's coloured lines, bands and bars are the only saturated colour on the page
    # besides link text, so a broken or missing image leaves almost none.
    saturated = int((pixels.max(axis=2) - pixels.min(axis=2) > 80).sum())
    assert saturated > 5000, saturated
    # Both variant colours are painted beyond their 12×12 legend swatches (144 pixels): lines, markers, bars,
    # breakdown labels. Not much more can be asked of the baseline's: two equal variants' lines overlap.
    for colour in marks["legend"].values():
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        assert int((np.abs(pixels - rgb).max(axis=2) <= 8).sum()) > 144 + 40, colour


# Measures the laid-out page: where the cells table's box ends, the table's own width, and the page's.
_LAYOUT_PROBE = """<script>window.addEventListener("load", () => {
  const table = document.querySelector("table.summary"), box = table.parentElement.getBoundingClientRect();
  console.log("NX-LAYOUT " + JSON.stringify({page: document.documentElement.scrollWidth, window: window.innerWidth,
    right: box.right, box: box.width, table: table.getBoundingClientRect().width}));
});</script>"""


@pytest.mark.browser
@pytest.mark.slow  # 3 s on the 2-core VM
def test_the_cells_table_stays_within_the_page_at_1400_px(browser: str, reported: Path, tmp_path: Path) -> None:
    # A copy with a measuring script (the report itself has none): the cells table's fourteen columns fit a 1400 px
    # window, and the page never scrolls sideways (a wider table scrolls in its own box).
    probe = tmp_path / "probe.html"
    probe.write_text((reported / "report.html").read_text().replace("</body>", _LAYOUT_PROBE + "</body>"))
    run = _headless(browser, probe, tmp_path / "profile-layout", "--dump-dom", "--window-size=1400,900")
    (line,) = [ln for ln in _console_messages(run.stderr) if "NX-LAYOUT" in ln]
    layout = json.loads(re.search(r"NX-LAYOUT (\{.*?\})", line)[1].replace('\\"', '"'))
    assert layout["page"] <= layout["window"] and layout["right"] <= layout["window"], layout
    assert layout["table"] <= layout["box"] + 0.5, layout  # no scrolling needed at this width


# Where the answer is on the laid-out page: the findings list's box and the speedup chart's, and the window's height.
_FIRST_SCREEN_PROBE = """<script>window.addEventListener("load", () => {
  const box = (el) => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  console.log("NX-FIRST " + JSON.stringify({window: window.innerHeight,
    findings: box(document.querySelector("ul.findings")),
    chart: box(document.querySelector('figure[aria-label^="Speedup vs"] svg')),
    environment: box([...document.querySelectorAll("h2")].find((h) => h.textContent.startsWith("Experiment")))}));
});</script>"""


@pytest.mark.browser
@pytest.mark.slow  # 3 s on the 2-core VM
@pytest.mark.parametrize("window", ["1400,900", "1280,800"])
def test_the_first_screen_is_the_findings_and_the_speedup_chart(
    browser: str, reported: Path, tmp_path: Path, window: str
) -> None:
    """Opened, the report shows its answer: the findings and, whole, the speedup chart they state; what was measured
    and how (environment, tables, the other plots) comes after."""
    probe = tmp_path / "probe.html"
    probe.write_text((reported / "report.html").read_text().replace("</body>", _FIRST_SCREEN_PROBE + "</body>"))
    run = _headless(browser, probe, tmp_path / "profile-first", "--dump-dom", f"--window-size={window}")
    (line,) = [ln for ln in _console_messages(run.stderr) if "NX-FIRST" in ln]
    seen = json.loads(re.search(r"NX-FIRST (\{.*\})", line)[1].replace('\\"', '"'))
    height = seen["window"]
    assert seen["findings"]["top"] < seen["chart"]["top"] < seen["chart"]["bottom"] <= height, seen
    assert seen["environment"]["top"] > seen["chart"]["bottom"], seen


def test_a_shared_report_names_no_absolute_path(sweep: Path, tmp_path: Path) -> None:
    """The header names the directory by its name (the report inside it) or the way from the report to it (--out),
    and the links are relative: the page can be shared, moved or zipped without the machine's paths in it."""
    for out, shown in ((sweep, sweep.name), (tmp_path / "elsewhere", "../" + sweep.name)):
        if out != sweep:
            shutil.copytree(sweep, tmp_path / sweep.name)
            res = run_cli([sweep.name, "--out", "elsewhere"], cwd=tmp_path, script="neuronexp-report")
        else:
            res = run_cli([str(sweep)], cwd=sweep.parent, script="neuronexp-report")
        assert res.returncode == 0, res.stderr
        for name in ("report.html", "report.md"):
            text = (out / name).read_text()
            assert str(sweep.parent) not in text and str(tmp_path) not in text and "/tmp/" not in text, name
        assert f"sweep <code>{shown}</code>" in (out / "report.html").read_text()
        assert f"sweep `{shown}`" in (out / "report.md").read_text()
