"""The `neuronexp` command as a user types it: one cell, its files, its terminal output, its errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

import neuronexp
from helpers import EXPERIMENTS, FAST, run_dirs
from neuronexp.results import CELL_SCHEMA, OP_SCHEMA, SAMPLE_SCHEMA

CONTRACT_CELL_COLUMNS = """run_id experiment module compiled backend device device_name dtype input_shape status error
latency_median_us latency_p10_us latency_p90_us latency_samples timing_method first_call_s device_time_us
cpu_time_us device_ops top_op top_op_share speedup_vs_baseline trace_path torch_version neuronx_version
started_at""".split()
CONTRACT_OP_COLUMNS = """run_id experiment module compiled backend device dtype input_shape cycle op calls self_cpu_us
cpu_total_us self_device_us device_total_us device_share input_shapes flops""".split()


def test_default_cell_writes_the_contract_files(cli, tmp_path: Path) -> None:
    res = cli(*FAST, "input.dtype=float32", "backend=cpu")
    assert res.returncode == 0, res.stderr
    (run,) = run_dirs(tmp_path)
    for name in ("cells.parquet", "ops.parquet", "samples.parquet", "env.json", "config.yaml", "trace.json"):
        assert (run / name).is_file(), name
    tables = neuronexp.load(run)
    assert set(CONTRACT_CELL_COLUMNS) <= set(tables.cells.columns)
    assert set(CONTRACT_OP_COLUMNS) <= set(tables.ops.columns)
    assert list(tables.samples.columns) == [*SAMPLE_SCHEMA.names, "source_dir"]  # load says where each row came from
    cell = tables.cells.iloc[0]
    assert (cell["status"], cell["module"], cell["backend"], cell["dtype"], cell["input_shape"]) == (
        "ok",
        "rmsnorm_naive",
        "cpu",
        "float32",
        "[1,8,64]",
    )
    assert cell["latency_samples"] == len(tables.samples) >= 3
    assert cell["latency_p10_us"] <= cell["latency_median_us"] <= cell["latency_p90_us"]
    assert cell["timing_method"] == "wallclock" and cell["device_time_source"] == "cpu_self_time"
    # The module dispatched 6 calls (x*x, mean, +eps, rsqrt, x*rms, *weight); 7 executed (mean is sum and div_).
    assert cell["ops_dispatched"] == 6 and cell["device_ops"] == cell["ops_executed"] == 7
    assert cell["top_op"].startswith("aten::")
    assert cell["device_time_us"] > 0 and cell["first_call_s"] > 0
    assert list(tables.cells.columns[: len(CELL_SCHEMA.names)]) == CELL_SCHEMA.names
    assert list(tables.ops.columns[: len(OP_SCHEMA.names)]) == OP_SCHEMA.names
    trace = json.loads((run / "trace.json").read_text())
    assert any(e.get("name") == "aten::mul" for e in trace["traceEvents"])
    env = json.loads((run / "env.json").read_text())
    assert env["torch_version"] and env["python"] and "git_commit" in env
    # The terminal summary names the hotspot, the latency with its spread and where the files are.
    assert "aten::mul" in res.stdout and "p10" in res.stdout and str(run.name) in res.stdout


@pytest.mark.slow  # 5 s on the 2-core VM
def test_fused_cell_profiles_the_fused_op(cli, tmp_path: Path) -> None:
    res = cli(*FAST, "module=rmsnorm_fused", "input.shape=[2,16,128]", "input.dtype=float32", "backend=cpu")
    assert res.returncode == 0, res.stderr
    tables = neuronexp.load(run_dirs(tmp_path)[0])
    assert "aten::_fused_rms_norm" in set(tables.ops["op"])
    cell = tables.cells.iloc[0]
    assert cell["ops_dispatched"] == 1 and cell["device_ops"] == 7 and cell["input_shape"] == "[2,16,128]"
    assert not cell["top_op"].startswith(("aten::rms_norm", "aten::_fused_rms_norm"))  # wrappers are not hotspots


@pytest.mark.slow
def test_compiled_cell_shows_one_compiled_region(cli, tmp_path: Path) -> None:
    res = cli(*FAST, "module=rmsnorm_compiled", "input.shape=[1,16,256]")
    assert res.returncode == 0, res.stderr
    tables = neuronexp.load(run_dirs(tmp_path)[0])
    cell = tables.cells.iloc[0]
    assert bool(cell["compiled"]) and cell["ops_dispatched"] == 1 and cell["device_ops"] == 1  # the graph call
    regions = tables.ops[tables.ops["op"].str.startswith("Torch-Compiled Region")]
    assert len(regions) == 1 and regions["calls"].iloc[0] == 1
    assert "aten::mul" not in set(tables.ops["op"])  # the six eager calls are gone


@pytest.mark.slow  # 5 s on the 2-core VM
def test_user_layer_with_two_inputs_runs_from_its_config_dir(cli, tmp_path: Path) -> None:
    res = cli("--config-dir", str(EXPERIMENTS), "module=swiglu_mlp", *FAST)
    assert res.returncode == 0, res.stderr
    cell = neuronexp.load(run_dirs(tmp_path)[0]).cells.iloc[0]
    assert cell["status"] == "ok" and cell["module"] == "swiglu_mlp"
    # gate, up, down, silu, mul, residual add; each linear executes as one aten::mm
    assert cell["ops_dispatched"] == cell["device_ops"] == 6


def test_cfg_job_introspection_works(cli) -> None:
    res = cli("--cfg", "job", "module=rmsnorm_fused")
    assert res.returncode == 0, res.stderr
    assert "_target_: neuronexp.modules.FusedRMSNorm" in res.stdout


def test_a_layer_that_raises_is_an_error_row_not_a_traceback(cli, tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "import torch\nclass Broken(torch.nn.Module):\n    def forward(self, x):\n"
        "        raise RuntimeError('boom at forward')\n"
    )
    res = cli(*FAST, "module._target_=broken.Broken", "~module.hidden_size", "~module.eps")
    assert res.returncode == 1
    assert "Traceback" not in res.stderr + res.stdout
    cell = neuronexp.load(run_dirs(tmp_path)[0]).cells.iloc[0]
    assert cell["status"] == "error" and cell["error"] == "RuntimeError: boom at forward"
    assert cell["module"] == "Broken" and pd.isna(cell["latency_median_us"])


HAS_NEURON = importlib.util.find_spec("torch_neuronx") is not None
BAD_INPUTS = [
    (["module=nope"], "module=nope"),
    (["backend=tpu"], "backend=tpu"),
    (["input.dtype=int8"], "input.dtype=int8"),
    (["input.shape=[1,0,64]"], "input.shape=[1,0,64]"),
    (["input.shape=[1,-4]"], "input.shape=[1,-4]"),
    (["input.shape=wide"], "input.shape=wide"),
    (["profiler.schedule.active=0"], "profiler.schedule.active=0"),
    pytest.param(
        ["backend=neuron"],
        "torch-neuronx is not installed",
        marks=pytest.mark.skipif(HAS_NEURON, reason="Neuron present"),
    ),
    pytest.param(
        ["backend=cuda"], "backend=cuda", marks=pytest.mark.skipif(torch.cuda.is_available(), reason="GPU present")
    ),
    (["module._target_=nowhere.Layer"], "module._target_=nowhere.Layer"),
    (["module._target_=collections.OrderedDict"], "not a torch.nn.Module"),
    (['profiler.neuron.capture_enabled_for_nc="0,x"'], "profiler.neuron.capture_enabled_for_nc=0,x"),
    (["timing.iters=0"], "timing.iters=0"),
    (["timing.precision=2"], "timing.precision=2.0: must be a fraction between 0 and 1 (0.02: each speedup"),
    (["timing.precision=0"], "timing.precision=0.0: must be a fraction"),
    (["timing.min_rounds=1"], "timing.min_rounds=1: must be an integer >= 2"),
    (["inptu.shape=[1,2]"], "inptu.shape"),
]


@pytest.mark.parametrize(("args", "expected"), BAD_INPUTS)
def test_bad_input_fails_in_one_line_before_any_work(cli, tmp_path: Path, args: list[str], expected: str) -> None:
    res = cli(*args)
    assert res.returncode == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("neuronexp: error: ") and expected in lines[0]
    assert "Traceback" not in res.stderr
    assert not run_dirs(tmp_path), "no result files for a bad config"


def test_a_config_error_never_removes_an_existing_run_directory(cli, tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file.txt").write_text("hi")
    res = cli("input.shape=[0]", "hydra.run.dir=keep")
    assert res.returncode == 2 and "input.shape=[0]" in res.stderr
    assert (keep / "file.txt").read_text() == "hi"
    assert sorted(p.name for p in keep.iterdir()) == ["file.txt"], "nothing written for a bad config"


def test_a_config_error_with_the_working_directory_as_run_dir_leaves_it_alone(cli, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    before = sorted(p.name for p in tmp_path.iterdir())
    res = cli("timing.iters=0", "hydra.run.dir=.")
    assert res.returncode == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.slow  # 13 s on the 2-core VM
def test_a_finished_run_directory_keeps_its_results(cli, tmp_path: Path) -> None:
    res = cli(*FAST, "input.dtype=float32", "backend=cpu", "hydra.run.dir=done")
    assert res.returncode == 0, res.stderr
    done = tmp_path / "done"
    first = neuronexp.load(done).cells.iloc[0]
    files = {p.name: p.read_bytes() for p in done.iterdir() if p.is_file()}
    if not torch.cuda.is_available():  # an unavailable backend: one line, the results stay as they were
        res = cli(*FAST, "input.dtype=float32", "backend=cuda", "hydra.run.dir=done")
        assert res.returncode == 2 and "backend=cuda" in res.stderr
    # Another cell into the same directory is refused, never written over the first one's results.
    res = cli(*FAST, "input.dtype=float32", "backend=cpu", "module=rmsnorm_fused", "hydra.run.dir=done")
    assert res.returncode == 2 and "hydra.run.dir" in res.stderr and first["run_id"] in res.stderr
    assert {p.name: p.read_bytes() for p in done.iterdir() if p.is_file() and p.name in files} == files
    # The same cell again reuses the results already there, and leaves their files as they were.
    res = cli(*FAST, "input.dtype=float32", "backend=cpu", "hydra.run.dir=done")
    assert res.returncode == 0, res.stderr
    assert "reused" in res.stdout and first["run_id"] in res.stdout
    results = {
        n: b for n, b in files.items() if n.endswith((".parquet", ".arrow", ".json", ".yaml")) and not n.startswith(".")
    }
    assert {n: (done / n).read_bytes() for n in results} == results
