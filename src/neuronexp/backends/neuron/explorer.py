"""Device-level metrics: run `neuron-explorer view` on a capture and join its `Summary` table into the cell row.

Field names and units are the Summary table of the Neuron Explorer profile schema reference (schema 7.4.0,
SDK 2.31). Column naming is pinned: `neuron_<field>`, with `_us` appended to fields the schema gives in
seconds (converted to microseconds); percent, byte, count and FLOP fields keep their name and unit.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

_ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")
# field -> unit as in the schema reference; "s" fields become `_us` columns.
SUMMARY_FIELDS: dict[str, str] = {
    "total_time": "s", "total_exec_time": "s", "total_active_time": "s", "total_active_time_percent": "percent",
    "neuroncore_cycle_count": "cycles", "model_flops": "flops", "hardware_flops": "flops",
    "mfu_estimated_percent": "percent", "hfu_estimated_percent": "percent", "mbu_estimated_percent": "percent",
    "mm_arithmetic_intensity": "ratio",
    "hbm_read_bytes": "bytes", "hbm_write_bytes": "bytes", "sbuf_read_bytes": "bytes", "sbuf_write_bytes": "bytes",
    "spill_save_bytes": "bytes", "spill_reload_bytes": "bytes",
    "dma_active_time": "s", "dma_active_time_percent": "percent", "dma_transfer_count": "count",
    "dma_transfer_total_bytes": "bytes", "matmul_instruction_count": "count",
    **{f"{e}_engine_{k}": u for e in _ENGINES for k, u in
       (("active_time", "s"), ("active_time_percent", "percent"), ("instruction_count", "count"))},
}
_AVERAGED = ("percent", "ratio")  # not additive across device profiles: weighted by total_time
SEARCH_DIRS = ("/opt/aws/neuron/bin",)  # where aws-neuronx-tools installs, often not on PATH
_DROPPED = re.compile(r"(\d[\d,]*)\s+trace events were dropped", re.I)


def column_name(name: str) -> str:
    return f"neuron_{name}_us" if SUMMARY_FIELDS[name] == "s" else f"neuron_{name}"


SUMMARY_COLUMNS = [column_name(f) for f in SUMMARY_FIELDS]


@dataclass
class ExplorerResult:
    status: str  # ok | disabled | not_found | no_capture | failed | timeout | no_summary
    columns: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    summary_files: list[str] = field(default_factory=list)


def find_explorer() -> str | None:
    found = shutil.which("neuron-explorer")
    if found:
        return found
    return next((str(Path(d) / "neuron-explorer") for d in SEARCH_DIRS if (Path(d) / "neuron-explorer").is_file()), None)


def explorer_command(exe: str, capture_dir: Path, output_dir: Path) -> list[str]:
    return [exe, "view", "-d", str(capture_dir), "--output-format", "parquet", "--output-file", str(output_dir)]


def read_summary(output_dir: Path) -> tuple[pd.DataFrame, list[str]]:
    """Every `Summary*.parquet` under `output_dir` (one per processed device profile), concatenated."""
    paths = sorted(output_dir.rglob("Summary*.parquet"))
    frames = [pd.read_parquet(p) for p in paths]
    frames = [f for f in frames if not f.empty]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), [str(p.relative_to(output_dir)) for p in paths]


def summary_columns(summary: pd.DataFrame) -> dict[str, float]:
    """The pinned columns from Summary rows: additive fields summed, percentages weighted by total_time."""
    cols: dict[str, float] = {c: math.nan for c in SUMMARY_COLUMNS}
    cols["neuron_summary_rows"] = float(len(summary))
    if summary.empty:
        return cols
    weights = pd.to_numeric(summary.get("total_time"), errors="coerce") if "total_time" in summary else None
    for name, unit in SUMMARY_FIELDS.items():
        if name not in summary:
            continue
        values = pd.to_numeric(summary[name], errors="coerce")
        if values.isna().all():
            continue
        if unit in _AVERAGED:
            mask = values.notna() & weights.notna() & (weights > 0) if weights is not None else values.notna() & False
            value = float((values[mask] * weights[mask]).sum() / weights[mask].sum()) if mask.any() else float(values.mean())
        else:
            value = float(values.sum())
        cols[column_name(name)] = value * 1e6 if unit == "s" else value
    return cols


def dropped_events(text: str) -> int:
    """Sum of "Warning: N trace events were dropped" counts in the tool's output."""
    return sum(int(m.replace(",", "")) for m in _DROPPED.findall(text))


def _table_warnings(output_dir: Path) -> list[str]:
    """Rows of Explorer's own `Warning` table (possible missing or unexpected data)."""
    out = []
    for path in sorted(output_dir.rglob("Warning*.parquet")):
        df = pd.read_parquet(path)
        for _, row in df.iterrows():
            out.append(f"neuron-explorer: {row.get('category', 'warning')}: {row.get('message', '')}".strip())
    return list(dict.fromkeys(out))


def process_capture(capture_dir: Path | None, output_dir: Path, enabled: bool, timeout_s: float) -> ExplorerResult:
    """Run `neuron-explorer view` into `output_dir` and read its Summary (never raises on tool failure)."""
    empty = dict(summary_columns(pd.DataFrame()), neuron_dropped_events=math.nan)
    if not enabled:
        return ExplorerResult("disabled", empty)
    if capture_dir is None:
        return ExplorerResult("no_capture", empty)
    exe = find_explorer()
    if exe is None:
        return ExplorerResult("not_found", empty, [
            "neuron-explorer is not on PATH: the neuron_* Summary columns are empty (install aws-neuronx-tools, "
            "or export PATH=/opt/aws/neuron/bin:$PATH)"])
    output_dir.mkdir(parents=True, exist_ok=True)
    cmd = explorer_command(exe, capture_dir, output_dir)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return ExplorerResult("timeout", empty, [f"neuron-explorer view ran past {timeout_s:g} s "
                                                 "(profiler.neuron.explorer_timeout_s); Summary columns are empty"], cmd)
    text = (proc.stdout or "") + "\n" + (proc.stderr or "")
    dropped = dropped_events(text)
    warnings = [f"{dropped} trace events were dropped: raise profiler.neuron.max_events_per_nc (default 1,000,000), "
                "capture fewer NeuronCores, or profile fewer steps"] if dropped else []
    if proc.returncode != 0:
        last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
        warnings.append(f"neuron-explorer view exited with {proc.returncode}: {last[:200]}")
        return ExplorerResult("failed", dict(empty, neuron_dropped_events=float(dropped)), warnings, cmd)
    try:
        summary, files = read_summary(output_dir)
        warnings += _table_warnings(output_dir)
    except Exception as exc:  # a half-written or newer-format table must not cost the cell its row
        warnings.append(f"neuron-explorer output unreadable ({type(exc).__name__}: {str(exc)[:160]})")
        return ExplorerResult("failed", dict(empty, neuron_dropped_events=float(dropped)), warnings, cmd)
    columns = dict(summary_columns(summary), neuron_dropped_events=float(dropped))
    if summary.empty:
        warnings.append("neuron-explorer wrote no Summary table (no device profile in the capture?)")
        return ExplorerResult("no_summary", columns, warnings, cmd, files)
    return ExplorerResult("ok", columns, warnings, cmd, files)
