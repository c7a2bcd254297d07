"""STAND-IN Neuron runtime capture (tests only): what NRT would write for a torch.profiler session, emulated.

It follows the profiler's own transitions (prepare_trace at the warm-up, start_trace at the active steps, stop_trace,
step, stop), so the capture covers the steps `STATE.switches.capture_from` says and its files appear when
`capture_written` says. The device work of each active step is read from the profile's own host events
(planted.executions: one execution per op that runs on the emulated NeuronCore, a compiled graph as one); a warm-up
step the capture covers repeats the first active step's work. Executions are laid on an emulated host clock, one step
after another. Files, in the documented layout: `ntrace.pb` and `trace_info.pb` (RUNTIME; the stand-in's ntrace.pb is
JSON read by the fake neuron-explorer, the real one is a protobuf neuronexp never reads), one session NTFF per core
(DEVICE; JSON of the executions), `neff_<hash>_vnc_0.neff` copied from `neff_cache_dir` where the emulated compiler
wrote them ($TORCH_NEURONX_NEFF_CACHE_DIR when it first saw the NEFF), `cpu_util.pb`, `host_mem.pb`.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch.profiler.profiler as torch_profiler
from planted import device_key, executions, neff_of
from torch_neuronx import STATE, metrics

INSTANCE_ID = "i-0standin00000000"
CLOCK_BASE_NS = 1_767_225_600_000_000_000  # the emulated host clock of the system trace (ns since the epoch)
STEP_SPAN_NS = 10_000_000  # each captured step gets 10 ms of the emulated clock
GAP_NS = 500
_COUNTER = itertools.count()
_ORIGINAL: dict[tuple[type, str], Any] = {}


@dataclass
class Capture:
    """One runtime capture session: where it writes, what it covered, what ran in it."""

    root: Path
    modes: list[str]  # ProfileMode values
    neff_cache: str | None
    index: int = field(default_factory=lambda: next(_COUNTER))
    steps: list[int] = field(default_factory=list)  # profiler steps the capture covered
    work: dict[int, list[tuple[str, float]]] = field(default_factory=dict)  # active step -> (op, device us) run
    ended: bool = False
    written: bool = False

    @property
    def folder(self) -> Path:
        return self.root / f"{INSTANCE_ID}_pid_{os.getpid()}" / f"20260701_120000_{self.index:03d}"


def _config_capture(prof: Any) -> Capture | None:
    cfg = getattr(prof, "experimental_config", None)
    if not getattr(cfg, "standin", False):
        return None
    modes = [getattr(m, "value", str(m)) for m in cfg.modes]
    return Capture(Path(cfg.profile_output_dir), modes, cfg.neff_cache_dir)


def _current(prof: Any) -> Capture | None:
    return getattr(prof, "_standin_capture", None) or STATE.legacy_capture


def _begin(prof: Any) -> None:
    if STATE.legacy_capture is None and getattr(prof, "_standin_capture", None) is None:
        prof._standin_capture = _config_capture(prof)


def _collect(prof: Any, capture: Capture) -> None:
    """The device work of each active step, from the cycle's host events (parsed once, as neuronexp parses them).
    The parsed step ranges are all named "ProfilerStep*": the i-th of n is the i-th of the capture's last n steps."""
    events = prof.events()
    ranges = sorted((e for e in events if e.name.startswith("ProfilerStep")), key=lambda e: e.time_range.start)
    if not ranges:  # a profile without a schedule: the whole of it is one step
        capture.steps = capture.steps or [0]
    numbers = capture.steps[-len(ranges) :] if ranges else capture.steps[-1:]
    table = STATE.device_us
    for run in executions(events, table, lambda e: e.device_type.name == "CPU" and not e.is_async):
        at = [i for i, r in enumerate(ranges) if r.time_range.start <= run.time_range.start <= r.time_range.end]
        at = at if ranges else [0]
        if at and at[0] < len(numbers):
            key = str(device_key(run.name, table))
            capture.work.setdefault(numbers[at[0]], []).append((key, table[key]))


def _layout(capture: Capture, scale: float = 1.0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The covered steps' spans and their executions on the emulated clock (a covered step that was not recorded,
    the warm-up, repeats the first active step's work); `scale` stretches every execution."""
    first = next(iter(capture.work.values()), [])
    spans, runs = [], []
    for i, step in enumerate(capture.steps):
        start = CLOCK_BASE_NS + (capture.index * 1000 + i) * STEP_SPAN_NS
        spans.append({"step": step, "start_ns": start, "end_ns": start + STEP_SPAN_NS - GAP_NS})
        t = start + GAP_NS
        for op, us in capture.work.get(step, first):
            ns = int(round(us * 1000 * scale))
            runs.append({"step": step, "op": op, "neff": neff_of(op), "start_ns": t, "end_ns": t + ns, "nc": 0})
            t += ns + GAP_NS
    for i, run in enumerate(runs):  # the flow ids the system trace gives each execution (switches.flow_ids)
        run["flow"] = {"per_execution": f"{capture.index}.{i}", "shared": "1"}.get(STATE.switches.flow_ids)
    return spans, runs


def _compile(neffs: set[str]) -> None:
    """The emulated compiler writes each NEFF once, into $TORCH_NEURONX_NEFF_CACHE_DIR as it is at that moment, and
    counts it: a NEFF this process compiled is an in-memory hit; one on disk from an earlier process, a persistent
    hit; else a miss and a compilation (torch_neuronx.metrics)."""
    for neff in sorted(neffs):
        cache = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
        path = Path(cache) / f"standin_{neff}" / "model.neff" if cache else None
        if neff in STATE.compiled:
            metrics.count("CompilationCache.InMemoryHits")
            continue
        STATE.compiled[neff] = cache
        if path is not None and path.is_file():
            metrics.count("CompilationCache.PersistentHits")
            continue
        for name in ("InMemoryMisses", "PersistentMisses", "TotalCompilations"):
            metrics.count(f"CompilationCache.{name}")
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"NEFF" + neff.encode())


