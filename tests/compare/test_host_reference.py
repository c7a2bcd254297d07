"""compare and the host reference (host.reference): a host that got slower is not called a regression of the code,
while code that got slower on a steady host still is. On the session's real sweep, its copies scaled as each case
says (the reference columns are what a real run wrote)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neuronexp import load
from neuronexp.analysis.floor import FLOOR_FACTOR, REFERENCED_FLOOR_FACTOR, host_widened
from neuronexp.compare import CompareOptions, compare
from neuronexp.compare.host import HOST_COLUMNS
from neuronexp.results import Results


def _scaled(results: Results, code: float, host: float | None) -> Results:
    """Every latency ×`code`; the host reference ×`host` (None: dropped, as in a run that predates it)."""
    cells, samples = results.cells.copy(), results.samples.copy()
    samples["latency_us"] *= code
    for col in [c for c in cells.columns if c.startswith("latency_") and c.endswith("_us")]:
        cells[col] *= code
    for col in HOST_COLUMNS:
        cells[col] = cells[col] * host if host is not None else np.nan
    return Results(cells, results.ops, samples)


def test_every_timed_cell_carries_both_reference_workloads(sweep: Path) -> None:
    cells = load(sweep).cells
    assert cells["host_dispatch_us"].gt(0).all() and cells["host_memory_us"].gt(0).all()
    # 16 elements against 16 MiB: the two workloads measure different things, and say so in their sizes.
    assert (cells["host_memory_us"] > 5 * cells["host_dispatch_us"]).all()


def _interval(cmp) -> np.ndarray:
    return cmp.cells[["ci_low", "ci_high"]].to_numpy()


def test_a_host_that_got_slower_is_not_called_but_slower_code_is(sweep: Path) -> None:
    """Checked as relations between intervals, which hold however noisy the session's sweep was (the comparisons
    without the reference are given the floor the reference's comparisons get, so that only the widening differs)."""
    a = load(sweep)
    same = REFERENCED_FLOOR_FACTOR
    host = 1.5  # the reference moved ×1.5, and every cell ×1.5
    host_slower = compare(a, _scaled(a, 1.5, host))
    as_measured = compare(a, _scaled(a, 1.5, host), CompareOptions(host_reference=False, floor=same))
    assert np.allclose(host_slower.cells["host_dispatch_move"], host)
    # The interval as measured, and with the host's ×1.5 taken out: it holds 1, so no cell can be called.
    assert np.allclose(_interval(host_slower), _interval(as_measured) / [1.5, 1.0])
    assert (host_slower.cells["ci_low"] <= 1.0).all() and (host_slower.cells["verdict"] != "slower").all()
    assert any("the host itself moved" in n for n in host_slower.notes)
    assert any("--no-host-reference: intervals as measured" in n for n in as_measured.notes)
    # The code ×2 on a host as it was: the reference costs the call nothing.
    code_slower = compare(a, _scaled(a, 2.0, 1.0))
    raw = compare(a, _scaled(a, 2.0, 1.0), CompareOptions(host_reference=False, floor=same))
    assert np.allclose(_interval(code_slower), _interval(raw))
    assert list(code_slower.cells["verdict"]) == list(raw.cells["verdict"])
    # The code ×2 on a host ×1.5 slower (×3 in all): with the move taken out, still the ×2.
    both = compare(a, _scaled(a, 3.0, host))
    assert np.allclose(both.cells["ci_low"], code_slower.cells["ci_low"])


def test_a_side_without_the_reference_is_said_and_compared_as_measured(sweep: Path) -> None:
    """... with the wider floor that must then hold the host's moves too (analysis.floor.FLOOR_FACTOR)."""
    a = load(sweep)
    old = compare(_scaled(a, 1.0, None), _scaled(a, 2.0, 1.0))
    assert old.cells["host_dispatch_move"].isna().all()
    assert np.allclose(
        _interval(old), _interval(compare(a, _scaled(a, 2.0, 1.0), CompareOptions(host_reference=False)))
    )
    assert any("lack the host reference" in n for n in old.notes)


def test_the_floor_is_narrower_where_the_reference_holds_the_hosts_moves(sweep: Path) -> None:
    a = load(sweep)
    with_reference, without = (
        compare(a, _scaled(a, 2.0, 1.0)),
        compare(a, _scaled(a, 2.0, 1.0), CompareOptions(host_reference=False)),
    )
    drifted = without.cells["floor_a"] > 0
    assert drifted.any()  # a real sweep's rounds drift a little at least
    ratio = with_reference.cells["floor_a"][drifted] / without.cells["floor_a"][drifted]
    assert np.allclose(ratio, REFERENCED_FLOOR_FACTOR / FLOOR_FACTOR)
    assert np.allclose(
        compare(a, a, CompareOptions(floor=1.0)).cells["floor_a"][drifted],
        without.cells["floor_a"][drifted] / FLOOR_FACTOR,
    )


