"""The profiled step as a tree of operator calls, read from `prof.events()` (each call with its parent and
children), never from names alone: what the module dispatched, what executed (leaf work, not wrappers), and which
op names are leaves the hotspot may be chosen among (docs/profile.md, "The profile").
Python frames and user annotations are transparent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from neuronexp.backends.kineto import is_set_apart

STEP_PREFIX = "ProfilerStep"
# Host bookkeeping that dispatches no operator: Dynamo's guard check, AOTAutograd's wrappers, the
# profiler's own frees (profile_memory).
BOOKKEEPING = {
    "TorchDynamo Cache Lookup",
    "Pregraph bytecode",
    "AOTDispatcher Runtime Wrapper Prologue",
    "AOTDispatcher Runtime Wrapper Epilogue",
    "[memory]",
}
# Ops that allocate, view or dispatch a conversion but compute nothing themselves.
NO_WORK = {
    f"aten::{n}"
    for n in (
        "empty",
        "empty_strided",
        "empty_like",
        "new_empty",
        "new_empty_strided",
        "view",
        "_unsafe_view",
        "as_strided",
        "reshape",
        "_reshape_alias",
        "expand",
        "expand_as",
        "unsqueeze",
        "squeeze",
        "t",
        "transpose",
        "permute",
        "slice",
        "select",
        "detach",
        "alias",
        "lift_fresh",
        "result_type",
        "to",
        "type_as",
        "contiguous",
        "resize_",
        "unflatten",
        "flatten",
        "view_as",
        "numpy_T",
        "split",
        "chunk",
        "unbind",
        "narrow",
        "broadcast_to",
        "resolve_conj",
        "resolve_neg",
        "conj",
        "_conj",
        "_neg_view",
        "is_same_size",
        "set_",
        "_nested_tensor_from_mask_left_aligned",
    )
}
# Work an op does for itself when called inside another op (fill its output, copy a scalar, convert a dtype).
HELPERS = {"aten::fill_", "aten::zero_", "aten::copy_", "aten::_to_copy", "aten::zeros_like", "aten::zeros"}


@dataclass
class StepTree:
    """Counts over all profiled steps of one cycle (divide by `active` for per step) and op-name sets."""

    dispatched: int = 0
    executed: int = 0
    python_names: set[str] = field(default_factory=set)
    annotation_names: set[str] = field(default_factory=set)
    wrapper_names: set[str] = field(default_factory=set)  # ops with a working call inside at least once


def _transparent(evt: Any) -> bool:
    return bool(getattr(evt, "is_python_function", False) or getattr(evt, "is_user_annotation", False))


def _op_children(evt: Any, apart: tuple[str, ...] = ()) -> list[Any]:
    """Children with Python frames and annotations flattened away, and a device runtime's or driver's events left
    out (`apart`: their Kineto activity types; backends.kineto)."""
    out = []
    for child in evt.cpu_children or []:
        if is_set_apart(child, apart):
            continue
        out.extend(_op_children(child, apart) if _transparent(child) else [child])
    return out


def _works(evt: Any, nested: bool) -> bool:
    name = evt.name
    return not (name in BOOKKEEPING or name in NO_WORK or (nested and name in HELPERS) or name.startswith(STEP_PREFIX))


def _visit(evt: Any, nested: bool, tree: StepTree, apart: tuple[str, ...]) -> bool:
    """Count `evt`'s subtree; True when some call in it does work (so its ancestors are not leaves)."""
    below = nested or evt.name.startswith("aten::")
    inside = any([_visit(c, below, tree, apart) for c in _op_children(evt, apart)])
    works = _works(evt, nested)
    if inside:
        tree.wrapper_names.add(evt.name)
    elif works:
        tree.executed += 1
    return inside or works


def step_tree(events: Any, apart: tuple[str, ...] = ()) -> StepTree:
    """Walk the CPU call tree of one cycle's events (a profiler's `events()`); `apart`: the Kineto activity types of
    the device's runtime and driver, whose host-typed events are no operator calls."""
    tree = StepTree()
    roots = []
    for evt in events:
        if str(getattr(evt.device_type, "name", evt.device_type)) != "CPU" or is_set_apart(evt, apart):
            continue
        if getattr(evt, "is_python_function", False):
            tree.python_names.add(evt.name)
            continue
        if getattr(evt, "is_user_annotation", False):
            tree.annotation_names.add(evt.name)
            continue
        parent = evt.cpu_parent
        while parent is not None and _transparent(parent):
            parent = parent.cpu_parent
        if parent is None or parent.name.startswith(STEP_PREFIX):
            if evt.name.startswith(STEP_PREFIX):
                continue
            roots.append(evt)
            tree.dispatched += evt.name not in BOOKKEEPING
    for root in roots:
        _visit(root, False, tree, apart)
    return tree


def is_leaf_row(name: str, device_type: str, tree: StepTree) -> bool:
    """Whether an op row may be a hotspot: device rows always; host ops that did work and wrapped none."""
    if device_type != "CPU":
        return True
    return not (name in tree.wrapper_names or name in NO_WORK or name in BOOKKEEPING or name in tree.annotation_names)
