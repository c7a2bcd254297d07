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
# Device nanoseconds per call of each op, for FrameworkInstruction; "nki.custom_kernel" runs once per step and has
# no key_averages() row (an unmatched op).
DEVICE_NS = {
    "aten::mul": 30_000,
    "aten::mean": 12_000,
    "aten::add": 4_000,
    "aten::rsqrt": 6_000,
    "aten::_fused_rms_norm": 20_000,
}
UNMATCHED_NS = 1_000


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


def framework_rows(capture: Path) -> list[dict[str, Any]]:
    """One FrameworkInstruction row per op the capture's framework trace shows, laid out one after another."""
    rows, t = [], 0
    for trace in sorted(capture.rglob("trace.json")):
        events = json.loads(trace.read_text()).get("traceEvents", [])
        for e in sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e.get("ts", 0)):
            name = e.get("name", "")
            ns = (
                DEVICE_NS.get(name)
                if e.get("cat") == "cpu_op"
                else UNMATCHED_NS
                if name.startswith("ProfilerStep#")
                else None
            )
            if ns is None:
                continue
            op = name.replace("::", ".") if name in DEVICE_NS else "nki.custom_kernel"
            rows.append(
                {
                    "framework_name": f"model[0]/{op}",
                    "start_ts": t,
                    "end_ts": t + ns,
                    "time_intervals": json.dumps([[t, t + ns]]),
                    "hbm_read_bytes": 0,
                    "hbm_write_bytes": 0,
                }
            )
            t += ns + 500
    return rows


def other_tables(mode: str) -> dict[str, list[dict[str, Any]]]:
    """HloInstruction, OpcodeSummary, ThrottleSummary and (insights mode) Instruction rows."""
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
    if mode == "insights":
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
    return tables
