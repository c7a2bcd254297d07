"""What each config key is to the stages that read it, in one table: part of a cell's run_id or not, state that the
cells timed together in one process must share, a label `neuronexp-compare` joins cells on. A node's role is every
key's under it unless a longer key says otherwise; tests/config/test_key_roles.py gives every schema key one."""

from __future__ import annotations

from enum import Enum
from typing import Any


class Role(str, Enum):
    IDENTITY = "identity"  # what the cell computes: its run_id, a label compare joins on
    PROCESS = "process"  # state its process sets: its run_id, a label; cells timed together share it
    TIMING = "timing"  # how it is timed: its run_id; cells timed together share it; not a label
    PROFILING = "profiling"  # how it is profiled: its run_id; not a label
    PLACEMENT = "placement"  # where it runs (recorded in `placement`): not its run_id; cells timed together share it
    INVOCATION = "invocation"  # how the invocation is carried out (reuse, a dry run): not its run_id
    JUDGED = "judged"  # applied when results are read (thresholds, the baseline): not its run_id


ROLES = {
    "module": Role.IDENTITY,
    "input": Role.IDENTITY,
    "dims": Role.IDENTITY,
    "compile": Role.IDENTITY,
    "neuron": Role.IDENTITY,
    "correctness": Role.IDENTITY,  # whether the output is saved and checked
    "correctness.rtol": Role.JUDGED,
    "correctness.atol": Role.JUDGED,
    "correctness.float32_reference": Role.JUDGED,  # adds a file beside the output, not a figure
    "backend": Role.PROCESS,
    "threads": Role.PROCESS,
    "allocator": Role.PROCESS,
    "timing": Role.TIMING,
    "profiler": Role.PROFILING,
    "launcher": Role.PLACEMENT,
    "sweep": Role.INVOCATION,
    "baseline": Role.JUDGED,
    "roofline": Role.JUDGED,
    "noise": Role.JUDGED,
}
MEASURED = {Role.IDENTITY, Role.PROCESS, Role.TIMING, Role.PROFILING}  # part of run_id and of the `overrides` label
SHARED = {Role.PROCESS, Role.TIMING, Role.PLACEMENT}  # one value for every cell of a timed group
LABELS = {Role.IDENTITY, Role.PROCESS}  # what compare joins two result sets on


def role(key: str) -> Role | None:
    """The role of a key as typed in an override (`+`/`~` allowed): its own, else its nearest node's; None for a key
    not in the table (Hydra's own, a key the schema lacks)."""
    parts = key.lstrip("+~").split(".")
    found = (ROLES.get(".".join(parts[:end])) for end in range(len(parts), 0, -1))
    return next((r for r in found if r is not None), None)


def measured(key: str) -> bool:
    """Whether a key is part of what a cell measured: its run_id and its `overrides` label."""
    found = role(key)
    return found is None or found in MEASURED


def shared(key: str) -> bool:
    """Whether cells timed together in one process must agree on the key."""
    return role(key) in SHARED


def drop_unmeasured(resolved: dict[str, Any]) -> None:
    """Remove the keys that are not measured from a resolved config, in place."""
    for key in (k for k, r in ROLES.items() if r not in MEASURED):
        *path, leaf = key.split(".")
        node: Any = resolved
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
