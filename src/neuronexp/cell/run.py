"""One experiment cell, end to end: build, first call, the timed pass, the profiled pass, the files."""

from __future__ import annotations

import contextlib
import gc
import logging
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
from neuronexp.config.inputs import compute_dtype
from neuronexp.cell.device_fill import fill_device_times
from neuronexp.cell.environment import describe_placement, environment_record
from neuronexp.cell.inputs import InputError, grad_mode, make_inputs, torch_dtype
from neuronexp.cell.limits import Limits, measure_limits
from neuronexp.cell.module_rows import inspect_modules, module_rows
from neuronexp.cell.modules import fill_module_device_times
from neuronexp.cell.profiling import profile_callable
from neuronexp.results import LABEL_COLUMNS, TABLES, Results, arrow_table
from neuronexp.results.files import ERROR_LOG, atomic_write_text, write_job_tables, write_json, write_phase
from neuronexp.cell.timing import time_callable
from neuronexp.cell.noise import join_warnings
from neuronexp.host import allocator

trace_log = logging.getLogger("neuronexp.cell.traceback")


@dataclass
class Built:
    """The cell's callable, and what it calls: the eager module and its inputs (cell.work counts them)."""

    call: Callable[[], Any]
    module: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _build(spec: CellSpec, backend: Backend) -> Built:
    cfg = spec.config
    torch.manual_seed(cfg.input.seed)  # the same weights in every run, and in each variant built alike
    module = spec.build_module()
    if not isinstance(module, nn.Module):
        raise ConfigError("module._target_", cfg.module.get("_target_"), f"built a {type(module).__name__}, not a torch.nn.Module")
    # Cast to the cell's dtype, except a model fed token ids with no input.model_dtype: it keeps its own.
    if cfg.input.model_dtype is not None or torch_dtype(cfg.input.dtype).is_floating_point:
        module = module.to(dtype=torch_dtype(compute_dtype(cfg.input)))
    module = module.to(device=backend.device).eval()
    args, kwargs = make_inputs(cfg.input, module, backend.device)
    model: Any = module
    if cfg.compile.enabled:
        backend.check_compile(cfg.compile)
        # A fresh Dynamo per cell: earlier cells' graphs and recompile counters must not leak in.
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


def _measure(call: Callable[[], Any], spec: CellSpec, backend: Backend, out_dir: Path, spans: Any = None) -> Measured:
    write_phase(out_dir, "compile" if spec.config.compile.enabled else "first call")
    start = time.perf_counter()
    call()
    backend.synchronize()
    first_call_s = time.perf_counter() - start
    timing = spec.config.timing
    if timing.warmup < backend.min_warmup_calls:  # the backend's floor, documented where it is set
        timing = replace(timing, warmup=backend.min_warmup_calls)
    write_phase(out_dir, "timing")
    latency = time_callable(call, backend, timing)
    write_phase(out_dir, "profiling")
    with backend.profile_session(out_dir):
        profile = profile_callable(call, backend, spec.config.profiler, out_dir, spans)
    return Measured(first_call_s, latency, profile, torch.get_num_threads())


