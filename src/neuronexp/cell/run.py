"""One experiment cell, end to end: build, first call, the timed pass, the profiled pass, the files."""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import time
import traceback
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from neuronexp.backends import Backend, backend_kind, resolve_backend
from neuronexp.config import CellSpec
from neuronexp.cell.rows import Measured, cell_labels, cell_tables, write_lost_cell
from neuronexp.config import ConfigError
from neuronexp.cell.device_fill import fill_device_times
from neuronexp.cell.environment import describe_placement, environment_record
from neuronexp.cell.inputs import InputError, grad_mode, make_inputs, torch_dtype
from neuronexp.cell.limits import Limits, measure_limits
from neuronexp.cell.profiling import profile_callable
from neuronexp.results import TABLES, Results
from neuronexp.results.files import ERROR_LOG, atomic_write_text, write_job_tables, write_json, write_phase
from neuronexp.cell.timing import LatencyStats
from neuronexp.config import TimingConfig
from neuronexp.cell.noise import join_warnings

trace_log = logging.getLogger("neuronexp.cell.traceback")


@dataclass
class Built:
    """The cell's callable, and what it calls: the eager module and its inputs (cell.work counts them)."""

    call: Callable[[], Any]
    module: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _build(spec: CellSpec, backend: Backend, reset_dynamo: bool = True) -> Built:
    cfg = spec.config
    torch.manual_seed(cfg.input.seed)  # the same weights in every run, and in each variant built alike
    module = spec.build_module()
    if not isinstance(module, nn.Module):
        raise ConfigError("module._target_", cfg.module.get("_target_"), f"built a {type(module).__name__}, not a torch.nn.Module")
    dtype = torch_dtype(cfg.input.dtype)
    module = module.to(device=backend.device, dtype=dtype).eval()
    args, kwargs = make_inputs(cfg.input, module, backend.device)
    model: Any = module
    if cfg.compile.enabled:
        backend.check_compile(cfg.compile)
        # A fresh Dynamo per cell: earlier cells' graphs and recompile counters must not leak in. Not between the
        # cells of a group timed together: a reset would make the group's compiled cells compile again mid-timing.
        if reset_dynamo:
            torch._dynamo.reset()
        model = torch.compile(
            module,
            backend=cfg.compile.backend or backend.compile_backend(),
            mode=cfg.compile.mode,
            fullgraph=cfg.compile.fullgraph,
            dynamic=cfg.compile.dynamic,
        )
    return Built(lambda: model(*args, **kwargs), module, tuple(args), dict(kwargs))


def _kernel_records(spec: CellSpec, backend: Backend) -> Any:
    """While this cell compiles and runs: Inductor's C++ kernels recorded by name (`cpp_fused_mul_rsqrt_0`), so the
    profile shows the kernels inside a compiled region, not one opaque graph call. Scoped to the cell; the
    record costs a thread-local check per kernel call when no profiler runs (docs/methodology.md)."""
    compile_cfg = spec.config.compile
    if not compile_cfg.enabled or (compile_cfg.backend or backend.compile_backend()) != "inductor":
        return contextlib.nullcontext()
    from torch._inductor import config as inductor_config

    return inductor_config.patch({"cpp.enable_kernel_profile": True})


def _first_call(call: Callable[[], Any], spec: CellSpec, backend: Backend, out_dir: Path) -> float:
    write_phase(out_dir, "compile" if spec.config.compile.enabled else "first call")
    start = time.perf_counter()
    call()
    backend.synchronize()
    return time.perf_counter() - start


def timing_config(spec: CellSpec, backend: Backend) -> TimingConfig:
    timing = spec.config.timing
    if timing.warmup < backend.min_warmup_calls:  # the backend's floor, documented where it is set
        timing = replace(timing, warmup=backend.min_warmup_calls)
    return timing


