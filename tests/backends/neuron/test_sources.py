"""Device time from several sources, reconciled: the capture window found from the capture (known answers), the
documented order, the consistency check and its tolerance, and a disagreement planted in the STAND-IN's runtime."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from neuronexp.backends import DeviceFill
from neuronexp.backends.neuron.runtime import RuntimeFigures, RuntimeTrace, figures
from neuronexp.backends.neuron.sources import TOLERANCE, Evidence, check, reconcile
from neuronexp.backends.neuron.window import ASSUMED, BY_COUNT, BY_EXPLORER, BY_STEPS, capture_window
from neuronexp.config import ScheduleConfig

SCHEDULE = ScheduleConfig(wait=1, warmup=1, active=1, repeat=1)


def test_the_runtime_trace_splits_profiled_steps_from_the_rest_of_the_capture() -> None:
    # Two steps captured (warm-up, active), three executions each; only the active step is a ProfilerStep span.
    runs = [(0.0, 30.0), (31.0, 43.0), (44.0, 50.0), (100.0, 130.0), (131.0, 143.0), (144.0, 150.0)]
    out = figures(RuntimeTrace(runs, steps=[(90.0, 160.0)]))
    assert (out.executions, out.step_executions, out.step_busy_us, out.steps_covered) == (6, 3, 48.0, 2.0)
    assert out.busy_us == 96.0
    apart = figures(RuntimeTrace(runs, steps=[(1e9, 2e9)]))  # spans on another clock: nothing inside, not used
    assert apart.step_busy_us is None and apart.steps_covered is None


@pytest.mark.parametrize(
    ("runtime", "kernels", "explorer", "events", "window"),
    [
        (RuntimeFigures(6, 96.0, 48.0, 3.0), None, {}, {}, (2.0, "warmup+active", BY_STEPS)),
        (RuntimeFigures(3, 48.0, 48.0, 3.0), None, {}, {}, (1.0, "active", BY_STEPS)),
        (RuntimeFigures(9, 144.0), 3.0, {}, {}, (3.0, "wait+warmup+active", BY_COUNT)),
        (RuntimeFigures(10, 144.0), 3.0, {}, {}, (1.0, "unverified", ASSUMED)),  # not a whole number of steps
        (None, None, {"aten::mul": 180.0}, {"aten::mul": 90.0}, (2.0, "warmup+active", BY_EXPLORER)),
        (None, None, {"aten::mul": 180.0}, {}, (1.0, "unverified", ASSUMED)),
    ],
)
def test_the_capture_window_comes_from_the_capture(
    runtime: RuntimeFigures | None, kernels: float | None, explorer: dict, events: dict, window: tuple
) -> None:
    found = capture_window(SCHEDULE, runtime, kernels, explorer, events)
    assert (found.steps, found.label, found.method) == window


def test_repeated_cycles_are_named_per_cycle() -> None:
    found = capture_window(ScheduleConfig(0, 1, 2, 2), RuntimeFigures(24, 1.0, 1.0, 4.0), None, {}, {})
    assert (found.steps, found.label) == (6.0, "warmup+active")  # 3 steps in each of 2 cycles


def test_sources_agree_within_the_tolerance_and_disagree_beyond_it() -> None:
    assert check({}) == ("no source", []) and check({"neuron_runtime": 5.0}) == ("one source", [])
    near = {"profiler_device_events": 100.0, "neuron_runtime": 100.0 * (1 + TOLERANCE) - 0.01}
    assert check(near) == ("agree", [])
    verdict, notes = check({"profiler_device_events": 112.0, "neuron_runtime": 224.0, "neuron_explorer": 113.0})
    assert verdict == "disagree" and notes == [
        "device time sources disagree by more than 10%: profiler_device_events 112.0 us vs neuron_runtime 224.0 us "
        "per step",
        "device time sources disagree by more than 10%: neuron_runtime 224.0 us vs neuron_explorer 113.0 us per step",
    ]


def test_the_order_takes_key_averages_then_host_rows_then_the_runtime_then_explorer() -> None:
    # 12 executions, 6 in the one profiled step: 2 steps captured. The capture's busy time (300 us) covers a slower
    # warm-up step too; the profiled step's own busy time (112) is the runtime's per-step figure, not 300 / 2.
    run = RuntimeFigures(12, 300.0, 112.0, 6.0)
    explorer = {"aten::mul": 90.0, "aten::add_": 4.0}
    ev = Evidence(SCHEDULE, {"aten::mul"}, events_us=110.0, events_kernels=6.0, runtime=run, explorer_ops=explorer)
    ev.host_us, ev.host_executions, ev.host_cycles = 111.0, 6.0, [(111.0, 6.0)]
    first = reconcile(ev, "given")
    assert first.chosen == "profiler_device_events" and first.per_op == first.chosen and first.fill is None
    assert first.columns["neuron_correlate_device_time"] == "taken"
    ev.events_us = None
    second = reconcile(ev, "given")
    assert second.chosen == "profiler_host_rows" and second.per_op == second.chosen
    assert second.fill == DeviceFill(per_op=None, step=[(111.0, 6.0)])  # the rows keep their own time
    assert second.columns["neuron_correlate_device_time"] == "taken"  # device time came through the profiler
    ev.host_us = None
    third = reconcile(ev, "given")
    assert third.chosen == "neuron_runtime" and third.per_step["neuron_runtime"] == 112.0
    assert third.fill == DeviceFill(per_op=[{"aten::mul": 45.0}], step=[(112.0, 6.0)])  # 2 steps captured: halved
    assert third.columns["device_time_source"] == "neuron_runtime" and third.columns["neuron_capture_steps"] == 2
    assert third.columns["neuron_correlate_device_time"] == "ignored"  # given, and nothing came through the profiler
    ev.runtime = None
    fourth = reconcile(ev, "not_passed")
    assert fourth.chosen == "neuron_explorer" and fourth.fill is not None and fourth.fill.step is not None
    assert fourth.fill.step[0][0] == 94.0 and math.isnan(fourth.fill.step[0][1])
    assert fourth.columns["neuron_capture_window"] == "unverified"
    assert fourth.columns["neuron_correlate_device_time"] == "not_passed"


def test_no_per_op_split_is_nan_and_said_with_what_to_do() -> None:
    ev = Evidence(SCHEDULE, {"aten::mul"}, runtime=RuntimeFigures(6, 112.0, 112.0, 6.0))
    ev.missing = {"neuron_explorer": "no FrameworkInstruction table (layer names need neuron.debug_info=true)"}
    found = reconcile(ev, "ignored")
    assert found.per_op == "none" and found.fill == DeviceFill(per_op=[{}], step=[(112.0, 6.0)])
    assert (
        "per-op split missing: key_averages() had no device time per op and Neuron Explorer gave none (no "
        "FrameworkInstruction table (layer names need neuron.debug_info=true)); the op table's device columns are NaN "
        "(enable neuron.debug_info for Explorer's per-op names)"
    ) in found.warnings
    assert found.columns["neuron_per_op_source"] == "none"


def test_the_tolerance_is_ten_percent_of_the_larger_figure_each_way() -> None:
    for low, high, verdict in ((100.0, 111.0, "agree"), (100.0, 111.2, "disagree"), (111.2, 100.0, "disagree")):
        assert check({"neuron_runtime": low, "profiler_device_events": high})[0] == verdict, (low, high)
    assert check({"neuron_runtime": 90.0, "profiler_device_events": 100.0})[0] == "agree"  # exactly 10%: not beyond
    # 20% apart disagrees whichever source is larger (22% was once reported as agreeing)
    assert check({"neuron_explorer": 100.0, "profiler_device_events": 80.0})[0] == "disagree"


def test_a_capture_shorter_than_the_active_steps_is_no_window() -> None:
    two = ScheduleConfig(wait=1, warmup=1, active=2, repeat=1)
    for covered in (RuntimeFigures(3, 50.0, 50.0, 3.0), RuntimeFigures(2, 50.0, 50.0, 4.0)):  # 1 and 0.5 steps
        found = capture_window(two, covered, None, {}, {})
        assert (found.steps, found.label, found.method) == (2.0, "unverified", ASSUMED)
    assert capture_window(two, RuntimeFigures(6, 50.0, 50.0, 3.0), None, {}, {}).label == "active"


def test_explorers_window_is_the_median_of_its_per_op_ratios() -> None:
    explorer = {"aten::mul": 180.0, "aten::mean": 24.0, "aten::add": 12.0}  # ratios 2, 2, 3
    events = {"aten::mul": 90.0, "aten::mean": 12.0, "aten::add": 4.0}
    found = capture_window(SCHEDULE, None, None, explorer, events)
    assert (found.steps, found.label, found.method) == (2.0, "warmup+active", BY_EXPLORER)


@pytest.mark.parametrize("bad", [0.0, -5.0, math.inf, math.nan])
def test_a_figure_that_is_not_a_positive_finite_time_is_no_source(bad: float) -> None:
    # 0, negative, infinite or NaN device time is no figure: the next source in the order stands (here a small one).
    found = reconcile(Evidence(SCHEDULE, {"aten::mul"}, events_us=bad, host_us=0.5), "not_passed")
    assert found.per_step == {"profiler_host_rows": 0.5} and found.chosen == "profiler_host_rows"
    assert math.isnan(found.columns["neuron_device_time_events_us"])
    assert found.columns["device_time_sources"] == "profiler_host_rows"


def test_the_runtimes_capture_wide_busy_time_is_divided_by_the_steps_it_covered() -> None:
    # No ProfilerStep spans in the trace: 6 executions, 3 device kernels a step, so 2 steps captured; 96 us busy.
    ev = Evidence(SCHEDULE, {"aten::mul"}, events_kernels=3.0, runtime=RuntimeFigures(6, 96.0))
    found = reconcile(ev, "not_passed")
    assert found.per_step == {"neuron_runtime": 48.0} and found.fill == DeviceFill(per_op=[{}], step=[(48.0, 3.0)])
    assert found.columns["neuron_runtime_executions_per_step"] == 3.0


def test_explorers_unnamed_time_counts_in_its_step_figure() -> None:
    # Explorer: 90 us for aten::mul (45 per step in key_averages(): 2 steps captured) and 30 us it could not name.
    ev = Evidence(SCHEDULE, {"aten::mul"}, events_ops={"aten::mul": 45.0})
    ev.explorer_ops, ev.explorer_unnamed_us = {"aten::mul": 90.0}, 30.0
    found = reconcile(ev, "not_passed")
    assert found.per_step == {"neuron_explorer": 60.0} and found.window.steps == 2.0
    assert found.columns["neuron_explorer_unnamed_us"] == 15.0


def test_no_per_op_split_without_a_reason_from_explorer_says_none_and_where_to_look() -> None:
    found = reconcile(
        Evidence(SCHEDULE, {"aten::mul"}, events_us=None, host_us=None, runtime=RuntimeFigures(1, 5.0)), "not_passed"
    )
    assert (
        "per-op split missing: key_averages() had no device time per op and Neuron Explorer gave none (none); the op "
        "table's device columns are NaN (see neuron_explorer)"
    ) in found.warnings


def test_no_source_at_all_is_nan_device_time_never_the_empty_op_rows_sum() -> None:
    ev = Evidence(SCHEDULE, {"aten::mul"}, missing={"neuron_runtime": "no system trace", "neuron_explorer": "no NTFF"})
    found = reconcile(ev, "not_passed")
    assert found.chosen == "none" and found.fill is not None and found.fill.per_op == [{}]
    assert found.fill.step is not None and all(math.isnan(x) for x in found.fill.step[0])  # not the rows' sum, 0
    assert math.isnan(found.columns["device_time_us"]) and found.columns["device_time_source"] == "none"
    assert found.warnings[0] == (
        "no device time from any source (profiler_device_events: none; profiler_host_rows: none; neuron_runtime: no "
        "system trace; neuron_explorer: no NTFF): device_time_us and device_ops are NaN"
    )


def _same(got: dict, want: dict) -> bool:
    """Equal, NaN equal to NaN (a figure no source gave)."""
    nan = {k for k, v in want.items() if isinstance(v, float) and math.isnan(v)}
    both_nan = all(isinstance(got.get(k), float) and math.isnan(got[k]) for k in nan)
    return got.keys() == want.keys() and both_nan and all(got[k] == v for k, v in want.items() if k not in nan)


def test_a_row_from_the_runtime_and_explorer_says_each_figure_and_why() -> None:
    # 12 executions on 2 cores, 6 in the profiled step (112 us busy): 2 steps captured. Explorer: aten::mul (a host
    # op), aten::add_ (none: no op row), 10 us unnamed, over those 2 steps. key_averages() had no device time.
    run = RuntimeFigures(12, 300.0, 112.0, 6.0, cores=2)
    ev = Evidence(SCHEDULE, {"aten::mul"}, runtime=run, explorer_ops={"aten::mul": 90.0, "aten::add_": 4.0})
    ev.explorer_unnamed_us, ev.missing = 10.0, {"profiler_device_events": "no device rows"}
    found = reconcile(ev, "given")
    assert _same(
        found.columns,
        {
            "neuron_device_time_events_us": math.nan,
            "neuron_device_time_host_rows_us": math.nan,
            "neuron_device_time_runtime_us": 112.0,
            "neuron_device_time_explorer_us": 52.0,  # (90 + 4 + 10) / 2
            "device_time_sources": "neuron_runtime,neuron_explorer",
            "device_time_check": "disagree",
            "device_time_source": "neuron_runtime",
            "neuron_per_op_source": "neuron_explorer",
            "neuron_sources_missing": "profiler_device_events: no device rows; profiler_host_rows: none",
            "neuron_runtime_executions": 12.0,
            "neuron_runtime_executions_per_step": 6.0,
            "neuron_runtime_cores": 2.0,
            "neuron_capture_steps": 2.0,
            "neuron_capture_window": "warmup+active",
            "neuron_capture_window_method": "profiler_steps",
            "neuron_explorer_ops_matched": 1.0,
            "neuron_explorer_ops_unmatched_us": 2.0,
            "neuron_explorer_unnamed_us": 5.0,
            "neuron_correlate_device_time": "ignored",
        },
    ), found.columns
    assert found.fill == DeviceFill(per_op=[{"aten::mul": 45.0}], step=[(112.0, 6.0)])
    assert found.warnings == [
        "device time per step from neuron_runtime (112.0 us): key_averages() had none (correlate_device_time: ignored)",
        "the runtime capture covered warmup+active (2 steps, found by profiler_steps): capture-wide figures divided by "
        "2, not by the 1 active step(s)",
        "device time per op from Neuron Explorer's FrameworkInstruction table (1 ops)",
        "Neuron Explorer ops without a key_averages() row, in no op row: aten::add_ (2.0 us per step)",
        "Neuron Explorer named no framework op for 5.0 us per step of device time (NEFFs without debug names): in no "
        "op row",
        "device time sources disagree by more than 10%: neuron_runtime 112.0 us vs neuron_explorer 52.0 us per step; "
        "device_time_us uses neuron_runtime (the documented order)",
    ]


def test_a_runtime_trace_without_executions_is_counted_and_nothing_else_is_figured() -> None:
    found = reconcile(Evidence(SCHEDULE, {"aten::mul"}, runtime=RuntimeFigures(0, 0.0)), "not_passed")
    nan = math.nan
    assert _same(
        found.columns,
        {
            **dict.fromkeys(["neuron_device_time_events_us", "neuron_device_time_host_rows_us"], nan),
            **dict.fromkeys(["neuron_device_time_runtime_us", "neuron_device_time_explorer_us"], nan),
            "device_time_sources": "",
            "device_time_check": "no source",
            "device_time_source": "none",
            "device_time_us": nan,
            "device_ops": nan,
            "neuron_per_op_source": "none",
            "neuron_sources_missing": "profiler_device_events: none; profiler_host_rows: none; neuron_runtime: none; "
            "neuron_explorer: none",
            "neuron_runtime_executions": 0.0,  # the trace was read: zero executions, not a missing figure
            "neuron_runtime_executions_per_step": 0.0,
            "neuron_runtime_cores": nan,
            "neuron_capture_steps": nan,
            "neuron_capture_window": "unverified",
            "neuron_capture_window_method": "schedule",
            **dict.fromkeys(["neuron_explorer_ops_matched", "neuron_explorer_ops_unmatched_us"], nan),
            "neuron_explorer_unnamed_us": nan,
            "neuron_correlate_device_time": "not_passed",
        },
    ), found.columns


def test_capture_wide_figures_over_an_unverified_window_say_how_wrong_they_could_be() -> None:
    # Explorer alone (nothing to count its window against): 80 us over the 2 cycles' 4 active steps, 20 a step.
    ev = Evidence(ScheduleConfig(wait=0, warmup=1, active=2, repeat=2), {"aten::mul"}, explorer_ops={"aten::mul": 80.0})
    found = reconcile(ev, "not_passed")
    assert found.per_step == {"neuron_explorer": 20.0}
    # Explorer named every op: nothing unnamed or unmatched is 0 us, a figure, not a missing one (NaN).
    cols = found.columns
    assert (cols["neuron_explorer_ops_matched"], cols["neuron_explorer_ops_unmatched_us"]) == (1.0, 0.0)
    assert cols["neuron_explorer_unnamed_us"] == 0.0
    assert found.warnings[1] == (
        "capture window unverified (no profiled-step spans beside the runtime's executions, no device events in "
        "key_averages() to count against): capture-wide figures divided by the 4 scheduled active step(s); had the "
        "capture also covered the warm-up they are 1.5x too high"
    )


def test_the_window_is_said_where_a_capture_wide_figure_is_in_the_row_and_only_there() -> None:
    # key_averages() has device time; the runtime's capture covered 2 steps: its figure (in the row) is per step.
    ev = Evidence(
        SCHEDULE, {"aten::mul"}, events_us=110.0, events_kernels=6.0, runtime=RuntimeFigures(12, 300.0, 112.0, 6.0)
    )
    assert reconcile(ev, "given").warnings == [
        "the runtime capture covered warmup+active (2 steps, found by profiler_steps): capture-wide figures divided by "
        "2, not by the 1 active step(s)"
    ]
    # Explorer's window (2 steps) checks its figure against key_averages()', which stands: nothing to warn about.
    ev = Evidence(
        SCHEDULE, {"aten::mul"}, events_us=45.0, events_ops={"aten::mul": 45.0}, explorer_ops={"aten::mul": 90.0}
    )
    found = reconcile(ev, "given")
    assert found.window.steps == 2.0 and found.per_step["neuron_explorer"] == 45.0 and found.warnings == []
    # The runtime's capture covered exactly the active step: its figure needs no word on the window.
    found = reconcile(Evidence(SCHEDULE, {"aten::mul"}, runtime=RuntimeFigures(6, 112.0, 112.0, 6.0)), "given")
    assert found.window.label == "active" and found.warnings == [
        "device time per step from neuron_runtime (112.0 us): key_averages() had none (correlate_device_time: ignored)",
        "per-op split missing: key_averages() had no device time per op and Neuron Explorer gave none (none); the op "
        "table's device columns are NaN (see neuron_explorer)",
    ]


def test_explorer_ops_in_no_op_row_are_named_largest_first_five_at_most() -> None:
    explorer = {"aten::mul": 10.0, "a": 1.0, "b": 7.0, "c": 3.0, "d": 6.0, "e": 2.0, "f": 5.0, "g": 4.0}
    ev = Evidence(SCHEDULE, {"aten::mul"}, runtime=RuntimeFigures(6, 112.0, 112.0, 6.0), explorer_ops=explorer)
    assert "Neuron Explorer ops without a key_averages() row, in no op row: b, d, f, g, c (28.0 us per step)" in (
        reconcile(ev, "given").warnings
    )
    # key_averages()' own device rows stand: their op table is whole, Explorer's other ops are not missing from it.
    ev.events_us = 112.0
    assert not [w for w in reconcile(ev, "given").warnings if "in no op row" in w]


def test_the_runtimes_busy_time_over_an_unverified_window_says_so_without_a_per_op_split() -> None:
    # No step spans, no device kernels to count against: the capture's 96 us over the 1 scheduled active step.
    found = reconcile(Evidence(SCHEDULE, {"aten::mul"}, runtime=RuntimeFigures(6, 96.0)), "not_passed")
    assert found.per_step == {"neuron_runtime": 96.0} and found.per_op == "none"
    assert (
        "capture window unverified (no profiled-step spans beside the runtime's executions, no device events in "
        "key_averages() to count against): capture-wide figures divided by the 1 scheduled active step(s); had the "
        "capture also covered the warm-up they are 2x too high"
    ) in found.warnings
    # No warm-up: nothing a capture could have covered beside the active steps, so no "1x too high".
    found = reconcile(
        Evidence(ScheduleConfig(0, 0, 1, 1), {"aten::mul"}, runtime=RuntimeFigures(6, 96.0)), "not_passed"
    )
    assert [w for w in found.warnings if w.startswith("capture window unverified")] == [
        "capture window unverified (no profiled-step spans beside the runtime's executions, no device events in "
        "key_averages() to count against): capture-wide figures divided by the 1 scheduled active step(s)"
    ]


def test_a_planted_disagreement_is_a_warning_not_a_silent_pick(standin, explorer_in_process: Path, tmp_path: Path):
    from tests.backends.neuron.test_open_questions import _spec

    from neuronexp.cell.group import run_cell

    standin.STATE.runtime_scale = 2.0  # the runtime trace says every execution took twice as long
    cell = run_cell(_spec(), tmp_path).cells.iloc[0]
    assert cell["device_time_check"] == "disagree" and cell["device_time_source"] == "profiler_device_events"
    assert cell["device_time_us"] == pytest.approx(112) and cell["neuron_device_time_runtime_us"] == pytest.approx(224)
    assert (
        "device time sources disagree by more than 10%: profiler_device_events 112.0 us vs neuron_runtime 224.0 us "
        "per step; device_time_us uses profiler_device_events (the documented order)"
    ) in cell["warnings"].split(" | ")
