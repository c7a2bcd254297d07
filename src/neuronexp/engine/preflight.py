"""The checks a plan passes once every cell's plain values are good, before any cell runs: those that import torch
(each cell's code and inputs against its `forward`, the backends), the host's memory (engine.memory_fit), and what
the executor must give (device slots here, or the cluster's: Executor.check). ConfigError: the first that fails."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from neuronexp.backends import BACKENDS, named_backend
from neuronexp.config import CellSpec
from neuronexp.config.validate import validate_code
from neuronexp.engine.planned import PlannedCell


def check_runnable(cells: list[PlannedCell], executor: Any) -> None:
    """Check the planned cells against this machine and the executor, each kind once; each cell's spec gets the
    warnings its row will carry. The code is checked in a process forked from this host's fork server where the
    executor has one, never imported here."""
    from neuronexp.backends import check_available
    from neuronexp.cellprocess.forkserver import server_address

    # An unavailable backend fails first, once: where the answer needs no torch (torch-neuronx not installed, a
    # CPU-only torch build), before the module's code or the slot checks import it.
    for name in {c.spec.config.backend for c in cells if c.spec is not None}:
        check_available(name)
    # The inputs' warnings go into the cell's row; an input that cannot be is named before its memory is weighed.
    warnings = _code_warnings(cells, forked=executor.forks and server_address() is not None)
    if not executor.remote:  # a cell that cannot fit here: refused before any is built
        from neuronexp.engine.memory_fit import memory_warnings

        memory = memory_warnings(cells)
        warnings = [[*found, *memory.get(cell.num, [])] for cell, found in zip(cells, warnings)]
    for cell, found in zip(cells, warnings):
        if cell.spec is not None:
            cell.spec = dataclasses.replace(cell.spec, warnings=tuple(found))
    executor.check(cells)


def _code_warnings(cells: list[PlannedCell], forked: bool) -> list[list[str]]:
    """Each cell's code checked (config.validate.validate_code: its module, its inputs' factories); the inputs'
    warnings, by cell. Forked: in a child of the fork server's template, which has imported torch already, so that
    this process imports neither torch nor the user's layers for it (about 2 s of a sweep's start on 2 cores). A
    module from Python's memory was checked when it was given (engine.in_memory)."""
    configs = [c.spec.config for c in cells if c.spec is not None and c.spec.memory is None]
    if forked and configs:
        from neuronexp.cellprocess.entry import code_warnings

        checked = iter(code_warnings(configs))
    else:
        checked = iter([validate_code(config) for config in configs])
    out: list[list[str]] = []
    for cell in cells:
        spec = cell.spec
        out.append([] if spec is None else list(spec.warnings) if spec.memory is not None else next(checked))
    return out


def check_local_slots(cells: list[PlannedCell], slotted: Callable[[PlannedCell], bool]) -> None:
    """The device slots the cells ask of this host exist here, and the locks' directory of the cells that take one
    (`slotted`: the executor's formula) is usable now."""
    from neuronexp.backends import backend_kind
    from neuronexp.cellprocess.launch import check_slots_fit
    from neuronexp.cellprocess.placement import check_lock_dir

    specs = [c.spec for c in cells if c.spec is not None]
    for s in {_slot_ask(s): s for s in specs}.values():
        check_slots_fit(backend_kind(s.config.backend), s.config)
    for cell in cells:
        if cell.spec is not None and slotted(cell):
            check_lock_dir(cell.spec.config.launcher.lock_dir)


def _slot_ask(spec: CellSpec) -> tuple[Any, ...]:
    launcher, assumed = spec.config.launcher, tuple(tuple(b.assumed_units(spec.config)) for b in BACKENDS)
    return (spec.config.backend, launcher.devices, launcher.per_device, launcher.pool, assumed)


def host_slots(specs: list[CellSpec]) -> set[tuple[int, int | None]]:
    """The (devices, per_device) of cells whose backend runs on the host: the CPU slots a Slurm node must fit."""
    out = set()
    for spec in specs:
        named = named_backend(spec.config.backend)  # explicitly: `auto` may mean another device on the nodes
        if named is not None and named.on_host:
            out.add((spec.config.launcher.devices, spec.config.launcher.per_device))
    return out
