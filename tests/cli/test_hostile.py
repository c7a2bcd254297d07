"""Hostile inputs and faults against single runs, as a user meets them on the command line (issue 10): one line
and exit 2 for a mistake, an error row for a layer that misbehaves, one line and no temporaries for a disk that
refuses writes."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST, console_script, run_dirs
from helpers.hostile import write_hostile_layers
from neuronexp.host.threads import host_cpus

CPUS = len(host_cpus())
BAD_CONFIGS = [
    # Unknown keys inside neuronexp's schema: refused with what is allowed there, `+` or not, never a "+key" hint.
    (["+timing.itres=5"], "timing.itres=5: not a key of neuronexp's schema; timing takes warmup, iters"),
    (["timing.itres=5"], "timing.itres=5: no such key; timing takes warmup, iters"),
    # Shapes: empty, a dimension >= 2^63, an element count beyond int64, an interpolation that does not resolve.
    (["input.shape=[]"], "input.shape=[]: must be a non-empty list"),
    (["input.shape=[9223372036854775808]"], "input.shape=[9223372036854775808]: has 9.22e+18 elements"),
    (["input.args=[{shape:[4294967296,4294967296]}]"], "input.args[0].shape=[4294967296,4294967296]: has 1.84e+19"),
    (["input.shape=${oops}"], "input.shape=${oops}: Interpolation key 'oops' not found"),
    # Overrides that do not parse are named as typed.
    (["input.shape=[1,8,"], "input.shape=[1,8,: cannot parse"),
    (["module=rmsnorm_naive,"], "module=rmsnorm_naive,: cannot parse"),
    # torch.compile options that torch does not know.
    (["compile.enabled=true", "compile.backend=inductr"], "compile.backend=inductr: one of"),
    (["compile.mode=fast"], "compile.mode=fast: one of default, lite, reduce-overhead, max-autotune"),
    # Device slots this machine does not have.
    ([f"launcher.devices={CPUS + 1}"], f"launcher.devices={CPUS + 1}: does not fit this machine"),
    ([f"launcher.pool=0-{CPUS + 7}"], f"launcher.pool=0-{CPUS + 7}: CPU cores"),
]


def _one_error_line(stderr: str, prefix: str = "neuronexp: error: ") -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(prefix) and "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(("args", "expected"), BAD_CONFIGS)
@pytest.mark.slow  # 16 s on the 2-core VM
def test_a_mistake_is_one_line_exit_2_and_no_files(cli, tmp_path: Path, args: list[str], expected: str) -> None:
    res = cli(*FAST, *args)
    assert res.returncode == 2, res.stderr
    assert expected in _one_error_line(res.stderr)
    assert "add a new key with +" not in res.stderr
    assert not run_dirs(tmp_path) and not list(tmp_path.rglob("*.parquet"))


@pytest.mark.slow  # 6 s on the 2-core VM
def test_the_users_own_nodes_and_module_options_stay_free_form(cli, tmp_path: Path) -> None:
    write_hostile_layers(tmp_path)  # MarkupOp takes any option
    res = cli(*FAST, "module._target_=hostile.MarkupOp", "+module.width=3", "+notes.owner=me", "hydra.run.dir=run")
    assert res.returncode == 0, res.stderr
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert "owner: me" in config and "width: 3" in config


@pytest.mark.parametrize("where", ["group option", "primary config"])
def test_a_yaml_syntax_error_names_file_and_line(cli, tmp_path: Path, where: str) -> None:
    conf = tmp_path / "conf"
    (conf / "module").mkdir(parents=True)
    (conf / "module" / "mine.yaml").write_text("_target_: neuronexp.modules.NaiveRMSNorm\n  hidden_size: : 64\n")
    (conf / "study.yaml").write_text("defaults:\n  - base_config\n  - module: rmsnorm_naive\ninput:\n  shape: [1, 8\n")
    args = ["module=mine"] if where == "group option" else ["--config-name", "study"]
    res = cli("--config-dir", str(conf), *args, *FAST)
    assert res.returncode == 2
    line = _one_error_line(res.stderr)
    expected = (conf / "module" / "mine.yaml", "line 2") if where == "group option" else (conf / "study.yaml", "line 6")
    assert f"{expected[0]}, {expected[1]}" in line and "not valid YAML" in line, line
    assert not run_dirs(tmp_path)


def test_a_constructor_that_raises_keeps_its_cause_in_row_terminal_and_log(cli, tmp_path: Path) -> None:
    write_hostile_layers(tmp_path)
    res = cli(*FAST, "module._target_=hostile.CtorRaises", "hydra.run.dir=run")
    assert res.returncode == 1
    assert "Traceback" not in res.stdout + res.stderr
    assert "RuntimeError: ctor failed" in res.stdout
    cell = neuronexp.load(tmp_path / "run").cells.iloc[0]
    assert cell["status"] == "error" and cell["error"] == "RuntimeError: ctor failed"
    log = (tmp_path / "run" / "neuronexp.log").read_text()
    # The full traceback, down to the line in the user's layer, is in the cell's own log.
    assert "Traceback (most recent call last)" in log and 'raise RuntimeError("ctor failed")' in log
    assert "\nRuntimeError: ctor failed\n" in log  # the layer's own exception, not only Hydra's wrapper
    assert 'raise RuntimeError("ctor failed")' in (tmp_path / "run" / "error.log").read_text()


def test_sys_exit_in_a_layer_is_an_error_row(cli, tmp_path: Path) -> None:
    write_hostile_layers(tmp_path)
    res = cli(*FAST, "module._target_=hostile.ExitsInForward", "hydra.run.dir=run")
    assert res.returncode == 1
    cell = neuronexp.load(tmp_path / "run").cells.iloc[0]
    assert cell["status"] == "error" and cell["error"] == "SystemExit: the layer called sys.exit(0)"


@pytest.mark.slow  # 9 s on the 2-core VM
def test_rich_markup_in_an_error_and_an_op_name_is_printed_as_text(cli, tmp_path: Path) -> None:
    write_hostile_layers(tmp_path)
    res = cli(*FAST, "module._target_=hostile.RaisesMarkup", "hydra.run.dir=err")
    assert res.returncode == 1 and "MarkupError" not in res.stderr and "Traceback" not in res.stderr
    assert "[/data/weights/layer0.bin] [bold]<script>" in res.stdout.replace("\n", "")
    # A record_function label with "[/...]" in it: never a leaf (the aten::mul inside it did the work), so the
    # terminal's hotspot table shows the mul; the label breaks nothing on its way.
    res = cli(*FAST, "module._target_=hostile.MarkupOp", "hydra.run.dir=op")
    assert res.returncode == 0 and "MarkupError" not in res.stderr, res.stderr
    assert "aten::mul" in res.stdout
    ops = neuronexp.load(tmp_path / "op").ops
    assert ops[ops["op"] == "aten::mul"]["leaf"].all() and not ops[ops["op"] == "load[/data/cache]"]["leaf"].any()


def _read_only(tmp_path: Path) -> list[str] | None:
    """A command prefix under which `tmp_path/ro` is a read-only filesystem, or None where none can be made."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0:
        ro.chmod(0o555)
        return []
    unshare = shutil.which("unshare")
    probe = f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} && ! touch {ro}/probe 2>/dev/null"
    if unshare is None or subprocess.run([unshare, "-m", "sh", "-c", probe], capture_output=True).returncode != 0:
        return None
    return [unshare, "-m", "sh", "-c", f'mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} && exec "$@"', "sh"]


