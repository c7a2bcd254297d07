"""Which cells of a sweep run in one process, timed together: the comparison groups of its baseline, planned before
any cell runs (cell.group times them). Cells are paired only where one process can run them as they would run
alone; elsewhere they are timed unpaired, and the sweep says why (docs/methodology.md, "Paired timing")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neuronexp.analysis.baseline import Baseline
from neuronexp.analysis.overrides import override_values
from neuronexp.backends.table import named_backend
from neuronexp.config.key_roles import ROLES, SHARED, shared

# The nodes whose values are process state, the timing itself or the placement: cells differing in them cannot share
# a timed pass (config.key_roles).
_SHARED_NODES = [key for key, role in ROLES.items() if role in SHARED and "." not in key]


@dataclass
class Unit:
    """Cells run in one process: a comparison group's cells still to run, or a single cell."""

    cells: list[Any]  # PlannedCell
    group: str | None = None  # the group's key, null for a cell run alone


def group_key(overrides: list[str], baseline_keys: set[str]) -> str:
    values = override_values(",".join(overrides))
    return "\x1f".join(f"{k}={v}" for k, v in sorted(values.items()) if k not in baseline_keys)


def process_key(config: Any) -> str:
    """What a cell sets in its process: cells timed together must agree on all of it."""
    return repr([getattr(config, name) for name in _SHARED_NODES])


def unpaired_reason(baseline: Baseline | None, cells: list[Any]) -> str | None:
    """Why a group of these planned cells cannot be timed together, or None when it can."""
    if clash := sorted(k for k in baseline or {} if shared(k)):
        return f"the baseline's keys {', '.join(clash)} set process state the cells cannot share"
    for cell in cells:
        info = named_backend(cell.backend)
        if info is not None and info.unpaired:
            return info.unpaired
    if len({c.process_key for c in cells}) > 1:
        return "its cells differ in threads, allocator, timing or launcher keys"
    if any(c.isolated for c in cells):
        return "launcher.isolate=true gives each cell a device slot of its own"
    return None


def plan_units(cells: list[Any], baseline: Baseline | None, todo: set[str]) -> tuple[list[Unit], list[str]]:
    """The cells still to run (`todo` run_ids) as units in sweep order, each group where its first cell stands;
    and one line per group that is not paired, saying why (the sweep logs them)."""
    keys = set(baseline or {})
    if not keys:
        return [Unit([c]) for c in cells if c.run_id in todo], []
    groups: dict[str, list[int]] = {}
    for i, cell in enumerate(cells):
        groups.setdefault(group_key(cell.overrides, keys), []).append(i)
    units, notes, placed = [], [], set()
    for i, cell in enumerate(cells):
        if i in placed or cell.run_id not in todo:
            continue
        members = groups[group_key(cell.overrides, keys)]
        waiting = [j for j in members if cells[j].run_id in todo]
        reason = unpaired_reason(baseline, [cells[j] for j in members]) if len(members) > 1 else None
        if len(waiting) > 1 and reason is None:
            units.append(Unit([cells[j] for j in waiting], group_key(cell.overrides, keys)))
            placed.update(waiting)
            if len(waiting) < len(members):
                notes.append(
                    f"{cell.label}: {len(members) - len(waiting)} cell(s) of its group are complete already; "
                    "the rest are timed together, their speedups over a reused baseline unpaired"
                )
        else:
            units.append(Unit([cell]))
            placed.add(i)
            if reason is not None and len(members) > 1 and i == members[0]:
                notes.append(f"{cell.label}: its group is timed unpaired: {reason}")
    return units, notes
