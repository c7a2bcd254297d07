"""STAND-IN Neuron Explorer output tables (tests only): what the fake `neuron-explorer view` writes.

Two schema fixtures. "7.4.0" follows the documented schema 7.4.0 (SDK 2.31/2.32) field for field: Summary times
in seconds, SchemaFields units as documented. "12.0.1" is HYPOTHETICAL: the real 12.0.1 field list could not
be read, so this fixture only exercises what neuronexp must cope with across MAJOR/PATCH bumps (a time field
in other units, a 0-1 "percent" field, a field removed, a field added), never what 12.0.1 actually contains.
The same physical figures are written in both, so the tests can expect one answer from either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

try:
    from planted import NEFF_NAMES  # run as the fake CLI: its folder is on the path
except ImportError:  # imported by a test as helpers.neuron_standin.fake_explorer_tables
    from helpers.neuron_standin.planted import NEFF_NAMES

CLOCK_BASE_NS = 1_767_225_600_000_000_000  # the stand-in runtime's clock (torch_neuronx/_runtime.py)

# One device profile's Summary row in neuronexp's units (us, 0-100 percent, bytes, counts).
SUMMARY_US = {
    "total_time": 403.0,
    "total_exec_time": 390.0,
    "total_active_time": 350.0,
    "total_active_time_percent": 86.8,
    "neuroncore_cycle_count": 483600,
    "model_flops": 0,
    "hardware_flops": 1048576,
    "transpose_flops": 0,
    "mfu_estimated_percent": 0.0,
    "hfu_estimated_percent": 1.5,
    "mbu_estimated_percent": 42.25,
    "mfu_max_achievable_estimated_percent": 3.5,
    "mbu_min_read_util_percent": 20.5,
    "mm_arithmetic_intensity": 0.5,
    "hbm_read_bytes": 8388608,
    "hbm_write_bytes": 8388608,
    "sbuf_read_bytes": 16777216,
    "sbuf_write_bytes": 16777216,
    "spill_save_bytes": 0,
    "spill_reload_bytes": 0,
    "dma_active_time": 300.0,
    "dma_active_time_percent": 74.4,
    "dma_transfer_count": 256,
    "dma_transfer_total_bytes": 16777216,
    "dma_transfer_average_bytes": 65536.0,
    "matmul_instruction_count": 0,
    "vector_engine_active_time": 120.0,
    "vector_engine_active_time_percent": 29.8,
    "vector_engine_instruction_count": 96,
    "scalar_engine_active_time": 80.0,
    "scalar_engine_active_time_percent": 19.9,
    "scalar_engine_instruction_count": 32,
    # Fields outside neuronexp's list, as the real table has many more.
    "trace_count": 12345,
    "event_count": 678,
}
# FAKE_EXPLORER_MODE=insights: a matmul-heavy profile on which four Summary Viewer rules fire.
INSIGHTS_US = dict(
    SUMMARY_US,
    model_flops=1_000_000,
    hardware_flops=4_000_000,
    transpose_flops=800_000,
    mfu_estimated_percent=10.0,
    tensor_engine_active_time=200.0,
    tensor_engine_active_time_percent=50.0,
    hbm_read_bytes=1000,
    spill_reload_bytes=400,
)
TIME_FIELDS = {"total_time", "total_exec_time", "total_active_time", "dma_active_time"} | {
    f"{e}_engine_active_time" for e in ("tensor", "vector", "scalar", "gpsimd", "sync")
}


def _unit(name: str) -> str:
    if name in TIME_FIELDS:
        return "seconds"
    if name.endswith("_percent"):
        return "percent"
    if name.endswith("_bytes"):
        return "bytes"
    return "flops" if name.endswith("flops") else "cycles" if name.endswith("cycle_count") else ""


def summary_row(version: str, values: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Summary row as the given schema writes it, and its SchemaFields rows."""
    twelve = not version.startswith("7.")
    row, fields = {}, []
    for name, value in values.items():
        unit, maximum = _unit(name), 100.0 if name.endswith("_percent") else None
        if twelve and name == "mm_arithmetic_intensity":
            continue  # HYPOTHETICAL: a field removed in a MAJOR bump
        if name in TIME_FIELDS:
            value, unit = (int(value * 1000), "nanoseconds") if twelve else (value / 1e6, "seconds")
        if twelve and name == "mbu_estimated_percent":
            value, maximum = value / 100, 1.0  # HYPOTHETICAL: a "percent" field on a 0-1 scale
        row[name] = value
        fields.append({"table_name": "Summary", "field_name": name, "field_unit": unit, "field_maximum": maximum})
    if twelve:
        row["hypothetical_field_added_in_12x"] = 1.0
        fields.append(
            {
                "table_name": "Summary",
                "field_name": "hypothetical_field_added_in_12x",
                "field_unit": "",
                "field_maximum": None,
            }
        )
    return row, fields


def _json(path: Path) -> dict[str, Any]:
    """A stand-in capture file (JSON where the real runtime writes protobuf or NTFF); {} for anything else."""
    try:
        return dict(json.loads(path.read_bytes() or b"{}"))
    except (OSError, ValueError, TypeError):
        return {}


def _sessions(capture: Path) -> list[Path]:
    return sorted({p.parent for p in capture.rglob("*") if p.suffix in (".pb", ".ntff")})