@pytest.mark.parametrize("mode", ["run", "sweep"])
def test_a_read_only_output_directory_is_one_line_before_any_work(tmp_path: Path, mode: str) -> None:
    prefix = _read_only(tmp_path)
    if prefix is None:
        pytest.skip("no read-only filesystem can be made here (root without mount namespaces)")
    where = (
        ["hydra.run.dir=ro/out"]
        if mode == "run"
        else ["-m", "module=rmsnorm_naive,rmsnorm_fused", "hydra.sweep.dir=ro/out"]
    )
    proc = subprocess.run(
        [*prefix, console_script("neuronexp"), *where, *FAST],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"},
    )
    assert proc.returncode == 2
    key = "hydra.run.dir" if mode == "run" else "hydra.sweep.dir"
    assert f"{key}=ro/out: cannot write there" in _one_error_line(proc.stderr)
    assert not list((tmp_path / "ro").iterdir())


def _full_disk() -> None:
    """The process may write files of at most 8 KiB: a disk that fills mid-run (Python ignores SIGXFSZ, so a
    larger write fails with EFBIG, as a full disk fails with ENOSPC)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE as a full disk is Linux behaviour")
@pytest.mark.parametrize("mode", ["run", "sweep"])
@pytest.mark.slow  # 9 s on the 2-core VM
def test_a_full_disk_is_one_line_non_zero_and_leaves_no_temporaries(tmp_path: Path, mode: str) -> None:
    where = (
        ["hydra.run.dir=out"] if mode == "run" else ["-m", "module=rmsnorm_naive,rmsnorm_fused", "hydra.sweep.dir=out"]
    )
    proc = subprocess.run(
        [console_script("neuronexp"), *where, *FAST],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_full_disk,
        env={k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"},
    )
    assert proc.returncode == 3  # not finished: a file could not be written (1 means a cell failed)
    line = _one_error_line(proc.stderr, "neuronexp: ")
    assert "File too large" in line and ("hydra.sweep.dir=out" in line if mode == "sweep" else "cannot write" in line)
    assert not [p for p in (tmp_path / "out").rglob("*") if ".tmp" in p.name]
    assert not list((tmp_path / "out").rglob("cells.parquet")), "no job passes for complete"


@pytest.mark.parametrize("mode", ["run", "sweep"])
def test_a_directory_another_neuronexp_writes_to_is_refused_naming_it(cli, tmp_path: Path, mode: str) -> None:
    from neuronexp.engine.lock import locked

    key = "hydra.run.dir" if mode == "run" else "hydra.sweep.dir"
    busy = tmp_path / "busy"
    with locked(busy, key):  # held by this process, as a running neuronexp would hold it
        where = [f"{key}={busy}"] if mode == "run" else ["-m", "module=rmsnorm_naive,rmsnorm_fused", f"{key}={busy}"]
        res = cli(*where, *FAST)
    assert res.returncode == 2
    line = _one_error_line(res.stderr)
    assert f"{key}={busy}: another neuronexp is writing there (pid {os.getpid()} on " in line
    assert sorted(p.name for p in busy.iterdir()) == [".neuronexp.lock"], "nothing written by the refused run"
