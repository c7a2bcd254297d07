"""Where an invocation's cells run (engine.executor), in-process: which cells hold a device slot under each executor,
the local executor running `launcher.devices` units at once (never more), saying where each ended when there are
several slots, warming the fork server's compiler only for compiled cells, and on Ctrl-C starting no queued unit and
still letting the server's template go. The cells' processes are stood in for by `supervise` (cellprocess.launch)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import neuronexp.cellprocess.launch as launch
from neuronexp.engine.executor import Executor, Inline, Local
from neuronexp.engine.grouping import Unit
from neuronexp.engine.planned import PlannedCell


def _cell(num: int, isolated: bool = False, compiled: bool = False) -> PlannedCell:
    return PlannedCell(
        num=num, dir=str(num), overrides=[], run_id=f"r{num}", backend="cpu", label="", isolated=isolated,
        compiled=compiled,
    )  # fmt: skip


class _Server:
    """What Local asks of its fork server: warm it for the cells, let its template go once no cell is left to fork."""

    def __init__(self) -> None:
        self.warmed: list[list[str]] = []
        self.released = 0

    def serve(self, warm: list[str]) -> None:
        self.warmed.append(warm)

    def release(self) -> None:
        self.released += 1


class _Progress:
    def __init__(self) -> None:
        self.ended: list[tuple[int, bool]] = []

    def finished(self, cell: PlannedCell, where: bool = False) -> None:
        self.ended.append((cell.num, where))


def test_which_cells_hold_a_device_slot_of_their_own() -> None:
    alone, isolated = _cell(0), _cell(1, isolated=True)
    assert [Executor().slotted(c) for c in (alone, isolated)] == [False, True]  # launcher.isolate decides
    assert [Inline().slotted(c) for c in (alone, isolated)] == [False, False]  # in this process: never
    assert [Local(1, "stable").slotted(c) for c in (alone, isolated)] == [False, True]
    assert [Local(2, "stable").slotted(c) for c in (alone, isolated)] == [True, True]  # several slots: each its own
    assert [Local(1, "stable", isolate=True).slotted(c) for c in (alone, isolated)] == [True, True]  # a timed run


def test_the_fork_server_warms_its_compiler_only_for_a_plan_with_compiled_cells() -> None:
    executor = Local(1, "stable")
    executor.planned([_cell(0)])  # no server of its own (a caller's): nothing to warm
    executor.server = server = _Server()
    executor.planned([_cell(0), _cell(1)])
    executor.planned([_cell(0), _cell(1, compiled=True)])
    assert server.warmed == [[], ["compile"]]


def test_a_server_of_its_own_is_told_what_to_warm_once_from_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its template reads one line before it forks anything (`{"warm": [...]}`): a line sent as the server starts,
    # before the cells are planned, would leave a compiled plan's compiler cold.
    from neuronexp.cellprocess.forkserver import ADDRESS_ENV, ForkServer

    told: list[list[str]] = []
    monkeypatch.delenv(ADDRESS_ENV, raising=False)  # no server of the test session's: the executor starts its own
    monkeypatch.setattr(ForkServer, "start", lambda server: server)  # no template process here
    monkeypatch.setattr(ForkServer, "announce", lambda server: None)
    monkeypatch.setattr(ForkServer, "serve", lambda server, warm=(): told.append(list(warm)))
    monkeypatch.setattr(ForkServer, "__exit__", lambda server, *exc: None)
    with Local(1, "stable") as executor:
        assert executor.server is executor.own
        executor.planned([_cell(0), _cell(1, compiled=True)])
    assert told == [["compile"]]


@pytest.mark.parametrize("slots", [1, 2])
def test_the_local_executor_runs_as_many_units_at_once_as_it_has_slots(
    monkeypatch: pytest.MonkeyPatch, slots: int
) -> None:
    # With 2 slots, two units must be inside `supervise` together to pass the barrier; with 1, never more than one.
    barrier, lock, running, most = threading.Barrier(slots, timeout=10), threading.Lock(), [0], [0]
    held: list[bool] = []

    def supervise(specs: list[Any], slotted: bool) -> list[None]:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            held.append(slotted)
        barrier.wait()
        with lock:
            running[0] -= 1
        return [None for _ in specs]

    monkeypatch.setattr(launch, "supervise", supervise)
    units = [Unit((_cell(0), _cell(1))), Unit((_cell(2),)), Unit((_cell(3),)), Unit((_cell(4, isolated=True),))]
    started: list[int] = []
    executor, progress = Local(slots, "stable"), _Progress()
    executor.server = server = _Server()
    executor.run(units, lambda unit: started.append(unit.cells[0].num) or [], progress)
    assert most[0] == slots and sorted(started) == [0, 2, 3, 4] and server.released == 1
    assert sorted(progress.ended) == [(n, slots > 1) for n in range(5)]  # each cell once; where, with slots
    assert held.count(True) == (4 if slots > 1 else 1)  # the isolated cell's unit holds a slot either way
    if slots == 1:
        assert started == [0, 2, 3, 4]  # in the plan's order


def test_ctrl_c_starts_no_queued_unit_and_still_lets_the_template_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "supervise", lambda specs, slotted: [])
    started: list[int] = []

    def start(unit: Unit) -> list[Any]:
        started.append(unit.cells[0].num)
        raise KeyboardInterrupt

    executor, progress = Local(1, "stable"), _Progress()
    executor.server = server = _Server()
    with pytest.raises(KeyboardInterrupt):
        executor.run([Unit((_cell(n),)) for n in range(3)], start, progress)
    assert started == [0] and progress.ended == [] and server.released == 1


def test_an_executor_runs_its_units_in_order_and_reports_each_cell(tmp_path: Path) -> None:
    ran: list[list[Any]] = []

    class Recording(Executor):
        def run_unit(self, specs: list[Any]) -> None:
            ran.append(specs)

    progress = _Progress()
    units = [Unit((_cell(0), _cell(1))), Unit((_cell(2),))]
    Recording().run(units, lambda unit: [c.num for c in unit.cells], progress)
    assert ran == [[0, 1], [2]] and progress.ended == [(0, False), (1, False), (2, False)]
    with pytest.raises(NotImplementedError):
        Executor().run_unit([])


def test_a_slot_freed_by_a_short_unit_takes_the_next_while_a_long_one_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two slots, three units: the first runs until the third has started, which only the second's free slot allows.
    third_started = threading.Event()

    def supervise(specs: list[Any], slotted: bool) -> list[None]:
        if specs == [0]:
            assert third_started.wait(timeout=10), "the third unit waited for the long one to end"
        if specs == [2]:
            third_started.set()
        return []

    monkeypatch.setattr(launch, "supervise", supervise)
    executor, progress = Local(2, "stable"), _Progress()
    executor.run([Unit((_cell(n),)) for n in range(3)], lambda unit: [unit.cells[0].num], progress)
    assert sorted(progress.ended) == [(0, True), (1, True), (2, True)]


def test_on_one_slot_a_unit_starts_only_after_the_one_before_it_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the terminal shows: each cell's line before the next starts; and a Ctrl-C then leaves no unit queued.
    monkeypatch.setattr(launch, "supervise", lambda specs, slotted: [])
    seen: list[str] = []

    class Progress:
        def finished(self, cell: PlannedCell, where: bool = False) -> None:
            seen.append(f"end {cell.num}")

    Local(1, "stable").run(
        [Unit((_cell(n),)) for n in range(3)], lambda unit: seen.append(f"start {unit.cells[0].num}") or [], Progress()
    )
    assert seen == ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]
