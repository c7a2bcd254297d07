"""Device time from several sources, reconciled: the capture window found from the capture (known answers), the
documented order, the consistency check and its tolerance, and a disagreement planted in the STAND-IN's runtime."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

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


def test_the_order_takes_key_averages_then_the_runtime_then_explorer() -> None:
    run = RuntimeFigures(12, 224.0, 112.0, 6.0)  # 12 executions, 6 in the one profiled step: 2 steps captured
    explorer = {"aten::mul": 90.0, "aten::add_": 4.0}
    ev = Evidence(SCHEDULE, {"aten::mul"}, events_us=110.0, events_kernels=6.0, runtime=run, explorer_ops=explorer)
    first = reconcile(ev, "passed")
    assert first.chosen == "profiler_device_events" and first.fill_ops == {} and first.step_total is None
    ev.events_us = None
    second = reconcile(ev, "not_passed")
    assert second.chosen == "neuron_runtime" and second.step_total == (112.0, 6.0)
    assert second.fill_ops == {"aten::mul": 45.0}  # the capture covered 2 steps (profiler_steps): halved
    assert second.columns["device_time_source"] == "neuron_runtime" and second.columns["neuron_capture_steps"] == 2
    ev.runtime = None
    third = reconcile(ev, "not_passed")
    assert third.chosen == "neuron_explorer" and third.step_total == (94.0, third.step_total[1])
    assert math.isnan(third.step_total[1]) and third.columns["neuron_capture_window"] == "unverified"


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