def write(capture: Capture) -> None:
    if capture.written:
        return
    capture.written = True
    folder = capture.folder
    folder.mkdir(parents=True, exist_ok=True)
    spans, runs = _layout(capture)
    _compile({r["neff"] for r in runs})
    if "system_profile" in capture.modes:
        traced = _layout(capture, STATE.runtime_scale)[1]
        trace = {"standin": "neuron runtime trace", "steps": spans if STATE.switches.step_spans else []}
        trace["executions"] = traced if STATE.switches.runtime_events else []
        (folder / "ntrace.pb").write_text(json.dumps(trace))
        (folder / "trace_info.pb").write_bytes(b"\x08\x02" * 16)
    if "cpu_util" in capture.modes:
        (folder / "cpu_util.pb").write_bytes(b"\x08\x03" * 8)
    if "host_memory" in capture.modes:
        (folder / "host_mem.pb").write_bytes(b"\x08\x04" * 8)
    if "device_profile" in capture.modes:  # one NTFF per reserved core: the work ran on core 0, the rest are empty
        for nc in STATE.reserved or [0]:
            body = json.dumps({"executions": runs}).encode() if nc == 0 else b""
            (folder / f"profile_nc_{nc}_session_0.ntff").write_bytes(body)
        every = {n for n, cache in STATE.compiled.items() if cache == capture.neff_cache}
        copied = every if STATE.switches.neff_copy == "cache" else {r["neff"] for r in runs}
        for neff in sorted(copied) if capture.neff_cache else []:
            cached = Path(capture.neff_cache) / f"standin_{neff}" / "model.neff"
            if cached.is_file():  # copied at stop from the cache NeuronConfig names, as the capture guide says
                shutil.copyfile(cached, folder / f"neff_{neff}_vnc_0.neff")
    if STATE.memory_snapshot:  # the file name is not documented; a PyTorch-style snapshot pickle
        (folder / "memory_snapshot.pickle").write_bytes(b"\x80\x04N.")


def export(config: Any, prof: Any) -> None:
    """NeuronProfiler(config).export_trace: the framework trace into the session folder of the capture that ended."""
    capture = next((c for c in reversed(prof._standin_ended) if c.root == Path(config.profile_output_dir)), None)
    if capture is None:
        raise RuntimeError("stand-in export_trace: no runtime capture ended on this profiler")
    capture.folder.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(capture.folder / "trace.json"))
    if STATE.switches.capture_written == "export":
        write(capture)


# --- the profiler's transitions --------------------------------------------------------------------------------


def _prepare_trace(self: Any) -> None:
    _ORIGINAL[(torch_profiler._KinetoProfile, "prepare_trace")](self)
    if STATE.switches.capture_from == "warmup":
        _begin(self)


def _start_trace(self: Any) -> None:
    _ORIGINAL[(torch_profiler._KinetoProfile, "start_trace")](self)
    _begin(self)


def _stop_trace(self: Any) -> None:
    _ORIGINAL[(torch_profiler._KinetoProfile, "stop_trace")](self)
    capture = _current(self)
    if capture is None:
        return
    _collect(self, capture)
    if capture is not STATE.legacy_capture:  # the April-2026 profiler's capture ends when it stops
        capture.ended = True
        self._standin_capture = None
        self.__dict__.setdefault("_standin_ended", []).append(capture)


def _step(self: Any) -> None:
    capture = _current(self)
    if capture is not None:
        capture.steps.append(self.step_num)  # the step that just ran
    _ORIGINAL[(torch_profiler.profile, "step")](self)


def _stop(self: Any) -> None:
    _ORIGINAL[(torch_profiler.profile, "stop")](self)
    if STATE.switches.capture_written == "stop":  # nrt_inspect_stop at the session's end: after on_trace_ready
        for capture in self.__dict__.get("_standin_ended", []):
            write(capture)


_WRAPPERS = {
    (torch_profiler._KinetoProfile, "prepare_trace"): _prepare_trace,
    (torch_profiler._KinetoProfile, "start_trace"): _start_trace,
    (torch_profiler._KinetoProfile, "stop_trace"): _stop_trace,
    (torch_profiler.profile, "step"): _step,
    (torch_profiler.profile, "stop"): _stop,
}


def _unwrapped(fn: Any) -> Any:
    """The torch function under any stand-in wrapper (one a test's monkeypatch may have put back after teardown)."""
    while hasattr(fn, "standin_original"):
        fn = fn.standin_original
    return fn


def install() -> None:
    for (cls, name), wrapper in _WRAPPERS.items():
        original = _ORIGINAL.setdefault((cls, name), _unwrapped(cls.__dict__[name]))

        def wrapped(self: Any, _wrapper: Any = wrapper) -> None:
            _wrapper(self)

        wrapped.standin_original = original  # type: ignore[attr-defined]
        setattr(cls, name, wrapped)


def uninstall() -> None:
    for (cls, name), original in _ORIGINAL.items():
        setattr(cls, name, original)
