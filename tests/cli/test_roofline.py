"""How far from the limit, as a user sees it: the console scripts, real cells, real files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import neuronexp
from helpers import FAST, run_cli, run_dirs
from neuronexp.results.outputs import OUTPUT_FILE

WRONG = '''
from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm


class WrongRMSNorm(NaiveRMSNorm):
    """The naive RMSNorm, its output off by half: what the output check must catch."""

    def forward(self, x):
        return super().forward(x) * 1.5


class Passthrough(FusedRMSNorm):
    """Fastest of all, and wrong: returns its input."""

    def forward(self, x):
        return x
'''


def _layers(root: Path) -> Path:
    (root / "wrong.py").write_text(WRONG)
    conf = root / "conf" / "module"
    conf.mkdir(parents=True)
    for name, cls in (("rmsnorm_wrong", "WrongRMSNorm"), ("passthrough", "Passthrough")):
        (conf / f"{name}.yaml").write_text(f"_target_: wrong.{cls}\nhidden_size: ${{nx.last:${{input.shape}}}}\n")
    return root / "conf"


@pytest.mark.slow  # 6 s on the 2-core VM
def test_a_single_cell_reports_its_work_roofs_memory_and_says_it_compares_nothing(
    cli, tmp_path: Path, probe_cache: Path
) -> None:
    # roofline.cache_dir beats $NEURONEXP_CACHE_DIR: the session's cache, so the probe is not measured again.
    res = cli(
        "module=rmsnorm_fused",
        *[a for a in FAST if not a.startswith("input.shape")],
        "input.shape=[1,64,512]",
        "input.dtype=float32",
        f"roofline.cache_dir={probe_cache}",
        env={"NEURONEXP_CACHE_DIR": str(tmp_path / "not-this-one")},
    )
    assert res.returncode == 0, res.stderr[-2000:]
    (job,) = run_dirs(tmp_path)
    cell = neuronexp.load(job).cells.iloc[0]
    assert cell["bytes_min"] == 2 * 64 * 512 * 4 + 512 * 4  # x read, y written, the weight read: float32
    assert cell["flops"] == 0 and "aten.rms_norm" in cell["flops_note"]
    assert cell["achieved_gbs"] == pytest.approx(cell["bytes_min"] / cell["latency_median_us"] / 1e3)
    assert cell["peak_source"].startswith("host probe") and cell["peak_bw_gbs"] > 0
    assert cell["pct_peak_bw"] == pytest.approx(100 * cell["achieved_gbs"] / cell["peak_bw_gbs"])
    assert cell["bound"] == "memory" and cell["peak_memory_bytes"] >= 64 * 512 * 4  # at least its output
    assert cell["output_check"] == "no baseline" and cell["output_tensors"] == 1 and (job / OUTPUT_FILE).is_file()
    env = json.loads((job / "env.json").read_text())
    assert env["host_roofs"]["stream"]["copy_gbs"] > 0
    assert Path(env["host_roofs"]["cache_file"]).parent == probe_cache and not (tmp_path / "not-this-one").exists()
    assert (
        "work per call: 264 kB at least" in res.stdout
        and "% of" in res.stdout
        and "output check: no baseline" in res.stdout
    )


@pytest.mark.slow
def test_a_sweep_flags_the_wrong_variant_everywhere(tmp_path: Path) -> None:
    conf = _layers(tmp_path)
    out = tmp_path / "sweep"
    keys = ("input.shape=",)
    res = run_cli(
        [
            "--config-dir",
            str(conf),
            "-m",
            "module=rmsnorm_naive,rmsnorm_fused,rmsnorm_wrong,passthrough",
            "input.shape=[1,64,512]",
            "baseline=rmsnorm_naive",
            *[a for a in FAST if not a.startswith(keys)],
            f"hydra.sweep.dir={out}",
        ],
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    cells = neuronexp.load(out).cells.set_index("module")
    assert cells.loc["rmsnorm_naive", "output_check"] == "baseline"
    assert cells.loc["rmsnorm_fused", "output_check"] == "pass" and cells.loc["rmsnorm_fused", "output_match"]
    wrong = cells.loc["rmsnorm_wrong"]
    assert wrong["output_check"] == "FAIL" and not wrong["output_match"]
    assert wrong["max_rel_err"] == pytest.approx(0.5, rel=0.02) and "output differs" in wrong["warnings"]
    assert cells.loc["passthrough", "output_check"] == "FAIL"
    assert cells.loc["passthrough", "bytes_written"] == 0  # its output is its input: nothing written
    assert "✗ output ≠ baseline" in res.stdout and "% BW" in res.stdout, res.stdout
    summary = (out / "results" / "summary.md").read_text()
    assert "## Outputs that differ from their baseline's" in summary and "rmsnorm_wrong" in summary

    report = run_cli([str(out)], cwd=tmp_path, script="neuronexp-report")
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "## How far from the limit" in text and "FAIL (rel 0.5" in text and "host probe" in text
    # Whichever variant the findings call fastest, a failing one never stands there without its flag.
    for line in text.split("## Findings", 1)[1].split("##", 1)[0].splitlines():
        for bad in ("rmsnorm_wrong", "passthrough"):
            if f": {bad}" in line:
                assert "✗ output differs from the baseline's" in line and bad in line.split("✗", 1)[1]

    other = run_cli(
        [str(out), "--baseline", "rmsnorm_wrong", "--out", "vs_wrong"], cwd=tmp_path, script="neuronexp-report"
    )
    assert other.returncode == 0, other.stderr  # checked again against the new baseline, from the saved files
    assert "| rmsnorm_naive | [1,64,512] |" in (tmp_path / "vs_wrong" / "report.md").read_text()
    again = (tmp_path / "vs_wrong" / "report.md").read_text().split("## How far from the limit", 1)[1]
    assert (
        "| rmsnorm_wrong | [1,64,512] |" in again
        and "baseline" in again.split("| rmsnorm_wrong |", 1)[1].split("\n", 1)[0]
    )


@pytest.mark.slow  # 11 s on the 2-core VM
def test_checks_and_probe_turned_off_and_roofs_given(cli, tmp_path: Path) -> None:
    res = cli("correctness.enabled=false", "roofline.probe=off", *FAST)
    assert res.returncode == 0, res.stderr[-2000:]
    (job,) = run_dirs(tmp_path)
    cell = neuronexp.load(job).cells.iloc[0]
    assert cell["output_check"] == "off" and not (job / OUTPUT_FILE).exists()
    assert cell["peak_source"].startswith("not measured") and np.isnan(cell["pct_peak_bw"])
    assert cell["bytes_min"] > 0 and "host_roofs" not in json.loads((job / "env.json").read_text())

    given = cli(
        "roofline.peak_bw_gbs=100",
        "roofline.peak_tflops=2",
        "roofline.probe=off",
        "correctness.rtol=0.2",
        "correctness.atol=0.003",
        *FAST,
        "hydra.run.dir=given",
    )
    assert given.returncode == 0, given.stderr[-2000:]
    cell = neuronexp.load(tmp_path / "given").cells.iloc[0]
    assert cell["peak_bw_gbs"] == 100 and cell["pct_peak_bw"] == pytest.approx(cell["achieved_gbs"])
    assert cell["peak_tflops"] == 2 and (cell["output_rtol"], cell["output_atol"]) == (0.2, 0.003)
    assert cell["peak_source"].startswith("given: roofline.peak_bw_gbs")


@pytest.mark.parametrize(
    "arg", ["roofline.peak_bw_gbs=-1", "correctness.rtol=-0.1", "roofline.probe=sometimes", "correctness.enabled=maybe"]
)
def test_bad_values_are_one_line_naming_the_key(cli, tmp_path: Path, arg: str) -> None:
    res = cli(arg, *FAST)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and arg.split("=")[0] in lines[0], res.stderr
    assert "Traceback" not in res.stderr and not run_dirs(tmp_path)


@pytest.mark.slow
def test_compare_carries_the_limit_columns(tmp_path: Path) -> None:
    # The user's option "mine" is the fused RMSNorm in A and a wrong layer in B: a variant that regressed into a
    # wrong answer, under the same name.
    (tmp_path / "wrong.py").write_text(WRONG)
    for name, target in (("a", "neuronexp.modules.FusedRMSNorm"), ("b", "wrong.WrongRMSNorm")):
        conf = tmp_path / f"{name}_conf" / "module"
        conf.mkdir(parents=True)
        (conf / "mine.yaml").write_text(f"_target_: {target}\nhidden_size: ${{nx.last:${{input.shape}}}}\n")
        res = run_cli(
            [
                "--config-dir",
                str(conf.parent),
                "-m",
                "module=rmsnorm_naive,mine",
                *FAST,
                "baseline=rmsnorm_naive",
                f"hydra.sweep.dir={tmp_path / name}",
            ],
            cwd=tmp_path,
        )
        assert res.returncode == 0, res.stderr[-2000:]
    assert set(neuronexp.load(tmp_path / "b").cells["output_check"]) == {"baseline", "FAIL"}
    res = run_cli(
        [str(tmp_path / "a"), str(tmp_path / "b"), "--markdown", "cmp.md", "--csv", "cmp.csv"],
        cwd=tmp_path,
        script="neuronexp-compare",
    )
    assert res.returncode == 0, res.stderr
    assert "output:" in res.stdout and "differs from its baseline's beyond tolerance (A: pass)" in res.stdout
    text = (tmp_path / "cmp.md").read_text()
    assert "## How far from the limit" in text and "| pass | FAIL |" in text
    header = (tmp_path / "cmp.csv").read_text().splitlines()[0]
    assert "pct_peak_bw_a" in header and "output_check_b" in header and "peak_memory_bytes_b" in header
