"""The work one call of a cell needs: the fewest bytes it must move (from its real tensors, intermediates counting
nothing: they are what a fused kernel avoids) and the FLOPs it does (FlopCounterMode's count; operators without a
formula count 0, and the note names them). The rules: docs/profile.md, "How far from the limit"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

# Operators that move or relabel data but compute nothing: never named in the "no FLOP formula" note.
_NO_COMPUTE = {
    "detach",
    "alias",
    "empty",
    "empty_like",
    "empty_strided",
    "lift_fresh",
    "clone",
    "copy_",
    "_to_copy",
    "contiguous",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "fill_",
    "scalar_tensor",
    "_unsafe_view",
    "_reshape_alias",
    "cat",
    "stack",
}
_NOTE_OPS = 8


@dataclass(kw_only=True)
class Work:
    bytes_read: int
    bytes_written: int
    flops: float
    note: str | None  # which operators have no FLOP formula (they count 0), or how the fallback counted
    fallback: bool = False  # counted without the dispatch modes (listed_work)

    @property
    def bytes_min(self) -> int:
        return self.bytes_read + self.bytes_written


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def _storage(t: torch.Tensor) -> int:
    """The tensor's storage, so that a view and its base are the same memory."""
    try:
        return int(t.untyped_storage().data_ptr())
    except Exception:  # a tensor without an addressable storage (some device or wrapper tensors)
        return id(t)


def _unique_bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of each distinct tensor once (the same data passed twice, a tied weight)."""
    seen: dict[tuple[int, int | torch.SymInt, int], int] = {}
    for t in tensors:
        size = t.numel() * t.element_size()
        seen[(_storage(t), t.storage_offset(), size)] = size
    return sum(seen.values())


class _Reads(TorchDispatchMode):
    """Records the storages every operator of the call receives, and the operators the counter below it found
    no FLOPs in (it decomposes a composite operator to count its matmuls: aten.linear is counted, aten.rms_norm
    is not, and the note names the operator the module called, not its decomposition)."""

    def __init__(self, counter: FlopCounterMode) -> None:
        super().__init__()
        self.counter = counter
        self.storages: set[int] = set()
        self.zero_ops: list[Any] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 (torch's signature)
        self.storages.update(_storage(t) for t in _tensors((args, kwargs)))
        before = self.counter.get_total_flops()
        out = func(*args, **(kwargs or {}))
        if self.counter.get_total_flops() == before:
            self.zero_ops.append(func)
        return out


def _attention_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:  # noqa: ANN001
    from torch.utils.flop_counter import sdpa_flop_count

    return int(sdpa_flop_count(query_shape, key_shape, value_shape))


def _custom_formulas() -> dict[Any, Any]:
    """Formulas FlopCounterMode lacks for kernels a cell may hit: CPU flash attention and the overridable fused
    attention that out-of-tree devices register (when this torch has them)."""
    aten = torch.ops.aten
    names = ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_fused_attention_overrideable")
    return {getattr(aten, n): _attention_flops for n in names if hasattr(aten, n)}


def _named(ops: list[Any]) -> list[str]:
    """Operators that compute something, once each (views, copies and allocations left out)."""
    names: dict[str, None] = {}
    for op in ops:
        name = str(getattr(op, "overloadpacket", op))
        if not getattr(op, "is_view", False) and name.split(".")[-1] not in _NO_COMPUTE:
            names[name] = None
    return list(names)


def listed_work(
    module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, flops: float | None, why: str
) -> Work:
    """The fallback when the counting modes cannot run the module: every input, parameter and buffer read
    once and every output written once (no operator saw them, so nothing tells what the call did not touch),
    and `flops` from the profiler's with_flops when it was on (else unknown)."""
    inputs = _tensors((args, kwargs)) + [*module.parameters(), *module.buffers()]
    held = {_storage(t) for t in inputs}
    bytes_read = _unique_bytes(inputs)
    bytes_written = _unique_bytes([t for t in _tensors(out) if _storage(t) not in held])
    source = (
        "FLOPs from the profiler's with_flops"
        if flops is not None
        else "FLOPs unknown (profiler.with_flops=true counts them)"
    )
    note = f"FlopCounterMode could not run the module ({why}): {source}; bytes: every input, weight and output"
    flops = flops if flops is not None else float("nan")
    return Work(bytes_read=bytes_read, bytes_written=bytes_written, flops=flops, note=note, fallback=True)


def count_work(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Work:
    """bytes_min and FLOPs of one eager call `module(*args, **kwargs)` (the rules: docs/profile.md, "How far
    from the limit")."""
    counter = FlopCounterMode(display=False, custom_mapping=_custom_formulas())
    reads = _Reads(counter)
    with counter, reads:  # `reads` on top: it sees the operators the module called
        out = module(*args, **kwargs)
    given = [*_tensors((args, kwargs)), *module.parameters(), *module.buffers()]
    held = {_storage(t) for t in given}
    bytes_read = _unique_bytes([t for t in given if _storage(t) in reads.storages])
    bytes_written = _unique_bytes([t for t in _tensors(out) if _storage(t) not in held])
    missing = _named(reads.zero_ops)
    note = None
    if missing:
        more = f" and {len(missing) - _NOTE_OPS} more" if len(missing) > _NOTE_OPS else ""
        note = f"no FLOP formula, counted 0: {', '.join(missing[:_NOTE_OPS])}{more}"
    return Work(bytes_read=bytes_read, bytes_written=bytes_written, flops=float(counter.get_total_flops()), note=note)
