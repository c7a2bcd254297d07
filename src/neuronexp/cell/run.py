"""One experiment cell in its process, end to end: build and first call (cell.build), the timed pass (alone or with
its group: cell.group), the profiled pass, the limits, the files."""

from __future__ import annotations

import contextlib
import logging
import math
import traceback
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import torch

from neuronexp.backends import HOST, Backend, backend_info, backend_kind, resolve_backend
from neuronexp.cell.build import Built, build, first_call, kernel_records
from neuronexp.cell.inputs import InputError, grad_mode
from neuronexp.cell.joblog import TRACEBACK_LOGGER
from neuronexp.cell.limits import Limits, measure_limits
from neuronexp.cell.noise_columns import join_warnings
from neuronexp.cell.profiling import fill_device_times, profile_callable
from neuronexp.cell.rows import (
    Measured,
    RowParts,
    cell_labels,
    cell_tables,
    describe_placement,
    environment_record,
    write_lost_cell,
)
from neuronexp.cell.timing import LatencyStats
from neuronexp.config import CellSpec, ConfigError
from neuronexp.moduletime.attribution import fill_module_device_times
from neuronexp.moduletime.module_rows import inspect_modules, module_rows
from neuronexp.results import LABEL_COLUMNS, Results, arrow_table
from neuronexp.results.files import ERROR_LOG, atomic_write_text, write_job_tables, write_json, write_phase

