"""A host cell against this host's memory, before anything is allocated: the least it will need, as far as is known
before it is built (its inputs' specs; a module from Python's memory, its weights). One that cannot fit is refused in
one line instead of swapping until the kernel's out-of-memory killer ends it (docs/guarantees.md, "Memory"); one
that needs more than half of what is available gets a warning in its row."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping
from typing import Any

from neuronexp.config import CellSpec, ConfigError
from neuronexp.config.input_specs import compute_dtype, first_spec, tensor_dtype
from neuronexp.engine.planned import PlannedCell
from neuronexp.formatting import fmt_bytes

log = logging.getLogger("neuronexp.engine")
# Bytes per element of each input dtype the schema allows (config.schema.DType).
ITEM_BYTES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "bfloat16": 2, "float16": 2, "bool": 1}
# A cell whose lower bound is above this share of the available memory is warned about: the bound leaves out the
# outputs and intermediates, which for a layer working element by element are a multiple of its input.
WARN_SHARE = 0.5


def memory_warnings(cells: list[PlannedCell]) -> dict[int, list[str]]:
    """Each host cell against the host's available memory (check_fits, which raises ConfigError for a cell that
    cannot fit); the warnings for their rows, by cell."""
    from neuronexp.backends import backend_info, backend_kind
    from neuronexp.host.memory import available_bytes

    host = [c for c in cells if c.spec is not None and backend_info(backend_kind(c.spec.config.backend)).on_host]
    found = check_fits([c.spec for c in host if c.spec is not None], available_bytes())
    for cell, warning in zip(host, found):
        if warning is not None:
            log.warning("%s: %s", cell.label or "the cell", warning)
    return {c.num: [w] for c, w in zip(host, found) if w is not None}


def _tensor_specs(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensor_specs(item)
    elif isinstance(value, Mapping) and "shape" in value and "_target_" not in value and "_value_" not in value:
        yield value


def input_bytes(spec: CellSpec) -> int:
    """The bytes of the tensors its inputs' specs describe (a factory's output, unknown here, counts 0)."""
    cfg = spec.config.input
    follows = compute_dtype(cfg)  # the dtype of a tensor spec without its own (config.input_specs)
    tensors = [first_spec(cfg), *_tensor_specs(list(cfg.args)), *_tensor_specs(list(cfg.kwargs.values()))]
    return sum(math.prod(int(d) for d in t["shape"]) * ITEM_BYTES.get(tensor_dtype(t, follows), 8) for t in tensors)


def least_bytes(spec: CellSpec) -> tuple[int, str]:
    """A lower bound of the host memory the cell allocates while it runs, and what it is made of: its inputs, twice
    where timing.relocate copies them to a fresh place each round (the copy is made while they exist), and the copy
    cell.build makes of a module from memory. Left out: a built module's weights (unknown before it is built), its
    outputs and intermediates."""
    relocate = bool(spec.config.timing.relocate)
    if spec.memory is not None:
        tensors = [*spec.memory.module.parameters(), *spec.memory.module.buffers()]
        weights = sum(t.numel() * t.element_size() for t in tensors)
        inputs = sum(t.numel() * t.element_size() for t in spec.memory.inputs if hasattr(t, "element_size"))
        moved = f", and the copy of its inputs each timing round makes, {fmt_bytes(inputs)} (timing.relocate)"
        return weights + (inputs if relocate else 0), f"the copy of its module, {fmt_bytes(weights)}" + (
            moved if relocate else ""
        )
    inputs = input_bytes(spec)
    twice = ", twice: each timing round copies them to a fresh place (timing.relocate)" if relocate else ""
    return inputs * (2 if relocate else 1), f"its inputs, {fmt_bytes(inputs)}{twice}"


def check_fits(specs: list[CellSpec], available: int | None) -> list[str | None]:
    """Refuse the first cell that cannot fit in `available` bytes (the host's MemAvailable; None: unknown, nothing
    checked); for each spec, the warning for its row when its lower bound is above WARN_SHARE of it, else None.
    The ConfigError names the first input's shape, what the cell needs at least, and what the host has."""
    if available is None:
        return [None for _ in specs]
    warnings: list[str | None] = []
    for spec in specs:
        needed, made_of = least_bytes(spec)
        if needed > available:
            raise ConfigError(
                "input.shape",
                list(spec.config.input.shape),
                f"the cell needs at least {fmt_bytes(needed)} of host memory while it runs "
                f"({made_of}), and this host has {fmt_bytes(available)} available (MemAvailable): use a smaller "
                "shape",
            )
        warnings.append(
            f"this cell needs at least {fmt_bytes(needed)} of host memory ({made_of}), more than half of the "
            f"{fmt_bytes(available)} available when it was planned: it may be killed for lack of memory"
            if needed > WARN_SHARE * available
            else None
        )
    return warnings
