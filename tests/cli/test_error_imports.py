"""A mistake in a plain config value is reported before torch (or pandas, pyarrow, matplotlib) is imported:
the console script as a user types it, with Python's own import log (PYTHONPROFILEIMPORTTIME) read back.

A behaviour test, not a timing one: the speed it buys is measured by bench/error_time.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_process as run_cli

HEAVY = ("torch", "pandas", "pyarrow", "matplotlib")


def _imported(stderr: str) -> set[str]:
    """Top-level packages named in the import log (`import time: self | cumulative | name`)."""
    return {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s*([\w.]+)\s*$", stderr, re.M)}


def _run_logged(tmp_path: Path, *args: str):
    result = run_cli(list(args), cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    errors = [ln for ln in result.stderr.splitlines() if not ln.startswith("import time:")]
    return result, errors, _imported(result.stderr)


@pytest.mark.parametrize(
    "args, line",
    [
        (["input.shape=[0]"], "input.shape=[0]: must be a non-empty list of positive integers, e.g. [1,1024,4096]"),
        (["timing.iters=0"], "timing.iters=0: must be an integer >= 1"),
        (["input.dtype=float33"], "input.dtype=float33: Invalid value 'float33'"),
        (["+timing.itres=5"], "timing.itres=5: not a key of neuronexp's schema"),
        (["launcher.pool=x"], "launcher.pool=x: expected indices"),
        (
            ["compile.backend=inductor", "correctness.rtol=-1"],
            "correctness.rtol=-1.0: must be null or a finite number >= 0",
        ),
        (["module=nosuch"], "module=nosuch: unknown option"),
    ],
)
def test_a_plain_config_error_is_reported_before_torch_is_imported(tmp_path: Path, args: list[str], line: str) -> None:
    result, errors, imported = _run_logged(tmp_path, *args)
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(errors) == 1 and errors[0].startswith(f"neuronexp: error: {line}"), errors
    assert "neuronexp" in imported  # the log is read: neuronexp itself shows up in it
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    assert not (tmp_path / "outputs").exists()


@pytest.mark.slow  # 4 s on the 2-core VM
def test_the_import_log_does_show_torch_where_a_check_needs_it(tmp_path: Path) -> None:
    # Whether a compile backend exists only torch._dynamo knows: this error may import torch, and the log shows it
    # (so the tests above would see torch if a plain error imported it again).
    result, errors, imported = _run_logged(tmp_path, "compile.backend=nosuch")
    assert result.returncode == 2 and errors[0].startswith("neuronexp: error: compile.backend=nosuch: one of "), errors
    assert "torch" in imported


@pytest.mark.parametrize(
    "args, line",
    [
        (["-m", "input.shape=[1,8],[0]"], "input.shape=[0]: must be a non-empty list of positive integers"),
        (["-m", "module=rmsnorm_naive,rmsnorm_fused", "timing.iters=0"], "timing.iters=0: must be an integer >= 1"),
    ],
)
def test_a_sweep_reports_a_plain_config_error_before_its_process_imports_torch(
    tmp_path: Path, args: list[str], line: str
) -> None:
    # The sweep starts its fork server's template (which imports torch in a process of its own) before planning,
    # so the import log would mix both processes: what this process holds is read when the error is raised.
    code = (
        "import sys\nfrom neuronexp.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print('HEAVY', [m for m in HEAVY if m in sys.modules], code, file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{code}", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"neuronexp: error: {line}" in proc.stderr, proc.stderr[-2000:]
    assert "HEAVY [] 2" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "outputs").exists()


def test_one_tab_of_shell_completion_imports_neither_torch_nor_pandas(tmp_path: Path) -> None:
    line = "neuronexp module=rmsnorm_f"  # what bash's completion function (neuronexp -sc install=bash) sends
    result = run_cli(
        ["-sc", "query=bash"],
        cwd=tmp_path,
        env={"PYTHONPROFILEIMPORTTIME": "1", "COMP_LINE": line, "COMP_POINT": str(len(line))},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["module=rmsnorm_fused"]
    imported = _imported(result.stderr)
    assert "neuronexp" in imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))


def _cpu_only_torch() -> bool:
    import torch

    return torch.version.cuda is None and torch.version.hip is None


def _no_torch_neuronx() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch_neuronx") is None


@pytest.mark.parametrize(
    "backend, line, applies, from_config",
    [
        ("cuda", "backend=cuda: CUDA is not available: the installed torch ", _cpu_only_torch, False),
        # Set by a config, not on the command line: checked when the cell is planned, before its module's import.
        ("neuron", "backend=neuron: torch-neuronx is not installed", _no_torch_neuronx, True),
    ],
)
def test_a_backend_missing_here_is_reported_before_torch_is_imported(
    tmp_path: Path, backend: str, line: str, applies, from_config: bool
) -> None:
    # Whether torch-neuronx is installed, and whether the installed torch was built with CUDA, need no `import torch`
    # (backends.cuda.torch_build reads torch's version file): the answer comes before the module's code imports it.
    if not applies():
        pytest.skip(f"backend={backend} is available here")
    args = [f"backend={backend}"]
    if from_config:
        (tmp_path / "conf" / "experiment").mkdir(parents=True)
        (tmp_path / "conf" / "experiment" / "device.yaml").write_text(f"# @package _global_\nbackend: {backend}\n")
        args = ["--config-dir", str(tmp_path / "conf"), "+experiment=device"]
    result, errors, imported = _run_logged(tmp_path, *args)
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(errors) == 1 and errors[0].startswith(f"neuronexp: error: {line}"), errors
    assert "neuronexp" in imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))
    # Typed on the command line, the value is final: told before Hydra is even imported (cli.main._before_hydra).
    assert ("hydra" in imported) == from_config
    assert not (tmp_path / "outputs").exists()
