"""The first steps of a cell's process, forked from the fork server's template (neuronexp.cellprocess.template): become
a process of its own, take the slot's environment, cores and threads before anything touches a device, send its output
to the cell's log, run the cell, exit without running the template's exit handlers."""

from __future__ import annotations

import base64
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from neuronexp.cellprocess.cell_log import capped_output
from neuronexp.host.allocator import APPLIED_ENV, STABLE_ENV

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class ForkRequest:
    """The one message a supervisor sends the fork server: where and how the forked process runs, and what it runs.
    `work` is `(entry, argument)` pickled: a function named in code (the cell processes' entry is
    neuronexp.cellprocess.entry.run_cell_process) and its typed argument. The template unpickles only this envelope,
    whose fields are plain values; the child unpickles `work` once it has the request's `sys_path`, so that the template
    never imports what a child runs. (Pickle is safe here: the socket is this user's alone, in a 0700 directory.)"""

    work: bytes
    env: dict[str, str]
    cwd: str
    sys_path: list[str]
    log: str  # the process's stdout and stderr
    cpus: list[int] | None = None  # its CPU affinity and torch thread count; None: the supervisor's
    # Its backend (backends.table): a template that started its runtime refuses it. None: the host's. (Not HOST.name:
    # this module starts every sweep's fork server, and the table would bring omegaconf into its first 0.1 s.)
    kind: str | None = None
    allocator: str = "stable"  # the malloc mode of the template it must be forked from

    @classmethod
    def to_run(cls, entry: Callable[[T], int | None], argument: T, **where: Any) -> ForkRequest:
        """`entry(argument)` to run where `where` says; in this process's working directory and sys.path unless it
        says otherwise."""
        return cls(work=pickle.dumps((entry, argument)), **{"cwd": os.getcwd(), "sys_path": list(sys.path), **where})

    def encode(self) -> str:
        return base64.b64encode(pickle.dumps(self)).decode()

    @staticmethod
    def decode(text: str) -> ForkRequest:
        request = pickle.loads(base64.b64decode(text))
        if not isinstance(request, ForkRequest):
            raise ValueError(f"not a fork request: {type(request).__name__}")
        return request


# Signals the template ignores (sent to every process of a terminal's group or a Slurm task; its supervisors act
# on them) and a cell's process takes back.
PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


def die_with(parent: int) -> None:
    """Linux: the kernel kills this process when `parent` dies (PR_SET_PDEATHSIG), so that a killed supervisor
    or template never leaves a cell running on its device."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def enter_cell_process(request: ForkRequest, template: int) -> None:
    """Turn a fresh fork of the template (pid `template`) into the cell's process, as `request` says."""
    os.setpgid(0, 0)  # its own group: a time limit or a vanished supervisor kills the cell and all it started
    die_with(template)
    for sig in (signal.SIGCHLD, *PASSED_ON):  # what a fresh Python process has
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if "SLURM_JOB_ID" in request.env:
        # Slurm's time-limit warning (--signal, USR1 or USR2) reaches every process of the task; it is for the
        # supervisor, which stops this cell and writes its "timed out" row. Left at its default it would kill the
        # cell first, in a race with the supervisor, and the row would say "killed by SIGUSR2" instead.
        for sig in (signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_IGN)
    # The supervisor's environment, not the template's (which turned thread pools off for the fork), plus the
    # slot's: CUDA_VISIBLE_DEVICES and NEURON_RT_VISIBLE_CORES are read when the device runtime starts, which is
    # in this process, later.
    tuned = os.environ.get(APPLIED_ENV)  # this process's own mark (re-marked at fork) when the template tuned malloc
    # The malloc settings glibc read when the template started hold here too: kept, so that env.json says so and
    # processes this cell starts (compile workers) get them.
    malloc = {k: os.environ[k] for k in STABLE_ENV if k in os.environ}
    os.environ.clear()
    os.environ.update(malloc)
    os.environ.update(request.env)
    os.environ.pop(APPLIED_ENV, None)  # the supervisor's, if any: another process's tuning
    if tuned == str(os.getpid()):
        os.environ[APPLIED_ENV] = tuned
    os.chdir(request.cwd)
    sys.path[:0] = [p for p in request.sys_path if p not in sys.path]
    cpus = request.cpus
    if cpus and hasattr(os, "sched_setaffinity"):
        import torch

        os.sched_setaffinity(0, cpus)  # before the first parallel op starts the OpenMP pool: threads inherit it
        torch.set_num_threads(len(cpus))
    inductor: Any = sys.modules.get("torch._inductor.config")  # a config module: attributes set at import
    if inductor is not None:  # decided when the template imported it, from the template's cores and environment
        inductor.compile_threads = inductor.decide_compile_threads()
    log = os.open(request.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(null)
    sys.stdin = open(os.devnull)  # the template's stdin object may hold buffered control messages


def run_work(request: ForkRequest) -> NoReturn:
    """Call the request's `entry(argument)` and exit with its return value (0 for None), its output capped in the
    request's log (cellprocess.cell_log). `os._exit`: the template's atexit handlers and buffers are not this process's
    to run or flush."""
    code = 1
    try:
        with capped_output(request.log):
            code = _call(request)
    finally:
        os._exit(code)


def _call(request: ForkRequest) -> int:
    try:
        entry, argument = pickle.loads(request.work)
        return int(entry(argument) or 0)
    except SystemExit as exc:
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 1