trace_log = logging.getLogger(TRACEBACK_LOGGER)


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
    be timed together, interleaved (cell.group); a cell alone is timed between the halves the same way. Failures
    are data: a backend that cannot start, a layer that raises or calls sys.exit, a compile error all become the
    `error` row, never an exception."""

    def __init__(self, spec: CellSpec, out_dir: Path, host_alloc: dict[str, Any], git: dict[str, Any]) -> None:
        self.spec, self.out_dir, self.host_alloc, self.git = spec, out_dir, host_alloc, git
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.backend: Backend | None = None
        self.built: Built | None = None
        self.first_call_s = math.nan
        self.error: str | None = None
        self.tables: Mapping[str, pa.Table] | None = None  # set once its files are written
        self._results: Results | None = None
        self.notes: list[str] = []  # said in the row's warnings (how it was timed)
        self.timing_group: str | None = None  # shared by the cells timed together with it (cell.group)
        self.out_of_memory = self.deferred = False
        # After the timed pass (finish): the limits, and with profiler.modules the module and what one more call told.
        self.limits = Limits({})
        self.inspected: dict[str, Any] = {}
        self.module_tree: Any = None

    @property
    def results(self) -> Results | None:
        """Its tables, as pandas once asked for: a cell's own process writes its files and asks for nothing."""
        if self._results is None and self.tables is not None:
            self._results = Results.from_arrow(self.tables)
        return self._results

    @property
    def alloc_columns(self) -> dict[str, Any]:
        h = self.host_alloc
        return {"allocator": h["mode"], "malloc": h["malloc"], "allocator_note": h["note"]}

    def grad(self) -> Any:
        return grad_mode(self.spec.config.input, self.backend.name if self.backend else HOST.name)

    def start(self, reset_dynamo: bool = True, crowded: bool = False) -> Callable[[], Any] | None:
        """Build and call once (the compile); the call to time, or None when the cell failed (its row is written
        then). `crowded`: other cells of its group hold memory in this process; running out of memory then is not
        this cell's failure: `deferred` is set, no row is written, and cell.group runs it again alone."""
        cfg = self.spec.config
        try:
            self.backend = resolve_backend(cfg.backend, cfg)
        except ConfigError as exc:
            where = {**describe_placement(HOST.name, None), **self.alloc_columns}  # no device was started
            self._results = write_lost_cell(
                self.spec, self.out_dir, str(exc), backend_kind(cfg.backend), where, self.started_at
            )
            return None
        self.backend.prepare()
        with self._failures():
            with self.grad(), kernel_records(self.spec, self.backend):
                write_phase(self.out_dir, "build")
                self.built = build(self.spec, self.backend, reset_dynamo)
                self.first_call_s = first_call(self.built.call, self.spec, self.backend, self.out_dir)
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
            self.fail(exc)

    def fail(self, exc: BaseException, during: str | None = None) -> None:
        """`exc` is this cell's failure: its root cause in one line for the row (`during`: the step it broke in,
        when not the build or first call), its traceback in error.log."""
        self.error = _error_text(exc) + (f" (during {during})" if during else "")
        self.out_of_memory = isinstance(exc, (MemoryError, torch.OutOfMemoryError))
        # The row keeps one line, error.log the rest.
        atomic_write_text(self.out_dir / ERROR_LOG, "".join(traceback.format_exception(exc)))
        # The same traceback in the job's log only (cell.joblog), so the terminal keeps the one-line error.
        trace_log.error("cell %s failed: %s", self.spec.run_id, self.error, exc_info=exc)

    def finish(self, latency: LatencyStats | None) -> None:
        """Profile, measure the limits, write the rows and files (and keep the tables: `results`)."""
        backend, measured = self.backend, self._measure(latency)
        assert backend is not None
        self.built = None
        backend_info(backend.name).clean_up()  # e.g. device memory held by reference cycles, back before the next cell
        extra = backend.after_profile(self.out_dir, measured.profile.schedule) if measured else {}
        if measured:
            fill = backend.device_fill()
            fill_device_times(measured.profile, fill)
            if self.inspected and fill is not None and fill.per_op and len(fill.per_op) == 1:  # a capture-wide split
                fill_module_device_times(measured.profile.modules, fill.per_op[0], measured.profile.active_steps)
        extra["warnings"] = join_warnings(extra.get("warnings"), *self._notes(measured))
        extra = {
            **describe_placement(backend.name, backend.device),
            **self.alloc_columns,
            **self.limits.columns,
            **extra,
            "timing_group": self.timing_group if measured else None,
        }
        labels = cell_labels(self.spec, backend)
        parts = RowParts(measured=measured, error=self.error, extra=extra, started_at=self.started_at)
        tables = cell_tables(self.spec, backend, labels, parts)
        if self.inspected and measured is not None and self.error is None:
            steps = [c.device_time_us for c in measured.profile.cycles]
            rows = module_rows(
                self.module_tree,
                measured.profile.modules,
                measured.profile.active_steps,
                steps,
                self.inspected,
                {k: labels[k] for k in LABEL_COLUMNS},
            )
            tables["modules"] = arrow_table("modules", rows)
        self.module_tree = None  # the module itself: freed before the files are written
        self._write(tables, labels, measured)
        backend.finish()
        self.tables = tables

    def _measure(self, latency: LatencyStats | None) -> Measured | None:
        """The profiled pass, then the limits (self.limits) and, with profiler.modules, what one more call tells
        about each module (self.inspected); a step that fails is the cell's error and leaves the later ones empty."""
        if self.built is None or latency is None or self.error is not None:
            return None
        spec, backend, out_dir, cfg, b = self.spec, self.backend, self.out_dir, self.spec.config, self.built
        assert backend is not None
        # Time per module in eager cells only: a compiled module runs as graphs whose ops no longer belong to modules.
        per_module = cfg.profiler.modules and not cfg.compile.enabled
        measured = None
        with self._failures(), self.grad():
            write_phase(out_dir, "profiling")
            with backend.profile_session(out_dir):
                profile = profile_callable(b.call, backend, cfg.profiler, out_dir, b.module if per_module else None)
            measured = Measured(self.first_call_s, latency, profile, torch.get_num_threads())
            write_phase(out_dir, "limits")  # peak memory, the output saved, the work counted, the roofs
            self.limits = measure_limits(b, measured, spec, backend, out_dir)
            if per_module:  # FLOPs, bytes and inputs per module: one more eager call, outside both passes
                self.inspected, self.module_tree = inspect_modules(b.module, b.args, b.kwargs), b.module
        return measured

    def _notes(self, measured: Measured | None) -> list[str]:
        """What the row's warnings say about how the cell was measured."""
        cfg, backend = self.spec.config, self.backend
        assert backend is not None
        notes = [*self.notes, *self.limits.notes]
        if cfg.profiler.modules and cfg.compile.enabled:
            notes.append(
                "profiler.modules: time per module is for eager cells; a compiled module runs as graphs, not "
                "modules (run it with compile.enabled=false)"
            )
        wanted = max(cfg.timing.warmup, backend.min_warmup_calls)
        if measured is not None and measured.latency.warmup_calls < wanted:
            notes.append(
                f"warm-up stopped after {measured.latency.warmup_calls} of {wanted} calls "
                f"(timing.max_seconds={cfg.timing.max_seconds:g})"
            )
        if self.host_alloc["note"]:  # the mode did not apply as asked: the figures are not what the key promised
            notes.append(f"allocator: {self.host_alloc['note']}")
        return notes

    def _write(self, tables: dict[str, pa.Table], labels: dict[str, Any], measured: Measured | None) -> None:
        """env.json, then the tables (cells last: a cell's row says its files are whole)."""
        backend = self.backend
        assert backend is not None
        threads = measured.threads if measured else self.spec.config.threads or torch.get_num_threads()
        env = environment_record(labels["device_name"], backend.name, self.host_alloc, threads, self.git)
        if self.limits.host_roofs is not None:
            env["host_roofs"] = self.limits.host_roofs  # the probe behind this cell's roofs: figures, load, cache file
        write_json(self.out_dir / "env.json", env, "data")  # its rename synced with the tables' (write_job_tables)
        write_job_tables(self.out_dir, tables)
