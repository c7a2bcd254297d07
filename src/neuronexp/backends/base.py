"""The backend contract shared by the CPU, CUDA and Neuron implementations.

torch is imported when a backend is built, not with this module: the sweep reads the table of backends (backends.table)
before any device starts, in processes that must not import torch yet (the fork server's template sets torch's
environment first)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronexp.config import ScheduleConfig

if TYPE_CHECKING:
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity


class BackendUnavailable(RuntimeError):
    """The backend cannot run here; the message says what is missing."""


@dataclass(frozen=True)
class DeviceFill:
    """A backend's device time for a profile whose key_averages() device rows cannot say it (Neuron), per profiled
    cycle (one entry: every cycle). `per_op`: device us per step of each host op, by name (an op left out: NaN, no
    source split it); None: the op rows' own figures stand. `step`: the step's (device us, executions), NaN where
    unknown; None: the filled op rows' sums."""

    per_op: list[dict[str, float]] | None = None
    step: list[tuple[float, float]] | None = None


class Backend:
    """Defaults suit a synchronous host device; subclasses override what differs."""

    name = "cpu"
    # Key-averages rows of this device type carry the device's own kernels (None: host only).
    device_row_type: DeviceType | None = None
    timing_method = "wallclock"
    # Where device_time_us comes from: host self time on CPU, profiler device events elsewhere.
    device_time_source = "cpu_self_time"
    # Calls made after the first one and before timing/profiling, whatever timing.warmup says
    # (Neuron's profiling guide asks for 3, or the profile holds compilation).
    min_warmup_calls = 0
    # The profiler schedule's values left null in the config. Where a step is cheap, five cycles of one
    # active step each: per-step figures are medians over them, so one slow step (the profiler's own
    # start-up, a page fault, another process) cannot make the profile (docs/methodology.md).
    default_schedule = ScheduleConfig(wait=1, warmup=1, active=1, repeat=5)
    # Whether timing moves a cell's inputs between rounds (timing.relocate): measured on the host only.
    relocates_inputs = False
    # Kineto activity types of the device's runtime and driver, which PyTorch types CPU: set apart from host ops
    # (backends.kineto), never counted as operators or in CPU time.
    runtime_activities: tuple[str, ...] = ()

    def __init__(self) -> None:
        import torch

        self.device = torch.device("cpu")

    def device_name(self) -> str:
        return "cpu"

    def synchronize(self) -> None:
        """Wait for queued device work; a no-op for synchronous devices."""

    def activities(self) -> list[ProfilerActivity]:
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU]

    def compile_backend(self) -> str:
        return "inductor"

    def prepare(self) -> None:
        """Set up process state (environment, device selection) before the first tensor is made."""

    def finish(self) -> None:
        """Undo process state set for this cell only, once its files are written (Neuron: compile-time variables)."""

    def check_compile(self, compile_cfg: Any) -> None:
        """Refuse compile options this backend's torch.compile backend rejects or ignores (raises ConfigError)."""

    def profiler_kwargs(self, out_dir: Path) -> dict[str, Any]:
        """Extra `torch.profiler.profile` kwargs (e.g. Neuron's experimental_config)."""
        return {}

    def profile_session(self, out_dir: Path) -> AbstractContextManager[Any]:
        """Wraps the whole profiled pass, for vendor captures that are not a torch.profiler hook."""
        return nullcontext()

    def trace_handlers(self, out_dir: Path) -> list[Callable[[Any], None]]:
        """Callbacks run with the profiler at each cycle end, beside neuronexp's own handler."""
        return []

    def save_trace(self, prof: Any, path: Path | None) -> bool:
        """Save the cycle's framework trace (Kineto saves a cycle once) at `path`, None: not asked for; whether
        `path` was written. Neuron's documented capture saves it its own way."""
        if path is None:
            return False
        from neuronexp.results.files import atomic_path

        with atomic_path(path, "data") as tmp:  # a cell's file: its rename synced with its tables' (write_job_tables)
            prof.export_chrome_trace(str(tmp))
        return True

    def after_profile(self, out_dir: Path, schedule: ScheduleConfig | None = None) -> dict[str, Any]:
        """Columns to add to the cell row once profiling is over (artifact paths, warnings); `schedule`: the one
        the profiled pass ran."""
        return {}

    def device_fill(self) -> DeviceFill | None:
        """Device time from sources other than key_averages()' device rows, once profiling is over (DeviceFill);
        None: the op rows' own figures are the device time."""
        return None

    # What peak_memory_bytes means on this backend (the row's peak_memory_method).
    memory_method = "torch's allocations during one call, high-water mark above its start, from profiler memory events"

    def call_memory(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        """(fn's output, its peak memory in bytes) for one call; see `memory_method`. On the host: the running sum of
        the profiler's allocation events (torch's CPU allocator reports every allocation and free while profile_memory
        is on), so the figure is what torch allocated, whatever malloc does underneath: the call's intermediates and
        outputs, not its inputs or weights."""
        from torch._C._profiler import _EventType
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            out = fn()
        events: list[tuple[int, int]] = []
        stack = list(prof.profiler.kineto_results.experimental_event_tree())
        while stack:
            node = stack.pop()
            if node.tag == _EventType.Allocation and node.extra_fields.device.type == "cpu":
                events.append((node.start_time_ns, node.extra_fields.alloc_size))
            stack.extend(node.children)
        running = peak = 0
        for _, size in sorted(events):
            running += size
            peak = max(peak, running)
        return out, float(peak)

    def peak_hint(self) -> dict[str, Any]:
        """What identifies the device in the table of published peaks (analysis.peaks); empty on the host."""
        return {}

    def time_call(self, fn: Callable[[], Any]) -> float:
        """One synchronized wall-clock sample of `fn`, in microseconds."""
        start = time.perf_counter_ns()
        fn()
        self.synchronize()
        return (time.perf_counter_ns() - start) / 1e3
