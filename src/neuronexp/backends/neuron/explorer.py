"""Device-level metrics: run `neuron-explorer view` on a capture, as the documented examples do, and read its
Parquet tables into the cell row; a tool that rejects the filters or the root is retried plainly, then on the one
session folder. What is read: tables.py, summary.py, insights.py, device_ops.py."""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuronexp.backends.neuron.device_ops import Breakdown, breakdown
from neuronexp.backends.neuron.explorer_summary import combine, convert_summary, summary_notes
from neuronexp.backends.neuron.explorer_tables import (
    KNOWN_MAJORS,
    Profile,
    find_profiles,
    major,
    read_units,
    schema_version,
)
from neuronexp.backends.neuron.insights import insights
from neuronexp.backends.neuron.runtime import RuntimeTrace, read_trace

SEARCH_DIRS = ("/opt/aws/neuron/bin",)  # where aws-neuronx-tools installs, often not on PATH
_DROPPED = re.compile(r"(\d[\d,]*)\s+trace events were dropped", re.I)


@dataclass
class ExplorerResult:
    status: str  # ok | disabled | not_found | no_capture | failed | timeout | no_summary
    columns: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    summary_files: list[str] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    schema: dict[str, Any] = field(default_factory=dict)
    device_ops: Breakdown = field(default_factory=Breakdown)
    has_framework_table: bool = False  # Explorer wrote FrameworkInstruction (NEFFs compiled with debug names)
    runtime: RuntimeTrace | None = None  # SystemProfileEvents: executions and profiled-step spans


def empty_columns() -> dict[str, Any]:
    cols: dict[str, Any] = dict(
        combine([]), neuron_dropped_events=math.nan, neuron_profile_schema_version=None, neuron_units_source=None
    )
    cols.update(insights([], {}))
    return cols


def find_explorer() -> str | None:
    beside = (Path(d) / "neuron-explorer" for d in SEARCH_DIRS)
    return shutil.which("neuron-explorer") or next((str(exe) for exe in beside if exe.is_file()), None)


def explorer_command(exe: str, capture_dir: Path, output_dir: Path, filters: list[str]) -> list[str]:
    """`neuron-explorer view` of a capture into Parquet tables (also run by scripts/neuron_smoke.py)."""
    return [
        exe,
        "view",
        "-d",
        str(capture_dir),
        "--output-format",
        "parquet",
        "--output-file",
        str(output_dir),
        *filters,
    ]


def capture_filters(modes: list[str], cores: list[str] | None) -> list[str]:
    """Explorer's processing filters for what this capture left out (how-to-profile-workload, SDK 2.31+)."""
    out = []
    if "DEVICE" not in modes:
        out.append("--ignore-device-profile")
    if "RUNTIME" not in modes:
        out.append("--ignore-system-profile")
    elif cores:
        out += ["--system-trace-filter-neuron-core", ",".join(cores)]
    return out


def dropped_events(text: str) -> int:
    """Sum of "Warning: N trace events were dropped" counts in the tool's output."""
    return sum(int(m.replace(",", "")) for m in _DROPPED.findall(text))


def _table_warnings(profiles: list[Profile]) -> list[str]:
    """Rows of Explorer's own `Warning` table (possible missing or unexpected data)."""
    out = []
    for profile in profiles:
        for _, row in profile.read("Warning").iterrows():
            out.append(f"neuron-explorer: {row.get('category', 'warning')}: {row.get('message', '')}".strip())
    return list(dict.fromkeys(out))


def read_output(output_dir: Path) -> tuple[dict[str, Any], list[str], dict[str, Any], Breakdown, list[str]]:
    """Columns, warnings, schema account, per-op breakdown and Summary files from Explorer's output folder."""
    profiles = find_profiles(output_dir)
    with_summary = [p for p in profiles if p.has("Summary")]
    reads, versions, sources = [], set(), set()
    for profile in with_summary:
        units = read_units(profile)
        sources.add("SchemaFields" if units else "documented 7.4.0")
        versions.add(schema_version(profile) or "unknown")
        reads.append(convert_summary(profile.read("Summary"), units))
    cols = dict(
        combine(reads),
        neuron_profile_schema_version=",".join(sorted(versions)) or None,
        neuron_units_source=",".join(sorted(sources)) or None,
    )
    warnings, account = summary_notes(reads)
    if unknown := sorted(v for v in versions if major(v) not in KNOWN_MAJORS):
        warnings.append(
            f"profile schema {', '.join(unknown)} is not one neuronexp was written against (7.x, 12.x): "
            "fields are read by name and units from SchemaFields; missing ones stay NaN"
        )
    cols.update(insights(profiles, cols))
    ops = breakdown(profiles)
    files = [str(p.relative_to(output_dir)) for prof in with_summary for p in prof.files["Summary"]]
    schema = dict(account, versions=sorted(versions), units_source=sorted(sources))
    return cols, warnings + ops.notes + _table_warnings(profiles), schema, ops, files


