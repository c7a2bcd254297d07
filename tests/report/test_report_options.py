"""neuronexp-report's options as a user types them (--baseline, --top), its failed-cells section, and exit 2 for an
output it cannot write: each checked against what the report says, on real sweeps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST, run_cli
from helpers.layers import FAILING_LAYER


def _report(sweep: Path, out: Path, *flags: str):
    res = run_cli([str(sweep), "--out", str(out), *flags], cwd=out.parent, script="neuronexp-report")
    assert res.returncode == 0, res.stderr
    return res, (out / "report.md").read_text(), (out / "report.html").read_text()


def _hotspot_rows(md: str) -> dict[str, int]:
    """Rows of each hotspot table in report.md, by its heading (variant · input)."""
    part = md.split("## Hotspots", 1)[1]
    sections = re.split(r"^### (.+)$", part, flags=re.M)[1:]
    return {
        head: sum(1 for ln in body.splitlines() if ln.startswith("|")) - 2
        for head, body in zip(sections[::2], sections[1::2])
    }


@pytest.mark.slow  # 6 s on the 2-core VM
def test_baseline_picks_whom_the_report_compares_with(sweep: Path, tmp_path: Path) -> None:
    cells = neuronexp.load(sweep).cells.set_index("module")
    assert set(cells["baseline_run_id"]) == {
        cells.loc["rmsnorm_naive", "run_id"].iloc[0],
        cells.loc["rmsnorm_naive", "run_id"].iloc[1],
    }  # swept with baseline=rmsnorm_naive
    res, md, html = _report(sweep, tmp_path / "default")
    assert "baseline rmsnorm_naive" in res.stdout and "| speedup vs rmsnorm_naive |" in md
    res, md, html = _report(sweep, tmp_path / "fused", "--baseline", "rmsnorm_fused")
    assert "baseline rmsnorm_fused" in res.stdout and "· baseline rmsnorm_fused" in md
    assert "| speedup vs rmsnorm_fused |" in md and "speedup vs rmsnorm_naive" not in md + html
    # The fused rows are now the reference (×1.00), the naive ones are measured against them.
    # A row may carry the noisy mark (~) before its variant on a busy machine.
    rows = [ln for ln in md.split("## Cells", 1)[1].split("##", 1)[0].splitlines() if re.match(r"\| ~?rmsnorm_", ln)]
    assert len(rows) == 4 and all(("×1.00 |" in r) == bool(re.match(r"\| ~?rmsnorm_fused", r)) for r in rows), rows
    res, md, html = _report(sweep, tmp_path / "none", "--baseline", "none")
    assert (
        "baseline —" in res.stdout
        and "speedup vs" not in md + html
        and not re.search(r"(?<!spread )×\d", md.split("## Cells", 1)[1])
    )


@pytest.mark.slow  # 5 s on the 2-core VM
def test_top_caps_each_hotspot_table(sweep: Path, tmp_path: Path) -> None:
    _, md, _ = _report(sweep, tmp_path / "default")
    default = _hotspot_rows(md)
    assert len(default) == 4 and max(default.values()) == 8  # the naive cells profile more than 8 ops
    _, md, _ = _report(sweep, tmp_path / "top2", "--top", "2")
    assert _hotspot_rows(md) == {head: 2 for head in default}


@pytest.fixture(scope="module")
def failed_sweep(tmp_path_factory) -> Path:
    """A real sweep of 2 cells, one of which raises: an ok row and an error row."""
    root = tmp_path_factory.mktemp("failed_report")
    (root / "failing.py").write_text(FAILING_LAYER)
    out = root / "sweep"
    quick = [a for a in FAST if not a.startswith("input.shape")]
    res = run_cli(
        [
            "-m",
            "module._target_=failing.FailsOnWideInputs",
            "~module.hidden_size",
            "~module.eps",
            "input.shape=[1,8,32],[1,8,128]",
            *quick,
            f"hydra.sweep.dir={out}",
        ],
        cwd=root,
    )
    assert res.returncode == 1, res.stderr
    return out


@pytest.mark.slow
def test_failed_cells_have_their_own_section_in_html_and_markdown(failed_sweep: Path, tmp_path: Path) -> None:
    res, md, html = _report(failed_sweep, tmp_path / "out")
    assert "1 ok, 1 error" in res.stdout or "1 error, 1 ok" in res.stdout, res.stdout
    section = md.split("## Failed cells", 1)[1].split("\n## ", 1)[0]
    items = [ln for ln in section.splitlines() if ln.startswith("- ")]
    assert len(items) == 1 and "[1,8,128]" in items[0] and "RuntimeError: unsupported width 128" in items[0], section
    failed = re.search(r"<h2>Failed cells</h2><ul>(.*?)</ul>", html, flags=re.S)
    assert failed and failed.group(1).count("<li>") == 1
    assert "[1,8,128]" in failed.group(1) and "RuntimeError: unsupported width 128" in failed.group(1)
    assert "[1,8,32]" not in failed.group(1)


def test_a_report_on_a_sweep_without_failures_has_no_failed_section(sweep: Path, tmp_path: Path) -> None:
    _, md, html = _report(sweep, tmp_path / "out")
    assert "Failed cells" not in md + html


@pytest.mark.parametrize("where", ["under_a_file", "report_md_is_a_directory"])
def test_an_output_it_cannot_write_is_one_line_and_exit_2(sweep: Path, tmp_path: Path, where: str) -> None:
    # Root may write anywhere: what cannot be written is a path through a file, or a directory in the way.
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "sub" if where == "under_a_file" else tmp_path / "out"
    if where == "report_md_is_a_directory":
        (out / "report.md").mkdir(parents=True)
    res = run_cli([str(sweep), "--out", str(out)], cwd=tmp_path, script="neuronexp-report")
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuronexp-report: error: ") and "Traceback" not in res.stderr
    assert (tmp_path / "afile").read_text() == "x"
    # No temporary file left behind where the report was being written.
    assert not [p for p in tmp_path.rglob("*") if ".tmp" in p.name]


@pytest.mark.slow  # 4 s on the 2-core VM
def test_an_environment_value_that_differs_between_jobs_lists_every_value(sweep: Path, tmp_path: Path) -> None:
    import json
    import shutil

    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    jobs = sorted(p.parent for p in copy.glob("*/env.json"))
    assert len(jobs) == 4
    env = json.loads((jobs[-1] / "env.json").read_text())
    host = env["host"]
    env["host"] = "another-node"  # one job ran elsewhere
    (jobs[-1] / "env.json").write_text(json.dumps(env))
    _, md, html = _report(copy, tmp_path / "out")
    assert f"| host | {host}; another-node |" in md, md.split("## Cells")[0]
    _, md, _ = _report(sweep, tmp_path / "same")  # all jobs alike: the one value
    assert f"| host | {host} |" in md
