"""The built-in studies and the Hugging Face examples as a user runs them: each experiment through the console
script at tiny shapes on the CPU, names that never collide, baselines as a rule, inputs from YAML alone."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pandas as pd
import pytest

import neuronexp
from helpers import EXPERIMENTS, FAST, run_cli
from neuronexp.analysis.noise import NOISE_WARNING

QUICK = [a for a in FAST if not a.startswith("input.shape")]
STUDIES = ["layernorm", "softmax", "swiglu", "rotary", "attention", "decoder"]
needs_hf = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers not installed (pip install '.[hf]')"
)


def _sweep(cli, sweep: Path, *args: str):
    res = cli(*args, *QUICK, f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr[-3000:]
    return res, neuronexp.load(sweep).cells


@pytest.mark.parametrize("study", STUDIES)
@pytest.mark.slow  # 34 s on the 2-core VM
def test_each_study_runs_its_naive_and_fused_variants_against_the_naive_baseline(
    cli, tmp_path: Path, study: str
) -> None:
    # The experiment as shipped, at tiny dimensions and one sequence length, eager only (compiles are slow here).
    res, cells = _sweep(
        cli, tmp_path / "s", f"+experiment={study}", "shapes=tiny", "dims.seq=8", "compile.enabled=false"
    )
    assert sorted(cells["module"]) == [f"{study}_fused", f"{study}_naive"] and (cells["status"] == "ok").all()
    assert (cells["experiment"] == study).all() and (cells["dtype"] == "bfloat16").all()
    naive = cells.set_index("module").loc[f"{study}_naive"]
    assert (cells["baseline_run_id"] == naive["run_id"]).all()
    fused = cells.set_index("module").loc[f"{study}_fused"]
    # Timed paired with its baseline: the median per-pair ratio, inside its own interval.
    assert fused["speedup_method"] == "paired" and fused["timing_group"] == naive["timing_group"]
    assert fused["speedup_ci_low"] <= fused["speedup_vs_baseline"] <= fused["speedup_ci_high"]
    caption = f"×speedup vs module={study}_naive, compile.enabled=false"
    assert caption in (tmp_path / "s" / "results" / "summary.md").read_text()
    assert caption.split(",")[0] in " ".join(res.stdout.split())  # the terminal title (wrapped at any width)


@pytest.mark.slow
def test_a_study_with_its_compile_axis(cli, tmp_path: Path) -> None:
    _, cells = _sweep(cli, tmp_path / "s", "+experiment=softmax", "shapes=tiny", "dims.seq=8")
    assert len(cells) == 4 and (cells["status"] == "ok").all() and cells["compiled"].sum() == 2
    # One reference for the four variants of the input: the naive module, eager.
    (ref,) = cells.loc[(cells["module"] == "softmax_naive") & ~cells["compiled"], "run_id"]
    assert (cells["baseline_run_id"] == ref).all() and cells["speedup_vs_baseline"].notna().all()


@pytest.mark.slow  # 10 s on the 2-core VM
def test_a_swept_constructor_argument_names_every_cell_everywhere(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    res, cells = _sweep(
        cli,
        sweep,
        "-m",
        "module=swiglu_naive",
        "module.intermediate_size=32,48",
        "input.shape=[1,8,64],[1,16,64]",
        "baseline=rmsnorm_naive",
    )
    assert len(cells) == 4
    # The swept argument is a column of its own, typed, in what neuronexp.load returns and in results/cells.csv.
    assert sorted(cells["intermediate_size"].tolist()) == [32, 32, 48, 48]
    assert '"intermediate_size"' in (sweep / "results" / "cells.csv").read_text().splitlines()[0].split(",")
    names = [f"swiglu_naive intermediate_size={n}" for n in (32, 48)]
    summary = (sweep / "results" / "summary.md").read_text()
    assert f"| input_shape | {names[0]} | {names[1]} |" in summary
    table = res.stdout.splitlines()
    assert any(names[0] in line and names[1] in line for line in table)  # two variant columns of the table
    assert sum(line.startswith("│ [1,16,64]") for line in table) == 1  # one row per shape, no cell lost
    # A baseline that no cell matches: said so, and no speedup anywhere.
    assert "baseline rmsnorm_naive is not in this sweep: no speedups" in " ".join(res.stdout.split())
    # (a noisy cell's round spread past 100% is a factor too, "rounds spread ×3.2": not a speedup)
    assert not re.search(r"(?<!spread )×\d", res.stdout) and cells["speedup_vs_baseline"].isna().all()
    # The report: four rows told apart, and another baseline by rule.
    rep = run_cli([str(sweep), "--baseline", "module.intermediate_size=32"], cwd=tmp_path, script="neuronexp-report")
    assert rep.returncode == 0, rep.stderr
    text = (sweep / "report.md").read_text()
    assert all(f"| {n} | {s} |" in text for n in names for s in ("[1,8,64]", "[1,16,64]"))
    assert "speedup vs intermediate_size=32" not in text and "speedup vs module.intermediate_size=32" in text
    section = text.split("## Cells", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| swiglu_naive intermediate_size=")]
    # Another layer size computes another function: outputs are not checked against it.
    limits = text.split("## How far from the limit", 1)[1].split("\n## ", 1)[0]
    assert "FAIL" not in limits and "| n/a |" in limits
    assert len(rows) == 4 and all(re.search(r"\| ×\d+\.\d\d( \([\d.]+–[\d.]+\))?†? \|", line) for line in rows)
    assert all("| ×1.00 |" in line for line in rows if "=32 |" in line)  # each shape's reference
    bad = run_cli([str(sweep), "--baseline", "module=nosuch"], cwd=tmp_path, script="neuronexp-report")
    assert bad.returncode == 2 and bad.stderr.startswith(
        "neuronexp-report: error: --baseline module=nosuch: no cell matches it"
    )
    # compare names cells the same way
    cmp = run_cli([str(sweep), str(sweep)], cwd=tmp_path, script="neuronexp-compare")
    assert cmp.returncode == 0, cmp.stderr
    assert all(f"{n} · {s}" in cmp.stdout for n in names for s in ("[1,8,64]", "[1,16,64]"))


@pytest.mark.slow  # 7 s on the 2-core VM
def test_inputs_from_yaml_drive_a_layer_with_keyword_and_tuple_inputs(cli, tmp_path: Path) -> None:
    # A positional tensor, a keyword factory and a keyword literal, all from the command line.
    layer = tmp_path / "kwlayer.py"
    layer.write_text(
        "import torch\n"
        "class KW(torch.nn.Module):\n"
        "    def forward(self, x, pair, *, scale=1.0, mask=None):\n"
        "        assert isinstance(pair, tuple) and mask is None\n"
        "        return x * scale + pair[0].sum() + pair[1]\n"
    )
    res = cli(
        "module._target_=kwlayer.KW",
        "~module.hidden_size",
        "~module.eps",
        "input.shape=[2,8]",
        "+input.args=[[{shape:[3],fill:ones},2]]",
        "+input.kwargs.scale=0.5",
        "+input.kwargs.mask=null",
        *QUICK,
    )
    assert res.returncode == 0, res.stderr
    typo = cli("module._target_=kwlayer.KW", "~module.hidden_size", "~module.eps", "+input.kwargs.scael=1", *QUICK)
    assert typo.returncode == 2 and "input.kwargs.scael=1: not a parameter of KW.forward" in typo.stderr


@needs_hf
@pytest.mark.hf
@pytest.mark.slow
def test_hugging_face_llama_layers_from_yaml_alone(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    _, cells = _sweep(
        cli,
        sweep,
        "--config-dir",
        str(EXPERIMENTS),
        "+experiment=hf_llama_layers",
        "dims.seq=8",
        "compile.enabled=false",
    )
    assert sorted(cells["module"]) == ["llama_attention", "llama_decoder_layer", "llama_mlp", "llama_rmsnorm"]
    # No warning but what the machine's load and the profiler's overhead on a layer of many tiny ops may add
    # (this shared VM is often busy): no fallback, no unused input.
    measured = (NOISE_WARNING, "profiled time per step is")
    others = [w for ws in cells["warnings"].dropna() for w in ws.split(" | ") if not w.startswith(measured)]
    assert (cells["status"] == "ok").all() and others == [], others
    # Every kind of input spec at once: factories (mask, rotary), a filled tensor, a literal; eager attention.
    res = cli(
        "--config-dir",
        str(EXPERIMENTS),
        "module=llama_decoder_layer_eager",
        "shapes=tiny",
        "dims.seq=8",
        *QUICK,
        f"hydra.sweep.dir={tmp_path / 'eager'}",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert neuronexp.load(tmp_path / "eager").cells["status"].eq("ok").all()


@needs_hf
@pytest.mark.hf
@pytest.mark.slow  # 6 s on the 2-core VM
def test_a_hugging_face_failure_keeps_its_root_cause_and_traceback(cli, tmp_path: Path) -> None:
    res = cli(
        "--config-dir",
        str(EXPERIMENTS),
        "module=llama_decoder_layer",
        "input.shape=[1,8,64]",
        "dims.heads=4",
        "dims.kv_heads=2",
        "dims.head_dim=16",
        "dims.intermediate=32",
        "input.kwargs.position_embeddings=null",
        *QUICK,
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert res.returncode == 1
    row = pd.read_parquet(tmp_path / "run" / "cells.parquet").iloc[0]
    assert row["error"] == "TypeError: cannot unpack non-iterable NoneType object"
    assert "modeling_llama.py" in (tmp_path / "run" / "error.log").read_text()


@needs_hf
@pytest.mark.hf
@pytest.mark.slow  # 14 s on the 2-core VM
def test_the_issues_constructor_sweep_on_llama_mlp_shows_four_cells(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    res, cells = _sweep(
        cli,
        sweep,
        "--config-dir",
        str(EXPERIMENTS),
        "-m",
        "module=llama_mlp",
        "module.config.intermediate_size=256,512",
        "input.shape=[1,16,256],[1,64,256]",
    )
    assert len(cells) == 4 and (cells["status"] == "ok").all()
    summary = (sweep / "results" / "summary.md").read_text()
    assert "| input_shape | llama_mlp intermediate_size=256 | llama_mlp intermediate_size=512 |" in summary
    assert "(no baseline: no speedups)" in " ".join(res.stdout.split())


@pytest.mark.slow
def test_bfloat16_attention_sdpa_passes_as_no_less_accurate_than_the_eager_math(cli, tmp_path: Path) -> None:
    """At 512 tokens SDPA's bfloat16 output differs from the eager math beyond the elementwise tolerance (the eager
    path rounds its scores and probabilities to bfloat16); against the naive module evaluated in float32 it is
    the more accurate of the two, so it passes, and the note says by how much each is off."""
    sweep = tmp_path / "s"
    _, cells = _sweep(
        cli,
        sweep,
        "+experiment=attention",
        "shapes=tiny",
        "dims.seq=512",
        "dims.heads=2",
        "dims.kv_heads=1",
        "dims.head_dim=32",
        "compile.enabled=false",
    )
    cells = cells.set_index("module")
    naive, fused = cells.loc["attention_naive"], cells.loc["attention_fused"]
    assert naive["output_check"] == "baseline" and fused["output_check"] == "pass", fused["output_note"]
    note = fused["output_note"]
    assert "beyond the elementwise tolerance, but no less accurate than the baseline" in note, note
    mine, theirs = (float(x) for x in re.findall(r"max \|Δ\| ([\d.e-]+), the baseline's own ([\d.e-]+)", note)[0])
    assert 0 < mine < theirs  # SDPA keeps its scores in float32: closer to the float32 evaluation
    assert fused["max_abs_err"] > 0.01  # what the elementwise rule alone would have failed
    jobs = [p.parent for p in sweep.glob("*/cell.json")]
    assert len(jobs) == 2 and all((job / "output_fp32.npz").is_file() for job in jobs)  # bfloat16: both saved one
