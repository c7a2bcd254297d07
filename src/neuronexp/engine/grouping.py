"""Which cells of an invocation run in one process, timed together: the comparison groups of its baseline, planned
with the cells (cell.group times them). Cells are paired only where one process can run them as they would run
alone, and where the executor runs a group in one process; elsewhere they are timed unpaired, and the invocation
says why (docs/timing.md, "Paired timing")."""

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


@dataclass(frozen=True)
class Unit:
    """Cells run in one process: a comparison group's cells, or a single cell."""

    cells: tuple[Any, ...]  # PlannedCell
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


def comparison_units(cells: list[Any], baseline: Baseline | None, unpaired: str | None) -> tuple[list[Unit], list[str]]:
    """Every cell in a unit, in sweep order: each comparison group that can be timed together as one, where its first
    cell stands, every other cell alone (`unpaired`: the executor's reason to time none together); and one line per
    group that is not paired, saying why."""
    keys = set(baseline or {})
    if not keys:
        return [Unit((c,)) for c in cells], []
    if unpaired is not None:
        return [Unit((c,)) for c in cells], [f'speedups are unpaired: {unpaired} (docs/timing.md, "Paired timing")']
    groups: dict[str, list[Any]] = {}
    for cell in cells:
        groups.setdefault(group_key(cell.overrides, keys), []).append(cell)
    units, notes = [], []
    for key, members in groups.items():
        reason = unpaired_reason(baseline, members) if len(members) > 1 else None
        if reason is None:
            units.append(Unit(tuple(members), key if len(members) > 1 else None))
            continue
        units += [Unit((c,)) for c in members]
        notes.append(f"{members[0].label}: its group is timed unpaired: {reason}")
    return sorted(units, key=lambda u: u.cells[0].num), notes


def still_to_run(units: list[Unit], todo: set[str]) -> tuple[list[Unit], list[str]]:
    """The units, less the cells already complete (`todo`: the run_ids still to run); a group some of whose cells are
    complete times the rest together, and a line says so."""
    out, notes = [], []
    for unit in units:
        waiting = tuple(c for c in unit.cells if c.run_id in todo)
        if len(waiting) > 1 or (waiting and unit.group is None):
            out.append(Unit(waiting, unit.group))
        elif waiting:  # the one cell left of a group: timed alone
            out.append(Unit(waiting))
        if 1 < len(waiting) < len(unit.cells):
            notes.append(
                f"{waiting[0].label}: {len(unit.cells) - len(waiting)} cell(s) of its group are complete already; "
                "the rest are timed together, their speedups over a reused baseline unpaired"
            )
    return sorted(out, key=lambda u: u.cells[0].num), notes
