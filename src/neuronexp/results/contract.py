"""The results contract: the three tidy tables, their columns and types; the tables as a reader holds them (Results)
and rows turned into them, cast to the contract.

Imports nothing else from neuronexp (every stage writes or reads these tables).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa

# Labels every op row repeats, so an op table can be grouped without a join.
LABEL_COLUMNS = ["run_id", "experiment", "module", "compiled", "backend", "device", "dtype", "input_shape"]

_STR, _F64, _I64, _BOOL = pa.string(), pa.float64(), pa.int64(), pa.bool_()
_DIMS = pa.list_(pa.int64())
# The invocation of neuronexp (a run or a sweep) that measured the row (results.invocation), in every table: two runs
# of one configuration share run_id, never invocation_id. A reused (cached) cell keeps the one that measured it.
_INVOCATION = [("invocation_id", _STR), ("invocation_started_at", _STR)]

CELL_SCHEMA = pa.schema(
    [
        ("run_id", _STR),
        ("experiment", _STR),
        ("module", _STR),
        ("compiled", _BOOL),
        # The torch.compile backend a compiled cell ran under (the config's compile.backend, else its device's default:
        # inductor, neuron); null for an eager cell, and for a cell that never started.
        ("compile_backend", _STR),
        ("backend", _STR),
        ("device", _STR),
        ("device_name", _STR),
        ("dtype", _STR),
        ("input_shape", _STR),
        ("numel", _I64),
        # The shape's dimensions as integers (`input_shape` is its label, as the command line writes it).
        ("shape_dims", _DIMS),
        ("overrides", _STR),
        # `config` (built from the config's `module`) or `memory` (an nn.Module instance handed to neuronexp.sweep).
        ("module_source", _STR),
        ("status", _STR),
        ("error", _STR),
        ("latency_median_us", _F64),
        ("latency_p10_us", _F64),
        ("latency_p90_us", _F64),
        ("latency_samples", _I64),
        ("timing_method", _STR),
        ("first_call_s", _F64),
        ("device_time_us", _F64),
        ("cpu_time_us", _F64),
        ("device_ops", _F64),
        ("device_time_source", _STR),
        # Every source that gave a device time per step (comma-joined, device_time_source among them), and whether
        # they agree: agree | disagree (beyond a tolerance; the figures in warnings) | one source | no source.
        ("device_time_sources", _STR),
        ("device_time_check", _STR),
        ("top_op", _STR),
        ("top_op_share", _F64),
        ("speedup_vs_baseline", _F64),
        # The speedup's 95% interval and how it was found: `paired` (the median of per-pair ratios, the cell and its
        # baseline timed interleaved in one process; a block bootstrap over pairs) or `unpaired` (the ratio of
        # medians of cells timed apart; a bootstrap over rounds, the reason in `warnings`). analysis.paired.
        ("speedup_ci_low", _F64),
        ("speedup_ci_high", _F64),
        ("speedup_method", _STR),
        # The cells timed together, interleaved, share this id (null: timed alone); sample_block: calls per sample
        # (short paired calls are timed in blocks: cell.timing.BLOCK_US).
        ("timing_group", _STR),
        ("sample_block", _I64),
        # The run_id of the cell this one is compared with (analysis.variants.baseline_run_ids; filled for a sweep).
        ("baseline_run_id", _STR),
        ("trace_path", _STR),
        ("warnings", _STR),
        ("torch_version", _STR),
        ("neuronx_version", _STR),
        ("started_at", _STR),
        # Where the cell ran, its slot's label (cellprocess.placement.Slot.label; cell.rows.describe_placement
        # in the cell's own process): "cpu:0-1", "cuda:3", "neuron:4-5"; the host cores its process was pinned to,
        # that process's id and its host.
        ("placement", _STR),
        ("placement_cpus", _STR),
        ("worker_pid", _I64),
        ("host", _STR),
        # How far from the limit (docs/profile.md, "Roofline"). bytes_min = bytes_read (inputs, parameters and
        # buffers the call reads, once) + bytes_written (outputs, once): cell.work. flops: FlopCounterMode's count for
        # one call; flops_note names the operators it has no formula for (counted 0). intensity = flops / bytes_min
        # (FLOP/B); achieved_gbs (1 GB = 1e9 B) and achieved_tflops over latency_median_us; peak_bw_gbs and
        # peak_tflops the roofs in the cell's dtype, peak_source where they come from (a published row of
        # analysis/peaks.yaml, this host's probe, or roofline.peak_*); pct_peak_bw / pct_peak_flops = 100 x achieved
        # / peak (percent; above 100: the data came from a cache); bound: memory | compute, by the roofline.
        ("bytes_min", _I64),
        ("bytes_read", _I64),
        ("bytes_written", _I64),
        ("flops", _F64),
        ("flops_note", _STR),
        ("intensity", _F64),
        ("achieved_gbs", _F64),
        ("achieved_tflops", _F64),
        ("peak_bw_gbs", _F64),
        ("peak_tflops", _F64),
        ("peak_source", _STR),
        ("pct_peak_bw", _F64),
        ("pct_peak_flops", _F64),
        ("bound", _STR),
        # Peak memory of the cell in bytes, and what that figure is on its backend (one call's allocations on CPU
        # and CUDA; the runtime's peak over the cell on Neuron).
        ("peak_memory_bytes", _F64),
        ("peak_memory_method", _STR),
        # The output check against the cell's baseline cell (analysis.correctness): output_tensors saved in
        # output.npz; output_check pass | FAIL | baseline | no baseline | off | n/a; output_match (null: not
        # compared); max_abs_err, max_rel_err; output_rtol / output_atol as set (null: by dtype); output_note: how.
        # output_nonfinite: NaN and inf elements in the cell's own output (a cell with any is no finding).
        ("output_tensors", _I64),
        ("output_nonfinite", _I64),
        ("output_check", _STR),
        ("output_match", _BOOL),
        ("max_abs_err", _F64),
        ("max_rel_err", _F64),
        ("output_rtol", _F64),
        ("output_atol", _F64),
        ("output_note", _STR),
        # What the host did to the measurement (docs/methodology.md). torch intra-op threads used; the `allocator`
        # mode asked for (stable | system | preloaded), what serves malloc ("glibc 2.36", "tcmalloc"), and why the
        # mode did not apply as asked (null when it did).
        ("threads", _I64),
        ("allocator", _STR),
        ("malloc", _STR),
        ("allocator_note", _STR),
        # Rounds: latency_median_us is the median of `latency_rounds` round medians; round_spread the (max - min) /
        # median of five slices of them (cell.timing.SLICES); p90_p10 the ratio of the pooled samples' p90 to p10.
        ("latency_rounds", _I64),
        ("round_spread", _F64),
        ("p90_p10", _F64),
        # Why the rounds ended (cell.timing.Stopped): count (timing.precision=null: the fixed count) | alone (no other
        # cell timed with it: the fixed count) | precision (every paired ratio of its group within the target) |
        # max_seconds (the budget ran out first); precision_target: timing.precision; precision_reached: the relative
        # half-width of the group's widest paired 95% interval at the stop; precision_met (null: no target).
        ("timing_stop", _STR),
        ("precision_target", _F64),
        ("precision_reached", _F64),
        ("precision_met", _BOOL),
        # The machine during the timed pass: 1-minute load average at its end, cores' worth of CPU used by other
        # processes, share of CPU time stolen by the hypervisor (null where the kernel does not say).
        ("load_avg_1m", _F64),
        ("other_cpu", _F64),
        ("cpu_steal", _F64),
        # The host reference (host.reference): medians over the timing rounds of two fixed workloads timed in the
        # cell's process at each round's start, a 16-element add and a 16 MiB multiply (µs). They never change, so
        # between two runs they move with the host alone: compare widens a cell's interval by that.
        ("host_dispatch_us", _F64),
        ("host_memory_us", _F64),
        # True when the figures above say the latency is not a finding; `noise` says why (also in `warnings`).
        ("noisy", _BOOL),
        ("noise", _STR),
        # The profile: per-step figures are medians over `profile_cycles` cycles of `profile_schedule`
        # (wait/warmup/active/repeat). ops_dispatched: calls the module made; ops_executed: leaf host ops on a
        # CPU, device kernels elsewhere (= device_ops). profile_ratio: device_time_us / latency_median_us
        # (> 1.5 warns that the profiler distorts). memory_per_step_bytes: bytes the step's ops allocated,
        # with profiler.profile_memory=true.
        ("ops_dispatched", _F64),
        ("ops_executed", _F64),
        ("profile_cycles", _I64),
        ("profile_schedule", _STR),
        ("profile_ratio", _F64),
        ("memory_per_step_bytes", _F64),
        *_INVOCATION,
    ]
)

OP_SCHEMA = pa.schema(
    [(c, _BOOL if c == "compiled" else _STR) for c in LABEL_COLUMNS]
    + [
        # op: the name with run-specific parts removed (analysis.ops.normalize_op), for grouping across runs;
        # op_raw: the name as the profiler recorded it.
        ("shape_dims", _DIMS),
        ("cycle", _I64),
        ("op", _STR),
        ("op_raw", _STR),
        ("device_type", _STR),
        ("calls", _F64),
        ("self_cpu_us", _F64),
        ("cpu_total_us", _F64),
        ("self_device_us", _F64),
        ("device_total_us", _F64),
        ("device_share", _F64),
        ("input_shapes", _STR),
        ("flops", _F64),
        # leaf: an op that did work and held no working call (hotspots are chosen among leaves; wrappers such as
        # aten::rms_norm are not). Memory per step (bytes, net of the op's own frees) with profile_memory=true.
        ("leaf", _BOOL),
        ("self_cpu_memory_bytes", _F64),
        ("self_device_memory_bytes", _F64),
        *_INVOCATION,
    ]
)

# With profiler.modules=true, one row per job × module path, per profiled step (median over cycles). Times are the
# op table's currency: self = the self time of the ops called in the module itself, not in a child module; total =
# self + its children's totals (so a child's total never exceeds its parent's). share = total_device_us / the
# step's device time, all from the profile's median cycle. flops, bytes_min, input_*: one more eager call.
MODULE_SCHEMA = pa.schema(
    [(c, _BOOL if c == "compiled" else _STR) for c in LABEL_COLUMNS]
    + [
        ("module_path", _STR),
        ("module_type", _STR),
        ("depth", _I64),
        ("parent_path", _STR),
        ("calls", _F64),
        ("self_cpu_us", _F64),
        ("total_cpu_us", _F64),
        ("self_device_us", _F64),
        ("total_device_us", _F64),
        ("share", _F64),
        # The module's total over each of the profile's `cycles` (per step): its lowest, median and highest. The
        # hotspots rank by the median and mark an entry whose band could change its place (moduletime.views).
        ("cycles", _I64),
        ("total_device_us_low", _F64),
        ("total_device_us_median", _F64),
        ("total_device_us_high", _F64),
        ("flops", _F64),
        ("bytes_min", _I64),
        ("input_shapes", _STR),
        ("input_dtypes", _STR),
        # The first call's inputs as value specs (JSON {"args": [...], "kwargs": {...}}): what neuronexp-extract
        # rebuilds them from.
        ("input_specs", _STR),
    ]
)

# round: the timing round a sample was taken in (0 .. latency_rounds - 1); pair: its pair index when the cell was timed
# paired with its group (the samples of the group's cells with one pair index were taken back to back), else null.
SAMPLE_SCHEMA = pa.schema(
    [
        ("run_id", _STR),
        ("sample", _I64),
        ("latency_us", _F64),
        ("round", _I64),
        ("pair", _I64),
        *_INVOCATION,
    ]
)

# Counts kept as float64 on disk because a per-step figure can be fractional (an op called unevenly across several
# active steps, a median over an even number of cycles); the reader returns them as integers when they are whole.
COUNT_COLUMNS = ("calls", "device_ops", "ops_dispatched", "ops_executed")

SCHEMAS = {"cells": CELL_SCHEMA, "ops": OP_SCHEMA, "samples": SAMPLE_SCHEMA, "modules": MODULE_SCHEMA}
TABLES = ("cells", "ops", "samples")
# Written only by cells that asked for them (profiler.modules=true); a job or sweep without one reads as empty.
OPTIONAL_TABLES = ("modules",)


# A cell whose measurements can be used: run now, or reused from an earlier run of the same config.
USABLE = ("ok", "cached")


def usable(status: Any) -> bool:
    return status in USABLE


def usable_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells with a measured latency (run now or reused): what speedups, findings and plots are made of."""
    return cells[cells["status"].isin(USABLE) & cells["latency_median_us"].notna()]