@pytest.mark.parametrize(
    ("moves", "expected"),
    [
        ([1.0, 1.0], (1.4, 1.6)),
        ([2.0, 1.0], (0.7, 1.6)),  # the host's part of the change may be all of it, or none
        ([0.5, 1.25], (1.12, 3.2)),  # a faster host: the code may be slower still
        ([math.nan, 2.0], (0.7, 1.6)),
    ],
)
def test_the_interval_spans_the_change_as_measured_and_with_the_hosts_move_taken_out(moves, expected) -> None:
    assert host_widened(1.4, 1.6, moves) == pytest.approx(expected)


def test_the_reference_moves_are_columns_of_the_comparison(sweep: Path) -> None:
    cells = compare(load(sweep), load(sweep)).cells
    assert isinstance(cells, pd.DataFrame) and (cells[list(HOST_COLUMNS.values())] == 1.0).all(axis=None)


@pytest.mark.parametrize(("dispatch", "memory"), [(-5.0, None), (None, 1e300), (0.0, None), (math.inf, math.nan)])
def test_a_reference_that_cannot_be_a_measurement_is_treated_as_missing_and_said(sweep: Path, dispatch, memory) -> None:
    """A negative, zero, infinite or absurd (1e300 µs) figure on a side: compared as a side without the reference."""
    a = load(sweep)
    tampered = a.cells.copy()
    for col, value in (("host_dispatch_us", dispatch), ("host_memory_us", memory)):
        if value is not None:
            tampered[col] = value
    cmp = compare(Results(tampered, a.ops, a.samples), _scaled(a, 2.0, 1.0))
    without = compare(_scaled(a, 1.0, None), _scaled(a, 2.0, 1.0))
    assert cmp.cells["host_dispatch_move"].isna().all() or cmp.cells["host_memory_move"].isna().all()
    assert np.allclose(_interval(cmp), _interval(without))
    (note,) = [n for n in cmp.notes if "not a measurement" in n]
    assert note.startswith(f"{len(tampered)} host reference figure(s) are not a measurement")
    assert "treated as missing" in note


def test_a_reference_moved_beyond_a_hosts_drift_excuses_nothing(sweep: Path) -> None:
    """Issue 44: the reference figures of B edited ×100 with every latency ×100 hid the ×100 regression. Checked at
    ×10 (beyond the bound too): ×100 of the 16 MiB workload may pass MAX_REFERENCE_US on a loaded host, and such a
    figure is treated as missing, not as a move."""
    a = load(sweep)
    tampered = compare(a, _scaled(a, 10.0, 10.0))
    as_measured = compare(a, _scaled(a, 10.0, 10.0), CompareOptions(host_reference=False))
    assert np.allclose(_interval(tampered), _interval(as_measured))
    assert list(tampered.cells["verdict"]) == list(as_measured.cells["verdict"])
    assert np.allclose(tampered.cells["host_dispatch_move"], 10.0)  # the move is still shown
    (note,) = [n for n in tampered.notes if "beyond ×4" in n]
    assert note.startswith(f"{len(tampered.cells)} cell(s) have a host reference that moved beyond ×4")
    assert "up to ×10 either way" in note and not any("the host itself moved" in n for n in tampered.notes)
    # At the bound it still excuses: a host ×4 slower, every cell ×4.
    at_bound = compare(a, _scaled(a, 4.0, 4.0))
    assert (at_bound.cells["verdict"] != "slower").all() and not any("beyond ×4" in n for n in at_bound.notes)
    faster_host = compare(_scaled(a, 10.0, 10.0), a)  # ÷10 is as far as ×10
    as_measured = compare(_scaled(a, 10.0, 10.0), a, CompareOptions(host_reference=False))
    assert np.allclose(_interval(faster_host), _interval(as_measured))
    assert any("beyond ×4" in n for n in faster_host.notes)
    # One cell lacking the reference (a side measured before it) and the others beyond: both said.
    b = _scaled(a, 10.0, 10.0)
    b.cells.loc[b.cells.index[0], "host_dispatch_us"] = np.nan
    mixed = compare(a, b)
    assert any("beyond ×4" in n for n in mixed.notes) and any(
        "1 cell(s) lack the host reference" in n for n in mixed.notes
    )