def _error_text(exc: BaseException) -> str:
    """The root cause in one line: wrappers (Hydra's InstantiationException) name a target, not the error."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: the layer called sys.exit({exc.code!r})"
    while exc.__cause__ is not None and not isinstance(exc, InputError):  # InputError names the input's key
        exc = exc.__cause__
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


def run_cell(spec: CellSpec, out_dir: Path) -> Results:
    """Run one cell and write its tables into `out_dir`. Never raises for the cell's own failures: a backend
    that cannot start, a layer that raises or calls sys.exit, a compile error all become the `error` row."""
    cfg = spec.config
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # Before the backend, the module or its inputs allocate anything (a fresh cell process applied it even
    # earlier, before importing torch: sweep.launch).
    host_alloc = allocator.apply(cfg.allocator.value)
    alloc_columns = {"allocator": host_alloc["mode"], "malloc": host_alloc["malloc"], "allocator_note": host_alloc["note"]}
    try:
        backend = resolve_backend(cfg.backend, cfg.neuron, cfg.profiler.neuron)
    except ConfigError as exc:
        return write_lost_cell(spec, out_dir, str(exc), backend_kind(cfg.backend),
                               {**describe_placement("cpu", None), **alloc_columns}, started_at)
    backend.prepare()
    measured: Measured | None = None
    limits = Limits({})
    error: str | None = None
    grad = grad_mode(cfg.input, backend.name)
    # Time per module in eager cells only: a compiled module runs as graphs whose ops no longer belong to modules.
    per_module = cfg.profiler.modules and not cfg.compile.enabled
    inspected: dict[str, Any] = {}
    # The process's own count is restored after the cell: the next cell of this process (basic launcher,
    # warm worker) must start from it, not from this cell's `threads`.
    process_threads = torch.get_num_threads()
    try:
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        with grad, _kernel_records(spec, backend):
            write_phase(out_dir, "build")
            built = _build(spec, backend)
            measured = _measure(built.call, spec, backend, out_dir, built.module if per_module else None)
            write_phase(out_dir, "limits")  # peak memory, the output saved, the work counted, the roofs
            limits = measure_limits(built.call, built.module, built.args, built.kwargs, spec, backend, out_dir,
                                    measured.latency.median_us, measured.profile)
            if per_module:  # FLOPs, bytes and inputs per module: one more eager call, outside both passes
                inspected = inspect_modules(built.module, built.args, built.kwargs)
                module_tree = built.module
            del built
    except ConfigError as exc:
        error = str(exc)
    except (Exception, SystemExit) as exc:  # failures are data: the sweep goes on with an error row
        error = _error_text(exc)
        atomic_write_text(out_dir / ERROR_LOG, traceback.format_exc())  # the row keeps one line, this the rest
        # The same traceback in the job's log (Hydra's neuronexp.log: conf/config.yaml routes this logger to its
        # file handler only, so the terminal keeps the one-line error).
        trace_log.error("cell %s failed: %s", spec.run_id, error, exc_info=True)
    finally:
        torch.set_num_threads(process_threads)
        if backend.name != "cpu":
            # Device memory held by reference cycles (compiled graphs) must be back before the next
            # cell; on the host, reference counting suffices and a full collection costs ~0.2 s a cell.
            gc.collect()
        if backend.name == "cuda":
            torch.cuda.empty_cache()
    extra = backend.after_profile(out_dir) if measured else {}
    if measured:
        fill_device_times(measured.profile, backend.device_op_times())
        if inspected:
            fill_module_device_times(measured.profile.modules, backend.device_op_times(), measured.profile.schedule.active)
    if cfg.profiler.modules and cfg.compile.enabled:
        extra["warnings"] = join_warnings(extra.get("warnings"), "profiler.modules: time per module is for eager cells; "
                                          "a compiled module runs as graphs, not modules (run it with compile.enabled=false)")
    if limits.notes:
        extra["warnings"] = join_warnings(extra.get("warnings"), *limits.notes)
    extra = {**describe_placement(backend.name, backend.device), **alloc_columns, **limits.columns, **extra}
    wanted = max(cfg.timing.warmup, backend.min_warmup_calls)
    if measured is not None and measured.latency.warmup_calls < wanted:
        cut = f"warm-up stopped after {measured.latency.warmup_calls} of {wanted} calls (timing.max_seconds={cfg.timing.max_seconds:g})"
        extra["warnings"] = join_warnings(extra.get("warnings"), cut)
    if host_alloc["note"]:  # the mode did not apply as asked: the figures are not what the key promised
        extra["warnings"] = join_warnings(extra.get("warnings"), f"allocator: {host_alloc['note']}")
    labels = cell_labels(spec, backend)
    tables = cell_tables(spec, backend, labels, measured, error, extra, started_at)
    if inspected and measured is not None and error is None:
        steps = [c.device_time_us for c in measured.profile.cycles]
        tables["modules"] = arrow_table("modules", module_rows(module_tree, measured.profile.modules,
                                        measured.profile.schedule.active, steps, inspected,
                                        {k: labels[k] for k in LABEL_COLUMNS}))
    threads = measured.threads if measured else cfg.threads or process_threads
    env = environment_record(labels["device_name"], backend.name, host_alloc, threads)
    if limits.host_roofs is not None:
        env["host_roofs"] = limits.host_roofs  # the probe behind this cell's roofs: figures, load, cache file
    write_json(out_dir / "env.json", env)
    write_job_tables(out_dir, tables)
    backend.finish()
    return Results(*(tables[name].to_pandas() for name in TABLES),
                   tables["modules"].to_pandas() if "modules" in tables else None)
