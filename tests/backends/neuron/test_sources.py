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
