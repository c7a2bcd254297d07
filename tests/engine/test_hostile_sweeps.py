"""Hostile inputs and faults against sweeps (issue 10): never lose or mix a result. Concurrent writers, a second
grid into the same directory, damaged job files, colliding job directories, layers that exit or print markup,
Ctrl-C, an aggregation that cannot be written, and mistakes that must stop a sweep before its first cell."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import neuronexp
from helpers import FAST, console_script
from helpers.hostile import write_hostile_layers
from neuronexp.engine.lock import locked
from neuronexp.host.threads import host_cpus
from neuronexp.results.files import read_arrow

QUICK = [a for a in FAST if not a.startswith("input.shape")]
PAIR = ["module=rmsnorm_naive,rmsnorm_fused", "input.shape=[1,8,64]"]


def _sweep(cli, sweep_dir: Path, *args: str):
    return cli("-m", *args, *QUICK, f"hydra.sweep.dir={sweep_dir}")


def _command(sweep_dir: Path, *args: str) -> list[str]:
    return [console_script("neuronexp"), "-m", *args, *QUICK, f"hydra.sweep.dir={sweep_dir}"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _one_line(stderr: str, prefix: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(prefix) and "Traceback" not in stderr, stderr
    return lines[0]


def _job_files(job: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in job.iterdir() if p.is_file() and not p.name.startswith(".")}


@pytest.mark.slow  # 8 s on the 2-core VM
def test_a_sweep_into_a_directory_another_writer_holds_is_refused_before_any_cell(cli, tmp_path: Path) -> None:
    """Deterministic, not a race of two sweeps: this test holds the directory's lock while the sweep starts, as a
    second neuronexp would; the sweep is refused in one line naming the holder and writes no cell. Released, the
    same command runs."""
    sweep = tmp_path / "sweep"
    with locked(sweep, "hydra.sweep.dir"):
        refused = _sweep(cli, sweep, *PAIR)
        assert refused.returncode == 2, refused.stderr
        line = _one_line(refused.stderr, "neuronexp: error: hydra.sweep.dir=")
        assert f"another neuronexp is writing there (pid {os.getpid()} " in line
        assert not list(sweep.glob("*/cell.json")) and not (sweep / "results").exists()
    ran = _sweep(cli, sweep, *PAIR)
    assert ran.returncode == 0, ran.stderr
    assert len(neuronexp.load(sweep).cells) == 2


@pytest.mark.slow  # 10 s on the 2-core VM
def test_a_second_grid_reuses_identical_cells_and_never_overwrites_another(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    assert _sweep(cli, sweep, *PAIR).returncode == 0
    first = neuronexp.load(sweep).cells.set_index("module")
    naive_files, fused_files = _job_files(sweep / "0"), _job_files(sweep / "1")
    # Another grid: fused at the same shape (complete in job 1) and at a new one (planned into job 0, naive's).
    res = _sweep(cli, sweep, "module=rmsnorm_fused", "input.shape=[1,8,32],[1,8,64]")
    assert res.returncode == 0, res.stderr
    cells = neuronexp.load(sweep).cells.set_index("input_shape")
    reused = cells.loc["[1,8,64]"]
    assert reused["status"] == "cached" and reused["run_id"] == first.loc["rmsnorm_fused", "run_id"]
    assert reused["latency_median_us"] == first.loc["rmsnorm_fused", "latency_median_us"]
    assert cells.loc["[1,8,32]", "status"] == "ok"
    assert _job_files(sweep / "0") == naive_files, "another configuration's cell was written over"
    assert _job_files(sweep / "1") == fused_files
    (new_job,) = [p.parent.name for p in sweep.glob("*/cell.json") if p.parent.name not in ("0", "1")]
    assert pq.read_table(sweep / new_job / "cells.parquet").column("input_shape").to_pylist() == ["[1,8,32]"]


@pytest.mark.slow  # 10 s on the 2-core VM
def test_a_damaged_job_file_makes_that_cell_run_again(cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    assert _sweep(cli, sweep, *PAIR).returncode == 0
    damaged = sweep / "1" / "samples.arrow"
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    res = _sweep(cli, sweep, *PAIR)
    assert res.returncode == 0, res.stderr
    results = neuronexp.load(sweep)
    status = dict(zip(results.cells["module"], results.cells["status"]))
    assert status == {"rmsnorm_naive": "cached", "rmsnorm_fused": "ok"}
    assert set(results.samples["run_id"]) == set(results.cells["run_id"])  # results/ is fresh, whole
    assert len(read_arrow(damaged)) == results.cells.set_index("module").loc["rmsnorm_fused", "latency_samples"]


@pytest.mark.parametrize(
    ("subdir", "values", "expected"),
    [
        ("x", "input.shape=[1,8,64],[1,8,32]", "hydra.sweep.subdir=x: cells 0 and 1 would share the job directory 'x'"),
        (
            "${hydra.job.override_dirname}",
            "input.shape=[1,8,64],[1,8,0]",
            "input.shape=[1,8,0]: must be a non-empty list",
        ),
        # A job directory outside the sweep directory, or the sweep directory itself (issue 44): refused up front.
        ("../x${hydra.job.num}", PAIR[0], "hydra.sweep.subdir=../x${hydra.job.num}: a cell's job directory would be"),
        ("a/../../${hydra.job.num}", PAIR[0], "would be 'a/../../0': it must be a relative path inside"),
        ("TMP/x${hydra.job.num}", PAIR[0], "a cell's job directory would be 'TMP/x0'"),  # absolute: under tmp_path
        (".", "input.shape=[1,8,64]", "hydra.sweep.subdir=.: a cell's job directory would be '.'"),
        # Two cells of one configuration (a value swept twice): refused, not run twice.
        ("${hydra.job.num}", "input.shape=[1,8,64],[1,8,64]", "cells 0 and 1 are the same configuration"),
    ],
)
def test_job_directories_are_checked_before_any_cell_runs(
    cli, tmp_path: Path, subdir: str, values: str, expected: str
) -> None:
    sweep = tmp_path / "sweep"
    subdir, expected = subdir.replace("TMP", str(tmp_path)), expected.replace("TMP", str(tmp_path))
    res = _sweep(cli, sweep, values, f"hydra.sweep.subdir={subdir}")
    assert res.returncode == 2
    assert expected in _one_line(res.stderr, "neuronexp: error: ")
    assert not sweep.exists() and not (tmp_path / "x0").exists()


@pytest.mark.slow  # 6 s on the 2-core VM
def test_layers_that_exit_or_print_markup_are_rows_and_the_sweep_goes_on(cli, tmp_path: Path) -> None:
    write_hostile_layers(tmp_path)
    sweep = tmp_path / "sweep"
    res = _sweep(
        cli,
        sweep,
        "module._target_=hostile.ExitsInForward,hostile.RaisesMarkup,hostile.MarkupOp",
        "input.shape=[1,8,64]",
    )
    assert res.returncode == 1, "failed cells make the exit status say so"
    assert "Traceback" not in res.stderr + res.stdout and "MarkupError" not in res.stderr
    cells = neuronexp.load(sweep).cells.set_index("module")
    assert cells.loc["ExitsInForward", "error"] == "SystemExit: the layer called sys.exit(0)"
    assert cells.loc["RaisesMarkup", "error"].startswith(
        "FileNotFoundError: no weights at [/data/weights/layer0.bin] [bold]"
    )
    assert cells.loc["MarkupOp", "status"] == "ok"
    assert "load[/data/cache]" in set(neuronexp.load(sweep).ops["op"])
    assert "[/data/weights/layer0.bin] [bold]" in res.stdout  # the progress line, printed as text
    summary = (sweep / "results" / "summary.md").read_text()
    assert "<script>" not in summary and "&lt;script&gt;alert(1)&lt;/script&gt;" in summary


@pytest.mark.slow  # 16 s on the 2-core VM
def test_ctrl_c_aggregates_what_finished_and_prints_the_resume_command(tmp_path: Path) -> None:
    write_hostile_layers(tmp_path)
    sweep = tmp_path / "sweep"
    # The first cell finishes; the second waits for the gate (hostile.Gated), so the signal lands mid-sweep,
    # not after a loaded machine let the whole sweep finish.
    args = _command(sweep, "module._target_=hostile.Gated", "input.shape=[1,8],[1,16],[1,24],[1,32],[1,40]")
    proc = subprocess.Popen(
        args,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        start_new_session=True,
        # A terminal's foreground command starts with Ctrl-C at its default; one started by a job in the background
        # (`nohup .ci/run &`) inherits it ignored, and Python, like any program, then keeps ignoring it.
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.time() + 120
        while not (sweep / "0" / "cells.parquet").exists() and time.time() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the terminal's foreground process group
        out, err = proc.communicate(timeout=120)
    finally:  # a sweep that did not stop would wait at the gate for ever: not left running after a failure
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    line = _one_line(err, "neuronexp: interrupted; ")
    assert f"hydra.sweep.dir={sweep}" in line
    finished = neuronexp.load(sweep).cells
    assert list(finished["input_shape"]) == ["[1,8]"] and (finished["status"] == "ok").all()
    (tmp_path / "gate").touch()
    rerun = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_env())
    assert rerun.returncode == 0, rerun.stderr
    cells = neuronexp.load(sweep).cells
    assert len(cells) == 5 and (cells["status"] == "cached").sum() == len(finished)


@pytest.mark.slow  # 6 s on the 2-core VM
def test_a_failed_aggregation_is_an_error_not_a_warning(cli, tmp_path: Path) -> None:
    from neuronexp.engine.ownership import mark

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    mark(sweep, "sweep")  # an earlier sweep's directory (a directory of someone else's files is refused up front)
    (sweep / "results").write_text("a file where results/ goes")
    res = _sweep(cli, sweep, *PAIR)
    assert res.returncode == 3  # not finished: results/ was not written (1 means a cell failed)
    line = _one_line(res.stderr, "neuronexp: aggregating ")
    assert "results failed (FileExistsError" in line and f"hydra.sweep.dir={sweep}" in line
    assert (sweep / "results").read_text() == "a file where results/ goes"
    assert len(list(sweep.glob("*/cells.parquet"))) == 2  # the cells' own results are kept


def _broken_group_option(tmp_path: Path) -> list[str]:
    conf = tmp_path / "conf" / "module"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text("_target_: neuronexp.modules.NaiveRMSNorm\nhidden_size: [64\n")
    return ["--config-dir", str(tmp_path / "conf"), "module=rmsnorm_naive,mine"]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("yaml", "mine.yaml, line 3, column 1: not valid YAML"),
        ("unknown key", "timing.itres=5: not a key of neuronexp's schema"),
        ("compile mode", "compile.mode=fast: one of default"),
        ("devices", f"launcher.devices={len(host_cpus()) + 1}: does not fit this machine"),
    ],
)
def test_a_mistake_anywhere_stops_the_sweep_before_it_starts(cli, tmp_path: Path, case: str, expected: str) -> None:
    sweep = tmp_path / "sweep"
    args = {
        "yaml": _broken_group_option(tmp_path) if case == "yaml" else [],
        "unknown key": ["+timing.itres=5,6"],
        "compile mode": ["compile.mode=default,fast"],
        "devices": ["hydra/launcher=parallel", f"launcher.devices={len(host_cpus()) + 1}", "input.shape=[1,8],[1,16]"],
    }[case]
    res = _sweep(cli, sweep, *args)
    assert res.returncode == 2
    assert expected in _one_line(res.stderr, "neuronexp: error: ")
    assert not sweep.exists()


def test_ctrl_c_during_a_sweep_exits_130_with_the_resume_line(cli, tmp_path: Path, monkeypatch) -> None:
    """In the default run (issue 44; the real signal: the slow test above): KeyboardInterrupt while the cells run."""
    from neuronexp.engine.executor import Local

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Local, "run", interrupted)
    sweep = tmp_path / "sweep"
    res = _sweep(cli, sweep, *PAIR)
    assert res.returncode == 130, res.stderr
    assert f"hydra.sweep.dir={sweep}" in _one_line(res.stderr, "neuronexp: interrupted; ")


def test_a_misspelt_compile_backend_is_refused_before_any_work(cli, tmp_path: Path) -> None:
    """In the default run (issue 44; the slow table of mistakes in tests/cli/test_hostile.py has it too)."""
    sweep = tmp_path / "sweep"
    res = _sweep(cli, sweep, *PAIR, "compile.enabled=true", "compile.backend=inductr")
    assert res.returncode == 2
    assert "compile.backend=inductr: one of" in _one_line(res.stderr, "neuronexp: error: ")
    assert not sweep.exists()


def test_a_list_of_values_without_m_is_refused_before_any_work(cli, tmp_path: Path) -> None:
    where = tmp_path / "run"
    res = cli("input.shape=[1,8,64]", "module=rmsnorm_naive,rmsnorm_fused", *QUICK, f"hydra.run.dir={where}")
    assert res.returncode == 2
    line = _one_line(res.stderr, "neuronexp: error: ")
    assert line == "neuronexp: error: module=rmsnorm_naive,rmsnorm_fused: a list of values is a sweep: add -m"
    assert not where.exists()
