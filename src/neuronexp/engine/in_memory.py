"""Cells whose module is an `nn.Module` instance in this process's memory (neuronexp.sweep(modules=...)): each module
name is a variant of every composed job, its config the job's with the first input's shape and dtype taken from the
example inputs and the module's class named (never built from it). Such a cell's code has no fingerprint, so its
run_id is new in every invocation (it is never reused), and it runs in this process only (engine.sweeper)."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import logging
import signal
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from neuronexp.config import CellSpec, ConfigError, InMemory
from neuronexp.engine._hydra import CellComposer
from neuronexp.engine.plan import PlannedCell, check_distinct, plan_cell

log = logging.getLogger("neuronexp.engine")
# The overrides that modules= replaces: given beside it, they would be ignored (or, swept, make cells that differ in
# nothing but a label), so they are refused.
REPLACED = {
    "module": "modules= names the modules of this sweep",
    "input.shape": "with modules=, the first input's shape is that of inputs= (call neuronexp.sweep once per shape)",
    "input.dtype": "with modules=, the first input's dtype is that of inputs= (call neuronexp.sweep once per dtype)",
}
NOTE = "module from Python's memory (neuronexp.sweep(modules=...)): no code fingerprint, so never reused"


@dataclass(frozen=True)
class InMemoryModules:
    modules: dict[str, Any]  # name -> nn.Module
    inputs: tuple[Any, ...]

    @classmethod
    def checked(cls, modules: Mapping[str, Any], inputs: tuple[Any, ...] | Callable[[], Any] | Any) -> InMemoryModules:
        """ConfigError: no modules, a name that is not a plain word, a value that is not an nn.Module, no inputs."""
        import torch

        if not modules:
            raise ConfigError("modules", "{}", "give at least one name: nn.Module instance")
        for name, module in modules.items():
            if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
                raise ConfigError("modules", repr(name), "names are words (letters, digits, _ and -)")
            if not isinstance(module, torch.nn.Module):
                raise ConfigError(f"modules[{name!r}]", type(module).__name__, "must be a torch.nn.Module instance")
        values = inputs() if callable(inputs) else inputs
        values = (values,) if isinstance(values, torch.Tensor) else tuple(values or ())
        if not values or not isinstance(values[0], torch.Tensor):
            raise ConfigError(
                "inputs", type(inputs).__name__, "a tuple of tensors (the first a tensor), or a callable returning one"
            )
        for name, module in modules.items():
            _check_signature(name, module, values)
        return cls(dict(modules), values)


def _check_signature(name: str, module: Any, inputs: tuple[Any, ...]) -> None:
    try:
        inspect.signature(module.forward).bind(*inputs)
    except TypeError as exc:
        raise ConfigError("inputs", f"{len(inputs)} input(s)", f"{name}.forward cannot take them: {exc}") from None
    except ValueError:  # no signature to read (a builtin's): the first call will tell
        pass


def plan_memory_cells(jobs: list[list[str]], composer: CellComposer, memory: InMemoryModules) -> list[PlannedCell]:
    """One cell per job and module name, its directory numbered in that order. ConfigError: an override that the
    modules replace (`module`, the first input's `input.shape` and `input.dtype`: they come from `inputs`)."""
    for job in jobs:
        for override in job:
            key, _, value = override.lstrip("+~").partition("=")
            if key in REPLACED:
                raise ConfigError(key, value, f"{REPLACED[key]}; leave {key} out with modules=")
    cells: list[PlannedCell] = []
    invocation = uuid.uuid4().hex
    varying = {"module"} if len(memory.modules) > 1 else set()
    first = memory.inputs[0]  # its shape and dtype: the cells' labels and their dtype
    shape, dtype = ",".join(str(d) for d in first.shape), str(first.dtype).removeprefix("torch.")
    for job in jobs:
        composed = [*job, f"input.shape=[{shape}]", f"input.dtype={dtype}"]
        for name, module in memory.modules.items():
            num = len(cells)
            cell = plan_cell(num, composed, composer.compose(composed, num), varying)
            cells.append(_from_memory(cell, name, module, memory.inputs, invocation))
    check_distinct(cells, composer.master)
    return cells


def _from_memory(cell: PlannedCell, name: str, module: Any, inputs: tuple[Any, ...], invocation: str) -> PlannedCell:
    assert cell.spec is not None
    target = f"{type(module).__module__}.{type(module).__qualname__}"
    config = dataclasses.replace(cell.spec.config, module={"_target_": target})
    run_id = hashlib.sha256(f"{cell.run_id} {name} {invocation}".encode()).hexdigest()[:16]
    overrides = ",".join(sorted([*filter(None, cell.spec.overrides.split(",")), f"module={name}"]))
    spec = dataclasses.replace(
        cell.spec,
        config=config,
        run_id=run_id,
        module_name=name,
        overrides=overrides,
        warnings=(*cell.spec.warnings, NOTE),
        memory=InMemory(module, inputs),
    )
    label = f"module={name} {cell.label}".strip() if cell.label != " ".join(cell.overrides) else f"module={name}"
    node = OmegaConf.create(cell.yaml())  # its config.yaml names the caller's class, from memory
    node.module = {"_target_": target, "from_memory": name}
    return dataclasses.replace(
        cell,
        run_id=run_id,
        overrides=[*cell.overrides, f"module={name}"],
        label=label,
        spec=spec,
        config_yaml=OmegaConf.to_yaml(node),
    )


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

    main = threading.main_thread().ident
    assert main is not None
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
