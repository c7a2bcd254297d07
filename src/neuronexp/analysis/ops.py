"""Op-level views: op names keyed across builds, each cell's hotspots, per-op time, the fusion view.

Computed for all cells at once (one groupby, not one per cell): a sweep can hold thousands of cells."""

from __future__ import annotations

import math
import numbers
import re
import statistics
from typing import Any

import numpy as np
import pandas as pd

from neuronexp.analysis.variants import comparison_grid
from neuronexp.results import usable

FUSION_COLUMNS = [
    "input",
    "variant",
    "is_baseline",
    "compared",
    "ops_dispatched",
    "device_ops",
    "device_time_us",
    "latency_median_us",
    "removed",
    "added",
]


_GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph \w+ ##$")
# Inductor prefixes a profiled C++ kernel with the process's graph counter: graph_3_cpp_fused_mul_0.
_GRAPH_PREFIX = re.compile(r"^graph_\d+_(?=(?:cpp|triton)_)")
# A build or cache hash: a long token of lowercase letters and digits, both present (never a word or a number).
_HASH = re.compile(r"[_ .-]?(?<![A-Za-z0-9])(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{20,}(?![A-Za-z0-9])")


def normalize_op(name: str) -> str:
    """The op's name without what changes from one run or process to the next, so names group across runs: Inductor's
    graph call loses its hash ("CompiledFxGraph call"), a profiled kernel its graph counter (`graph_3_cpp_fused_mul_0`
    -> `cpp_fused_mul_0`), any other name its hash-like tokens. The raw name stays in the ops table's `op_raw`."""
    name = str(name)
    if _GRAPH_CALL.match(name):
        return "CompiledFxGraph call"
    return _HASH.sub("", _GRAPH_PREFIX.sub("", name)) or name


def op_key(name: str, device_type: str) -> str:
    """Names keyed across builds (normalize_op), device rows tagged with their device (none given: a host op)."""
    name = normalize_op(name)
    return name if device_type in ("CPU", "") else f"{name} [{device_type}]"


