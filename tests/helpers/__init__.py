"""Test helpers (plain functions and constants, not fixtures): the console script as a user runs it, and tiny fast
configs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS = REPO / "experiments"
# Small enough that a whole cell takes well under a second on 2 CPU cores.
FAST = [
    "profiler=quick",
    "timing.warmup=1",
    "timing.iters=5",
    "timing.min_iters=3",
    "timing.min_seconds=0",
    # The fixed count: a test's group does the same work whatever the load (sampling to a precision, the default, takes
    # longer on a busy machine by design: tests/cell/test_precision.py, tests/cell/test_group.py test it).
    "timing.precision=null",
    "input.shape=[1,8,64]",
]


def console_script(name: str) -> str:
    """The installed entry point next to this interpreter (what `neuronexp` on PATH would be)."""
    path = Path(sys.executable).parent / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed; run pip install -e '.[dev]'"
    return found


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(args: list[str], cwd: Path, script: str = "neuronexp", env: dict[str, str] | None = None, **_) -> CliResult:
    """`script ARGS...` in this test process (helpers.inproc): a process's exit status and output, ~3 s cheaper."""
    from helpers.inproc import run_main

    return run_main(args, cwd, script, env)


def run_process(
    args: list[str], cwd: Path, script: str = "neuronexp", timeout: float = 300, env: dict[str, str] | None = None
) -> CliResult:
    """The installed console script as a process: where only a process shows the behaviour (a signal, the
    interpreter's start-up and imports, a cell run in the command's own process that may crash it)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}  # env may set COLUMNS ("" for a plain pipe's 80)
    full_env.pop("HYDRA_FULL_ERROR", None)
    proc = subprocess.run(
        [console_script(script), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in (root / "outputs" / "runs").glob("*") if p.is_dir()) if (root / "outputs").exists() else []


def small_sweep(root: Path, shapes: str, *extra: str) -> Path:
    """A real naive × fused RMSNorm sweep over `shapes` through the console script, naive as the baseline; its
    directory.

    `extra` overrides FAST's values (e.g. "timing.iters=20").
    """
    out = root / "sweep"
    keys = tuple(a.split("=", 1)[0] + "=" for a in extra) + ("input.shape=",)
    args = [
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        f"input.shape={shapes}",
        "baseline=rmsnorm_naive",
        *[a for a in FAST if not a.startswith(keys)],
        *extra,
        f"hydra.sweep.dir={out}",
    ]
    result = run_cli(args, cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


def within(seconds: float, call):
    """`call()`'s result, failing the test if it takes longer than `seconds` (a blocking open of a FIFO would hang
    the whole session instead): run in a daemon thread, which the interpreter may leave behind at exit."""
    import threading

    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed back to the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
