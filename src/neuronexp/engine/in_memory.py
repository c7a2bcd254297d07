"""Cells whose module is an `nn.Module` instance in this process's memory (neuronexp.sweep(modules=...)), built from
the caller's objects: each module name is a variant of every composed job and every set of example inputs (several
sets: one swept axis), its config the job's with no module of neuronexp's composed, the caller's class named in its
place and the first input's shape and dtype taken from the tensors. Such a cell's code has no fingerprint, so its
run_id is new in every invocation (never reused); it runs in this process (engine.executor.Inline), under the cell
time limit (`run_limited`)."""

from __future__ import annotations

import inspect
import logging
import signal
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import ValidationError, open_dict

from neuronexp.config import CellSpec, ConfigError, InMemory
from neuronexp.engine._hydra import CellComposer
from neuronexp.engine.plan import check_distinct, plan_cell, varying_keys
from neuronexp.engine.planned import PlannedCell

log = logging.getLogger("neuronexp.engine")
# The overrides that modules= and inputs= replace: given beside them, they would be ignored (or, swept, make cells
# that differ in nothing but a label), so they are refused.
REPLACED = {
    "module": "modules= names the modules of this sweep",
    "input.shape": "with modules=, the first input's shape is that of inputs= (a list of input tuples sweeps it)",
    "input.dtype": "with modules=, the first input's dtype is that of inputs= (a list of input tuples sweeps it)",
}
# Composed into every job instead of the default module, which modules= replaces: none of neuronexp's is composed.
NO_MODULE = "~module"


@dataclass(frozen=True)
class InMemoryModules:
    modules: dict[str, Any]  # name -> nn.Module
    inputs: tuple[tuple[Any, ...], ...]  # one set of example inputs per value of the swept axis

    @classmethod
    def checked(cls, modules: Mapping[str, Any], inputs: Any) -> InMemoryModules:
        """ConfigError: no modules, a name that is not a plain word, a value that is not an nn.Module, no inputs, an
        input set a module's `forward` cannot take, two sets whose first tensors look alike."""
        import torch

        if not modules:
            raise ConfigError("modules", "{}", "give at least one name: nn.Module instance")
        for name, module in modules.items():
            if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
                raise ConfigError("modules", repr(name), "names are words (letters, digits, _ and -)")
            if not isinstance(module, torch.nn.Module):
                raise ConfigError(f"modules[{name!r}]", type(module).__name__, "must be a torch.nn.Module instance")
        sets = _input_sets(inputs() if callable(inputs) else inputs)
        seen: dict[tuple[str, str], int] = {}
        for i, values in enumerate(sets):
            for name, module in modules.items():
                _check_signature(name, module, values)
            if (first := _first(values)) in seen:
                raise ConfigError(
                    "inputs", f"sets {seen[first]} and {i}", f"their first tensors are alike ({' '.join(first)})"
                )
            seen[first] = i
        return cls(dict(modules), sets)


def _input_sets(inputs: Any) -> tuple[tuple[Any, ...], ...]:
    """One input set (a tensor, or a tuple whose first item is one), or several: any other iterable of such."""
    import torch

    if isinstance(inputs, torch.Tensor) or (isinstance(inputs, tuple) and inputs and torch.is_tensor(inputs[0])):
        candidates: Iterable[Any] = [inputs]
    else:
        candidates = inputs if isinstance(inputs, Iterable) and not isinstance(inputs, (str, bytes)) else [inputs]
    sets = tuple(
        (v,) if isinstance(v, torch.Tensor) else tuple(v) if isinstance(v, (tuple, list)) else v for v in candidates
    )
    if not sets or not all(isinstance(s, tuple) and s and torch.is_tensor(s[0]) for s in sets):
        raise ConfigError(
            "inputs",
            type(inputs).__name__,
            "a tuple of tensors (the first a tensor), a callable returning one, or a list of such tuples (swept)",
        )
    return sets


def _first(inputs: tuple[Any, ...]) -> tuple[str, str]:
    """The first input's shape and dtype, as the cell's `input.shape` and `input.dtype` take them."""
    first = inputs[0]
    return f"[{','.join(str(d) for d in first.shape)}]", str(first.dtype).removeprefix("torch.")


def _check_signature(name: str, module: Any, inputs: tuple[Any, ...]) -> None:
    try:
        inspect.signature(module.forward).bind(*inputs)
    except TypeError as exc:
        raise ConfigError("inputs", f"{len(inputs)} input(s)", f"{name}.forward cannot take them: {exc}") from None
    except ValueError:  # no signature to read (a builtin's): the first call will tell
        pass


