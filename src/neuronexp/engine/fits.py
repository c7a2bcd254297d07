"""Whether a cell can fit in this host's memory, answered when it is planned, from what is known before it is built:
its inputs' sizes (the specs' shapes and dtypes), and for a module from Python's memory its weights. A cell that
cannot fit is refused in one line before anything is allocated, instead of swapping until the kernel's
out-of-memory killer ends it (docs/guarantees.md, "Memory"). Host backends only: a device's memory is its own."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from neuronexp.config import CellSpec, ConfigError
from neuronexp.config.input_specs import compute_dtype, first_spec, tensor_dtype
from neuronexp.formatting import fmt_bytes

# Bytes per element of each input dtype the schema allows (config.schema.DType).
ITEM_BYTES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "bfloat16": 2, "float16": 2, "bool": 1}
# A cell whose lower bound is above this share of the available memory is warned about: the bound leaves out the
# outputs and intermediates, which for a layer working element by element are a multiple of its input.
WARN_SHARE = 0.5


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
    total = 0
    for tensor in [first_spec(cfg), *_tensor_specs(list(cfg.args)), *_tensor_specs(list(cfg.kwargs.values()))]:
        total += math.prod(int(d) for d in tensor["shape"]) * ITEM_BYTES.get(tensor_dtype(tensor, follows), 8)
    return total


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