def framework_rows(capture: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """FrameworkInstruction rows from the device profile (the NTFF's executions) named by each NEFF's debug info
    (planted.NEFF_NAMES: some NEFFs carry no name), and Warning rows for executions whose NEFF is not in the capture."""
    rows, warnings = [], []
    for session in _sessions(capture):
        for ntff in sorted(session.glob("*.ntff")):
            for run in _json(ntff).get("executions", []):
                if not (session / f"neff_{run['neff']}_vnc_0.neff").is_file():
                    warnings.append({"message": f"NEFF {run['neff']} not found", "category": "Missing Data"})
                    continue
                start, end = run["start_ns"] - CLOCK_BASE_NS, run["end_ns"] - CLOCK_BASE_NS  # the device clock
                rows.append(
                    {
                        "framework_name": NEFF_NAMES.get(run["neff"]),
                        "start_ts": start,
                        "end_ts": end,
                        "time_intervals": json.dumps([[start, end]]),
                        "hbm_read_bytes": 0,
                        "hbm_write_bytes": 0,
                    }
                )
    return rows, list({w["message"]: w for w in warnings}.values())


def system_rows(capture: Path) -> list[dict[str, Any]]:
    """SystemProfileEvents (schema 7.4.0 fields): the runtime's nc_exec_running (neuron_hw) and nrt_execute (neuron_rt)
    per execution, and the framework trace's events placed on the system trace's clock (ProfilerStep#N on step N)."""
    rows: list[dict[str, Any]] = []
    for session in _sessions(capture):
        trace = _json(session / "ntrace.pb")
        spans = {s["step"]: (s["start_ns"], s["end_ns"]) for s in trace.get("steps", [])}
        for i, run in enumerate(trace.get("executions", [])):
            extra = json.dumps({"model_id": run["neff"], "model_name": f"neff_{run['neff']}"})
            flow = run.get("flow", str(i))  # the stand-in runtime's flow id (switches.flow_ids): None is absent
            rows.append(_event("nrt_execute", run["start_ns"] - 300, run["start_ns"] - 100, "neuron_rt", flow, extra))
            rows.append(_event("nc_exec_running", run["start_ns"], run["end_ns"], "neuron_hw", flow, extra))
        framework = _json(session / "trace.json").get("traceEvents", [])
        for e in framework:
            name = str(e.get("name", ""))
            step = int(name.split("#")[1]) if name.startswith("ProfilerStep#") else None
            if e.get("ph") == "X" and step in spans:
                rows.append(_event(name, *spans[step], "framework", None, None))
    return rows


def _event(name: str, start: int, end: int, source: str, flow: str | None, extra: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "start_ts": start,
        "end_ts": end,
        "duration_ns": end - start,
        "trace_event_source": source,
        "instance_id": "i-0standin00000000",
        "process_id": 1,
        "thread_id": 1,
        "nc_idx": 0 if source == "neuron_hw" else None,
        "flow_id": [str(flow)] if flow is not None else None,
        "extra_attributes_json": extra,
    }


def other_tables(mode: str) -> dict[str, list[dict[str, Any]]]:
    """HloInstruction, OpcodeSummary, ThrottleSummary; in the insights modes Instruction, ActiveTime and Throttle rows
    (insights: throttled while the tensor engine worked and while it idled; insights_idle_throttle: only idle)."""
    tables: dict[str, list[dict[str, Any]]] = {
        "HloInstruction": [
            {"hlo_name": "multiply.1", "start_ts": 0, "end_ts": 9000, "time_intervals": "[[0, 4000], [5000, 9000]]"},
            {"hlo_name": "multiply.2", "start_ts": 10000, "end_ts": 12000, "time_intervals": "[[10000, 12000]]"},
            {"hlo_name": "reduce.3", "start_ts": 20000, "end_ts": 23000, "time_intervals": "[[20000, 23000]]"},
        ],
        "OpcodeSummary": [
            {
                "engine": "vector",
                "opcode": "TENSOR_TENSOR",
                "instruction_count": 64,
                "instruction_time_ns": 90000,
                "active_time_ns": 80000,
                "active_time_percent": 19.9,
            },
            {
                "engine": "scalar",
                "opcode": "ACTIVATE",
                "instruction_count": 32,
                "instruction_time_ns": 50000,
                "active_time_ns": 40000,
                "active_time_percent": 9.9,
            },
        ],
        "ThrottleSummary": [
            {
                "nc_idx": 0,
                "throttle_type": "all",
                "throttle_active_time_ns": 0,
                "throttle_active_time_percent": 0.0,
                "max_achievable_util_with_throttling_percent": 1.0,
            }
        ],
    }
    if mode.startswith("insights"):
        tables["ThrottleSummary"][0].update(
            throttle_active_time_ns=40_000,
            throttle_active_time_percent=9.9,
            max_achievable_util_with_throttling_percent=0.8,
        )
        # Tensor engine: 1 of 4 instructions from NKI source (25% coverage); vector: all NKI.
        tables["Instruction"] = [
            {"engine": "tensor", "opcode": "MATMUL", "nki_source_location": loc}
            for loc in ("kernel.py:42", None, None, None)
        ] + [{"engine": "vector", "opcode": "TENSOR_TENSOR", "nki_source_location": "kernel.py:50"}]
        # The tensor engine works 0-100 us and 200-300 us; throttled 120-170 us (idle) and 250-270 us (working).
        tables["ActiveTime"] = [
            {"start_ts": s, "end_ts": s + 100_000, "engine": "tensor", "pcore_idx": 0, "duration_ns": 100_000}
            for s in (0, 200_000)
        ] + [{"start_ts": 0, "end_ts": 300_000, "engine": "vector", "pcore_idx": 0, "duration_ns": 300_000}]
        throttles = [(120_000, 50_000, 1, 2)] + ([(250_000, 20_000, 3, 4)] if mode == "insights" else [])
        tables["Throttle"] = [
            {"timestamp": t, "duration": d, "k": k, "n": n, "type": "activity_0", "nc_idx": 0}
            for t, d, k, n in throttles
        ]
    return tables