def plan_memory_cells(jobs: list[list[str]], composer: CellComposer, memory: InMemoryModules) -> list[PlannedCell]:
    """One cell per job, input set and module name, its directory numbered in that order (each job composed with
    NO_MODULE, which the caller's Python door adds). ConfigError: an override that modules= and inputs= replace
    (`module`, the first input's `input.shape` and `input.dtype`)."""
    for job in jobs:
        for override in job:
            key, _, value = override.lstrip("+~").partition("=")
            if key in REPLACED and override.partition("=")[0] != NO_MODULE:
                raise ConfigError(key, value, f"{REPLACED[key]}; leave {key} out with modules=")
    invocation = uuid.uuid4().hex
    planned = [
        (job, inputs, name, [*(o for o in job if o.partition("=")[0] != NO_MODULE), *_labels(inputs), f"module={name}"])
        for job in jobs
        for inputs in memory.inputs
        for name in memory.modules
    ]
    varying = varying_keys([labels for *_, labels in planned])
    cells = []
    for num, (job, inputs, name, labels) in enumerate(planned):
        module = memory.modules[name]
        cfg = composer.compose(job, num)
        shape, dtype = _first(inputs)
        try:
            with open_dict(cfg):
                cfg.module = {"_target_": f"{type(module).__module__}.{type(module).__qualname__}"}
                cfg.input.shape, cfg.input.dtype = [int(d) for d in inputs[0].shape], dtype
        except ValidationError:
            raise ConfigError(f"inputs ({name})", dtype, "not a dtype input.dtype allows") from None
        cells.append(plan_cell(num, labels, cfg, varying, InMemory(module, inputs, name, invocation)))
    check_distinct(cells, composer.master)
    return cells


def _labels(inputs: tuple[Any, ...]) -> list[str]:
    shape, dtype = _first(inputs)
    return [f"input.shape={shape}", f"input.dtype={dtype}"]


class _TimeLimit(BaseException):
    """Raised in the main thread when cells from memory pass their time limit: a BaseException, so that no cell's
    `except Exception` (its failure becoming its row) takes it for the layer's own error."""


def run_limited(specs: list[CellSpec]) -> None:
    """Run the placed cells (engine.sweeper, one unit after another) with torch's default dtype restored after them:
    a layer that sets it (torch.set_default_dtype) sets it for its own cells only, as in a cell process of its own."""
    import torch

    before = torch.get_default_dtype()
    try:
        _run_limited(specs)
    finally:
        torch.set_default_dtype(before)


def _run_limited(specs: list[CellSpec]) -> None:
    """Run the placed cells (one, or a group timed together) in this process under `launcher.cell_timeout_s` for each
    of them, as a sweep's supervisor runs a cell process. Past it, a watcher thread sends this process's main thread
    SIGALRM, whose handler stops the cells (Python stops at its next step: a native call running then ends first), and
    every cell left without a row gets the error row a supervisor writes. A SIGALRM not ours goes to the handler the
    caller had. Only the main thread can be interrupted: called from another, the limit cannot apply, and a warning
    says so."""
    from neuronexp.cellprocess.entry import run_placed

    limit = specs[0].config.launcher.cell_timeout_s
    timeout = limit * len(specs) if limit else None
    if timeout is None or threading.current_thread() is not threading.main_thread():
        if timeout is not None:
            log.warning(
                "launcher.cell_timeout_s does not apply to these cells: modules from memory run in the caller's "
                "process, where only the main thread can be interrupted, and neuronexp.sweep was called from another"
            )
        run_placed(specs)
        return
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    expired, finished = threading.Event(), threading.Event()
    previous = signal.getsignal(signal.SIGALRM)

    def on_alarm(signum: int, frame: Any) -> None:
        if expired.is_set() and not finished.is_set():
            raise _TimeLimit
        if callable(previous):
            previous(signum, frame)

    main = int(threading.main_thread().ident or 0)  # (called from the main thread: it has started)
    watcher = threading.Thread(target=_watch, args=(timeout, finished, expired, main), daemon=True)
    signal.signal(signal.SIGALRM, on_alarm)
    watcher.start()
    try:
        run_placed(specs)
        finished.set()
    except _TimeLimit:
        _write_timed_out(specs, timeout, started_at)
    finally:
        finished.set()
        watcher.join()
        signal.signal(signal.SIGALRM, previous)


def _watch(timeout: float, finished: threading.Event, expired: threading.Event, main: int) -> None:
    if not finished.wait(timeout):
        expired.set()
        signal.pthread_kill(main, signal.SIGALRM)


def _write_timed_out(specs: list[CellSpec], timeout: float, started_at: str) -> None:
    import os
    import socket

    from neuronexp.backends import backend_kind
    from neuronexp.cell.rows import write_lost_cell
    from neuronexp.results.files import read_phase

    where = {"placement": None, "placement_cpus": None, "worker_pid": os.getpid(), "host": socket.gethostname()}
    for spec in specs:
        out_dir = Path(spec.out_dir)
        if not (out_dir / "cells.parquet").is_file():
            phase = read_phase(out_dir)
            cause = f"timed out after {timeout:g} s{f' during {phase}' if phase else ''} (launcher.cell_timeout_s)"
            write_lost_cell(spec, out_dir, cause, backend_kind(spec.config.backend), where, started_at)