def _run(cmd: list[str], timeout_s: float) -> tuple[int | None, str]:
    """The tool's exit status and output; None past `timeout_s`. It runs in a process group of its own, and the whole
    group is killed on a timeout: the tool's own children (a server, a worker) must not outlive the cell."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()  # reaped; a grandchild holding the pipes open is gone with its group
        return None, ""
    return proc.returncode, (out or "") + "\n" + (err or "")


def process_capture(
    capture_dir: Path | None,
    output_dir: Path,
    enabled: bool,
    timeout_s: float,
    filters: list[str] | None = None,
    fallback_dir: Path | None = None,
) -> ExplorerResult:
    """Run `neuron-explorer view` into `output_dir` and read its tables (never raises on tool failure)."""
    empty = empty_columns()
    if not enabled:
        return ExplorerResult("disabled", empty)
    if capture_dir is None:
        return ExplorerResult("no_capture", empty)
    exe = find_explorer()
    if exe is None:
        return ExplorerResult(
            "not_found",
            empty,
            [
                "neuron-explorer is not on PATH: the neuron_* Summary columns are empty (install aws-neuronx-tools, "
                "or export PATH=/opt/aws/neuron/bin:$PATH)"
            ],
        )
    plans = [(capture_dir, filters or [])] + ([(capture_dir, [])] if filters else [])
    plans += [(fallback_dir, [])] if fallback_dir is not None and fallback_dir != capture_dir else []
    result = ExplorerResult("failed", dict(empty))
    failures: list[str] = []
    for i, (target, flags) in enumerate(plans):
        out = output_dir if i == 0 else output_dir.with_name(f"{output_dir.name}_retry{i}")
        out.mkdir(parents=True, exist_ok=True)
        cmd = explorer_command(exe, target, out, flags)
        code, text = _run(cmd, timeout_s)
        result.command = cmd
        result.attempts.append({"command": cmd, "returncode": code})
        if code is None:
            result.status = "timeout"
            result.warnings.append(
                f"neuron-explorer view ran past {timeout_s:g} s (profiler.neuron.explorer_timeout_s); "
                "Summary columns are empty"
            )
            return result
        dropped = dropped_events(text)
        result.columns["neuron_dropped_events"] = float(dropped)
        if code == 0:
            if failures:
                result.warnings.append(f"{failures[0]}; processed on attempt {i + 1}: {' '.join(cmd[1:4] + flags)}")
            return _finish(result, out, dropped)
        last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
        failures.append(f"neuron-explorer view exited with {code}: {last[:200]}")
    result.warnings += failures
    return result


def _finish(result: ExplorerResult, out: Path, dropped: int) -> ExplorerResult:
    if dropped:
        result.warnings.append(
            f"{dropped} trace events were dropped: raise profiler.neuron.max_events_per_nc "
            "(default 1,000,000), capture fewer NeuronCores, or profile fewer steps"
        )
    try:
        cols, warnings, schema, ops, files = read_output(out)
    except Exception as exc:  # a half-written or newer-format table must not cost the cell its row
        result.warnings.append(f"neuron-explorer output unreadable ({type(exc).__name__}: {str(exc)[:160]})")
        return result
    result.columns.update(cols)
    result.warnings += warnings
    result.schema, result.device_ops, result.summary_files = schema, ops, files
    profiles = find_profiles(out)
    result.has_framework_table = any(p.has("FrameworkInstruction") for p in profiles)
    result.runtime = read_trace(profiles)
    if not files:
        result.warnings.append("neuron-explorer wrote no Summary table (no device profile in the capture?)")
    result.status = "ok" if files else "no_summary"
    return result