def _error_text(exc: BaseException) -> str:
    """The root cause in one line: wrappers (Hydra's InstantiationException) name a target, not the error."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: the layer called sys.exit({exc.code!r})"
    while exc.__cause__ is not None and not isinstance(exc, InputError):  # InputError names the input's key
        exc = exc.__cause__
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


class CellRun:
    """One cell in its process, in two halves around its timed pass, so that the cells of a comparison group can
    be timed together, interleaved (cell.group); a cell alone is timed between the halves the same way.

    `start` builds the module and makes the first call (the compile); `finish` takes the timed pass's figures,
    profiles, measures the limits and writes the cell's files. Failures are data: a backend that cannot start,
    a layer that raises or calls sys.exit, a compile error all become the `error` row, never an exception.
    """

    def __init__(self, spec: CellSpec, out_dir: Path, host_alloc: dict[str, Any]) -> None:
        self.spec, self.out_dir, self.host_alloc = spec, out_dir, host_alloc
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.backend: Backend | None = None
        self.built: Built | None = None
        self.first_call_s = math.nan
        self.error: str | None = None
        self.results: Results | None = None  # set once its files are written
        self.notes: list[str] = []  # said in the row's warnings (how it was timed)
        self.timing_group: str | None = None  # shared by the cells timed together with it (cell.group)
        self.out_of_memory = self.deferred = False

    @property
    def alloc_columns(self) -> dict[str, Any]:
        h = self.host_alloc
        return {"allocator": h["mode"], "malloc": h["malloc"], "allocator_note": h["note"]}

    def grad(self) -> Any:
        return grad_mode(self.spec.config.input, self.backend.name if self.backend else "cpu")

    def start(self, reset_dynamo: bool = True, crowded: bool = False) -> Callable[[], Any] | None:
        """Build and call once; the call to time, or None when the cell failed (its row is written then).

        `crowded`: other cells of its group hold memory in this process; running out of memory then is not this
        cell's failure: `deferred` is set, no row is written, and cell.group runs it again alone."""
        cfg = self.spec.config
        try:
            self.backend = resolve_backend(cfg.backend, cfg.neuron, cfg.profiler.neuron)
        except ConfigError as exc:
            self.results = write_lost_cell(self.spec, self.out_dir, str(exc), backend_kind(cfg.backend),
                                           {**describe_placement("cpu", None), **self.alloc_columns}, self.started_at)
            return None
        self.backend.prepare()
        with self._failures():
            with self.grad(), _kernel_records(self.spec, self.backend):
                write_phase(self.out_dir, "build")
                self.built = _build(self.spec, self.backend, reset_dynamo)
                self.first_call_s = _first_call(self.built.call, self.spec, self.backend, self.out_dir)
        if self.error is not None or self.built is None:
            self.built = None
            if crowded and self.out_of_memory:
                self.deferred, self.error = True, None
                return None
            self.finish(None)
            return None
        return self.built.call

    @contextlib.contextmanager
    def _failures(self) -> Any:
        try:
            yield
        except ConfigError as exc:
            self.error = str(exc)
        except (Exception, SystemExit) as exc:  # failures are data: the sweep goes on with an error row
            self.error = _error_text(exc)
            self.out_of_memory = isinstance(exc, (MemoryError, torch.OutOfMemoryError))
            atomic_write_text(self.out_dir / ERROR_LOG, traceback.format_exc())  # the row keeps one line, this the rest
            # The same traceback in the job's log (Hydra's neuronexp.log: conf/config.yaml routes this logger to its
            # file handler only, so the terminal keeps the one-line error).
            trace_log.error("cell %s failed: %s", self.spec.run_id, self.error, exc_info=True)

    def finish(self, latency: LatencyStats | None) -> Results:
        """Profile, measure the limits, write the rows and files; the cell's tables."""
        spec, backend, out_dir, cfg = self.spec, self.backend, self.out_dir, self.spec.config
        assert backend is not None
        measured: Measured | None = None
        limits = Limits({})
        if self.built is not None and latency is not None and self.error is None:
            with self._failures(), self.grad():
                write_phase(out_dir, "profiling")
                with backend.profile_session(out_dir):
                    profile = profile_callable(self.built.call, backend, cfg.profiler, out_dir)
                measured = Measured(self.first_call_s, latency, profile, torch.get_num_threads())
                write_phase(out_dir, "limits")  # peak memory, the output saved, the work counted, the roofs
                b = self.built
                limits = measure_limits(b.call, b.module, b.args, b.kwargs, spec, backend, out_dir,
                                        latency.median_us, profile)
        self.built = None
        if backend.name != "cpu":
            # Device memory held by reference cycles (compiled graphs) must be back before the next
            # cell; on the host, reference counting suffices and a full collection costs ~0.2 s a cell.
            gc.collect()
        if backend.name == "cuda":
            torch.cuda.empty_cache()
        extra = backend.after_profile(out_dir) if measured else {}
        if measured:
            fill_device_times(measured.profile, backend.device_op_times())
        notes = [*self.notes, *limits.notes]
        wanted = max(cfg.timing.warmup, backend.min_warmup_calls)
        if measured is not None and measured.latency.warmup_calls < wanted:
            notes.append(f"warm-up stopped after {measured.latency.warmup_calls} of {wanted} calls "
                         f"(timing.max_seconds={cfg.timing.max_seconds:g})")
        if self.host_alloc["note"]:  # the mode did not apply as asked: the figures are not what the key promised
            notes.append(f"allocator: {self.host_alloc['note']}")
        extra["warnings"] = join_warnings(extra.get("warnings"), *notes)
        extra = {**describe_placement(backend.name, backend.device), **self.alloc_columns, **limits.columns, **extra,
                 "timing_group": self.timing_group if measured else None}
        labels = cell_labels(spec, backend)
        tables = cell_tables(spec, backend, labels, measured, self.error, extra, self.started_at)
        threads = measured.threads if measured else cfg.threads or torch.get_num_threads()
        env = environment_record(labels["device_name"], backend.name, self.host_alloc, threads)
        if limits.host_roofs is not None:
            env["host_roofs"] = limits.host_roofs  # the probe behind this cell's roofs: figures, load, cache file
        write_json(out_dir / "env.json", env)
        write_job_tables(out_dir, tables)
        backend.finish()
        self.results = Results(*(tables[name].to_pandas() for name in TABLES))
        return self.results


def run_cell(spec: CellSpec, out_dir: Path) -> Results:
    """Run one cell and write its tables into `out_dir` (cell.group.run_cells with a group of one)."""
    from neuronexp.cell.group import run_cells

    return run_cells([spec], [out_dir])[0]