class _Tables(NamedTuple):
    cells: pd.DataFrame
    ops: pd.DataFrame
    samples: pd.DataFrame


class Results(_Tables):
    """cells, ops, samples — and `modules`, an attribute rather than a fourth element, so that
    `cells, ops, samples = neuronexp.load(d)` keeps working (empty unless profiler.modules=true)."""

    _modules: pd.DataFrame | None  # set by __new__, absent from a tuple built without it (see modules)

    def __new__(
        cls, cells: pd.DataFrame, ops: pd.DataFrame, samples: pd.DataFrame, modules: pd.DataFrame | None = None
    ) -> Results:
        self = super().__new__(cls, cells, ops, samples)
        self._modules = modules
        return self

    @classmethod
    def of(cls, tables: Iterable[pd.DataFrame], modules: pd.DataFrame | None = None) -> Results:
        """From the three tables in TABLES' order (a generator over TABLES, say), and modules. A type checker
        cannot count what a starred generator holds, so `Results(*gen, modules)` reads to it as too many."""
        cells, ops, samples = tables
        return cls(cells, ops, samples, modules)

    @classmethod
    def from_arrow(cls, tables: Mapping[str, pa.Table]) -> Results:
        """From Arrow tables by name: the three of TABLES, and `modules` where there is one."""
        modules = tables.get("modules")
        return cls.of((tables[name].to_pandas() for name in TABLES), None if modules is None else modules.to_pandas())

    @property
    def modules(self) -> pd.DataFrame:
        # A tuple built without __new__ (namedtuple's _make, unpickling) has none: the empty table, not an error.
        found = self.__dict__.get("_modules")
        return found if found is not None else MODULE_SCHEMA.empty_table().to_pandas()

    def _replace(self, **changes: Any) -> Results:
        modules = changes.pop("modules", self.__dict__.get("_modules"))
        return Results(*super()._replace(**changes), modules)