def median_over_cycles(rows: pd.DataFrame, cycles_of: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """run_id, op, cols: each op's median over its cell's profiler cycles, an op absent from a cycle counting 0 there.
    Medians, not means: one slow cycle (the profiler's start-up, another process) cannot move it. `cycles_of` lists
    every (run_id, cycle) profiled, including cycles where none of `rows`' ops ran. Sorted by run_id, then op.
    In arrays, not groupbys and merges: a report ranks every cell's ops of a sweep of thousands at once."""
    runs, cycle_keys, low, width = _cycles(cycles_of)
    op_code, op_names = pd.factorize(rows["op"].to_numpy(), sort=True)
    run = runs.get_indexer(rows["run_id"]) if len(runs) else np.full(len(rows), -1)
    cycle = rows["cycle"].to_numpy(dtype=float)
    # A row of a run not listed, of no op or of no cycle is dropped (as a merge and a groupby would drop it).
    listed = (run >= 0) & (op_code >= 0) & np.isfinite(cycle)
    ops = max(len(op_names), 1)
    pair_keys, pair = np.unique(run[listed] * ops + op_code[listed], return_inverse=True)
    if not len(pair_keys):
        return pd.DataFrame(columns=["run_id", "op", *cols])
    pair_run, offset = pair_keys // ops, cycle[listed].astype(np.int64) - low
    key = run[listed] * width + offset
    slot = np.minimum(np.searchsorted(cycle_keys, key), len(cycle_keys) - 1)
    # A row of a cycle not listed is in no cycle's sum (one outside the listed range would read as another run's).
    counted = (offset >= 0) & (offset < width) & (cycle_keys[slot] == key)
    first = np.searchsorted(cycle_keys, pair_run * width)  # each run's first cycle; the others follow it
    counts = np.searchsorted(cycle_keys, (pair_run + 1) * width) - first
    depth = int(counts.max())
    cell = (pair * depth + slot - first[pair])[counted]  # (the op's pair, the row's cycle among its run's cycles)
    missing = np.arange(depth) >= counts[:, None]  # cycles a run never had: no value, not 0
    out = {"run_id": runs.take(pair_run), "op": op_names.take(pair_keys % ops)}
    for col in cols:
        values = np.nan_to_num(rows[col].to_numpy(dtype=float)[listed][counted])  # as a groupby's sum: NaN adds 0
        table = np.bincount(cell, weights=values, minlength=len(pair_keys) * depth).reshape(len(pair_keys), depth)
        table[missing] = np.nan
        out[col] = np.nanmedian(table, axis=1) if missing.any() else np.median(table, axis=1)
    return pd.DataFrame(out, columns=["run_id", "op", *cols])


def _cycles(cycles_of: pd.DataFrame) -> tuple[pd.Index, np.ndarray, int, int]:
    """The runs (sorted); each (run, cycle) profiled as the sorted keys run × width + (cycle - low), with the lowest
    cycle number `low` and `width` the span of the numbers."""
    cycle = cycles_of["cycle"].to_numpy(dtype=float)
    known = np.isfinite(cycle) & cycles_of["run_id"].notna().to_numpy()  # a profiled cycle has a run and a number
    code, runs = pd.factorize(cycles_of["run_id"][known], sort=True)
    cycle = cycle[known].astype(np.int64)
    low = int(cycle.min()) if len(cycle) else 0
    width = int(cycle.max()) - low + 1 if len(cycle) else 1
    return pd.Index(runs), np.unique(code * width + cycle - low), low, width


def per_op(ops: pd.DataFrame) -> pd.DataFrame:
    """run_id, op, us, calls: self device time and calls per step, median over profiler cycles."""
    if ops.empty:
        return pd.DataFrame(columns=["run_id", "op", "us", "calls"])
    # A null read back is NaN (pandas' str columns), not None: either is no device, never "[nan]".
    keys = [op_key(o, "" if pd.isna(t) else str(t)) for o, t in zip(ops["op"], ops["device_type"])]
    out = median_over_cycles(ops.assign(op=keys), ops, ["self_device_us", "calls"])
    return out.rename(columns={"self_device_us": "us"})


def leaf_ops(ops: pd.DataFrame) -> pd.DataFrame:
    """Op rows that did work themselves (`leaf`); results written before that column keep every row."""
    if "leaf" not in ops.columns:
        return ops
    return ops[ops["leaf"].fillna(True).astype(bool)]


def host_ops(ops: pd.DataFrame) -> pd.DataFrame:
    """Operator rows, host side for cells whose profile has both host and device rows, op names keyed.

    Host op names (aten::mul) are what the module called, in the study's words; device rows are
    kernels, often several per op. Keyed names merge Inductor graph calls that differ only by a hash.
    """
    has_host = set(ops.loc[ops["device_type"] == "CPU", "run_id"])
    rows = ops[(ops["device_type"] == "CPU") | ~ops["run_id"].isin(has_host)]
    names = {o: op_key(o, "CPU") for o in rows["op"].unique()}
    return rows.assign(op=rows["op"].map(names))


def hotspots(ops: pd.DataFrame, top: int = 8) -> dict[str, pd.DataFrame]:
    """Per cell: top leaf ops by self device time per step (median over profiler cycles), with their share of the median
    profiled step. Leaf ops only (neuronexp.cell.optree): a wrapper's self time is dispatch, not the work it hands on.
    """
    if ops.empty:
        return {}
    per_op = median_over_cycles(leaf_ops(host_ops(ops)), ops, ["calls", "self_device_us"])
    # The median time as a share of the median step, not a median of shares: a median of each column on its
    # own can rank an op above another while giving it the smaller share.
    per_op["share"] = per_op["self_device_us"] / per_op["run_id"].map(_median_step(ops))
    run = pd.factorize(per_op["run_id"])[0]  # ascending: the rows come sorted by run_id, then op
    # Each run's ops by time, most first (NaN last), ties in op order; its first `top` kept.
    order = np.lexsort((-per_op["self_device_us"].to_numpy(dtype=float), run))
    first = np.searchsorted(run[order], run[order])
    kept = order[np.arange(len(order)) - first < top]
    ranked, starts = per_op.drop(columns="run_id").take(kept), np.flatnonzero(np.diff(run[kept], prepend=-1))
    return {
        str(per_op["run_id"].iat[kept[a]]): ranked.iloc[a:b].reset_index(drop=True)
        for a, b in zip(starts, [*starts[1:], len(kept)])
    }


def cell_hotspot(rows: list[dict[str, Any]]) -> tuple[str | None, float]:
    """One cell's hotspot from its op rows as records: `hotspots(ops, top=1)`'s op and share, (None, NaN) when its
    time is not above 0. The same rule without pandas, since every cell's process computes it (15-25 ms a cell with
    the DataFrame's, 0.1 ms so; tests/analysis/test_hotspots.py checks both agree)."""
    cycles = {r["cycle"] for r in rows if _number(r.get("cycle"))}
    host = [r for r in rows if r.get("device_type") == "CPU"] or rows
    sums: dict[str, dict[float, float]] = {}  # keyed op → cycle → its time there
    for r in host:
        if r.get("cycle") in cycles and isinstance(r.get("op"), str) and _is_leaf(r.get("leaf")):
            per_cycle = sums.setdefault(op_key(r["op"], "CPU"), {})
            per_cycle[r["cycle"]] = per_cycle.get(r["cycle"], 0.0) + _or_zero(r.get("self_device_us"))
    medians = {op: statistics.median([t.get(c, 0.0) for c in cycles]) for op, t in sums.items()}
    top = min(sorted(medians), key=lambda op: -medians[op], default=None)  # most time; a tie in op order
    if top is None or not medians[top] > 0:
        return None, float("nan")
    steps: dict[float, list[float]] = {}  # cycle → the step read back from each op's time and share in it
    for r in rows:
        us, share = _or_zero(r.get("self_device_us")), _or_zero(r.get("device_share"))  # (NaN: not > 0, left out)
        if r.get("cycle") in cycles and us > 0 and share > 0:
            steps.setdefault(r["cycle"], []).append(us / share)
    step = statistics.median(statistics.median(v) for v in steps.values()) if steps else float("nan")
    return top, medians[top] / step


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _or_zero(value: Any) -> float:
    return float(value) if _number(value) else 0.0  # as a groupby's sum: NaN adds 0


def _is_leaf(value: Any) -> bool:
    return True if value is None or (isinstance(value, float) and math.isnan(value)) else bool(value)


def _median_step(ops: pd.DataFrame) -> pd.Series:
    """Per run_id: the median over cycles of the profiled step, read back from any op's time and share in it."""
    shown = ops[(ops["device_share"] > 0) & (ops["self_device_us"] > 0)]
    per_cycle = (shown["self_device_us"] / shown["device_share"]).groupby([shown["run_id"], shown["cycle"]]).median()
    return per_cycle.groupby(level="run_id").median()


def fusion_table(cells: pd.DataFrame, ops: pd.DataFrame) -> pd.DataFrame:
    """Per input and variant: ops dispatched and executed per step, and which leaf ops disappeared or appeared
    compared with the cell's baseline cell (`baseline_run_id`; the fusion finding, op by op). `compared` is false for
    a cell without a usable baseline cell, whose removed/added lists say nothing."""
    ok = cells[cells["status"].map(usable)]
    _, variants, grid = comparison_grid(ok)
    host = leaf_ops(host_ops(ops)) if not ops.empty else ops
    names = host[host["calls"] > 0].groupby("run_id")["op"].agg(set).to_dict() if not host.empty else {}
    usable_runs = set(ok["run_id"])
    rows = []
    for key, by_variant in grid.items():
        for variant in variants:
            cell = by_variant.get(variant)
            if cell is None:
                continue
            ref = cell.get("baseline_run_id")
            is_baseline = ref == cell["run_id"]
            compared = isinstance(ref, str) and ref in usable_runs and not is_baseline
            mine, base_ops = names.get(cell["run_id"], set()), names.get(ref, set()) if compared else set()
            rows.append(
                {
                    "input": " ".join(map(str, key)),
                    "variant": variant,
                    "is_baseline": is_baseline,
                    "compared": compared,
                    "ops_dispatched": cell.get("ops_dispatched"),
                    "device_ops": cell["device_ops"],
                    "device_time_us": cell["device_time_us"],
                    "latency_median_us": cell["latency_median_us"],
                    "removed": sorted(base_ops - mine) if compared else [],
                    "added": sorted(mine - base_ops) if compared else [],
                }
            )
    return pd.DataFrame(rows, columns=FUSION_COLUMNS)
