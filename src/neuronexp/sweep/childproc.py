"""The first steps of a cell's process, forked from the fork server's template (neuronexp.sweep.template): become
a process of its own, take the slot's environment, cores and threads before anything touches a device, send its
output to the cell's log, run the cell, exit without running the template's exit handlers.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback
from typing import Any, NoReturn

from neuronexp.host.allocator import APPLIED_ENV, STABLE_ENV


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


def enter_cell_process(request: dict[str, Any], template: int) -> None:
    """Turn a fresh fork of the template (pid `template`) into the cell's process, as `request` says
    (neuronexp.sweep.forkserver.ForkRequest)."""
    os.setpgid(0, 0)  # its own group: a time limit or a vanished supervisor kills the cell and all it started
    die_with(template)
    for sig in (signal.SIGCHLD, *PASSED_ON):  # what a fresh Python process has
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # The supervisor's environment, not the template's (which turned thread pools off for the fork), plus the
    # slot's: CUDA_VISIBLE_DEVICES and NEURON_RT_VISIBLE_CORES are read when the device runtime starts, which is
    # in this process, later.
    tuned = os.environ.get(APPLIED_ENV)  # this process's own mark (re-marked at fork) when the template tuned malloc
    # The malloc settings glibc read when the template started hold here too: kept, so that env.json says so and
    # processes this cell starts (compile workers) get them.
    malloc = {k: os.environ[k] for k in STABLE_ENV if k in os.environ}
    os.environ.clear()
    os.environ.update(malloc)
    os.environ.update(request["env"])
    os.environ.pop(APPLIED_ENV, None)  # the supervisor's, if any: another process's tuning
    if tuned == str(os.getpid()):
        os.environ[APPLIED_ENV] = tuned
    os.chdir(request["cwd"])
    sys.path[:0] = [p for p in request["sys_path"] if p not in sys.path]
    cpus = request.get("cpus")
    if cpus and hasattr(os, "sched_setaffinity"):
        import torch

        os.sched_setaffinity(0, cpus)  # before the first parallel op starts the OpenMP pool: threads inherit it
        torch.set_num_threads(len(cpus))
    inductor: Any = sys.modules.get("torch._inductor.config")  # a config module: attributes set at import
    if inductor is not None:  # decided when the template imported it, from the template's cores and environment
        inductor.compile_threads = inductor.decide_compile_threads()
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(null)
    sys.stdin = open(os.devnull)  # the template's stdin object may hold buffered control messages


def run_target(target: str, payload: dict[str, Any]) -> NoReturn:
    """Call `module:function(payload)` and exit with its return value (0 for None).

    `os._exit`: the template's atexit handlers and buffers are not this process's to run or flush.
    """
    code = 1
    try:
        module, _, name = target.partition(":")
        code = int(getattr(importlib.import_module(module), name)(payload) or 0)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)
