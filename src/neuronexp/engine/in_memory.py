"""Cells whose module is an `nn.Module` instance in this process's memory (neuronexp.sweep(modules=...)): each module
name is a variant of every composed job, its config the job's with the first input's shape and dtype taken from the
example inputs and the module's class named (never built from it). Such a cell's code has no fingerprint, so its
run_id is new in every invocation (it is never reused), and it runs in this process only (engine.sweeper)."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

from neuronexp.config import ConfigError, InMemory
from neuronexp.engine._hydra import CellComposer
from neuronexp.engine.plan import PlannedCell, plan_cell

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
    """One cell per job and module name, its directory numbered in that order."""
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