def no_results() -> Results:
    """The three tables without a row (a dry run's)."""
    return Results.of(SCHEMAS[name].empty_table().to_pandas() for name in TABLES)


def whole_counts(df: pd.DataFrame) -> pd.DataFrame:
    """COUNT_COLUMNS as nullable integers (pandas "Int64") where every value is whole; left as floats otherwise."""
    out = df
    for col in COUNT_COLUMNS:
        if col in df.columns and pd.api.types.is_float_dtype(df[col]):
            values = df[col].dropna()
            if (values == values.round()).all():
                out = out.assign(**{col: df[col].astype("Int64")})
    return out


def to_arrow(name: str, df: pd.DataFrame) -> pa.Table:
    """Cast to the contract's types; extra columns (e.g. `neuron_*`) follow with inferred types."""
    schema = SCHEMAS[name]
    for col in schema.names:
        if col not in df.columns:
            df = df.assign(**{col: None})
    extras = [c for c in df.columns if c not in schema.names]
    core = pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)
    for col in extras:
        core = core.append_column(col, pa.Array.from_pandas(df[col]))
    return core


def arrow_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows → an Arrow table with the contract's columns and types, extra columns after them; straight from the
    rows (no pandas on the way): this runs once per table of every cell."""
    schema = SCHEMAS[name]
    table = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)
    names = set(schema.names)  # a set: a cell's thousands of sample rows ask it for every key
    extras = dict.fromkeys(k for r in rows for k in r if k not in names)
    for col in extras:
        table = table.append_column(col, pa.array([r.get(col) for r in rows]))
    return table


def frame(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → DataFrame with the contract's columns in order and its dtypes."""
    return arrow_table(name, rows).to_pandas()
