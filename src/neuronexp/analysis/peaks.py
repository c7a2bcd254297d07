"""The published peaks a cell is measured against: analysis/peaks.yaml (sources in docs/peaks.md), read here.

One row per device, chosen by the device's own name (CUDA) or its instance type (Neuron); the figure for the
cell's dtype. A value the table leaves null stays unknown: % of peak is then empty, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

# The table's dtype keys for the dtypes a cell runs in (int and bool inputs have no FLOP peak).
DTYPE_KEYS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}


@dataclass(frozen=True)
class Peak:
    """The roofs of one cell: bandwidth (GB/s, 1 GB = 1e9 B) and dense FLOP/s (TFLOP/s) in its dtype, None when
    unknown, and where they come from in words (`source`, for the row's `peak_source`)."""

    bandwidth_gbs: float | None
    tflops: float | None
    source: str
    key: str | None = None  # the table row, None when measured or given


@lru_cache(maxsize=1)
def load_table() -> tuple[dict[str, Any], ...]:
    """Every device row of peaks.yaml, in file order (the order matching relies on)."""
    text = resources.files("neuronexp.analysis").joinpath("peaks.yaml").read_text(encoding="utf-8")
    return tuple(yaml.safe_load(text)["devices"])


def device_row(key: str) -> dict[str, Any]:
    for row in load_table():
        if row["key"] == key:
            return row
    raise KeyError(key)


def match_cuda(device_name: str) -> dict[str, Any] | None:
    """The first CUDA row one of whose `match` regexes is found in torch.cuda.get_device_name()."""
    for row in load_table():
        if row["platform"] == "cuda" and any(re.search(p, device_name, re.IGNORECASE) for p in row.get("match", [])):
            return row
    return None


def match_neuron(instance_type: str, lnc: int | None, scope: str = "neuroncore") -> dict[str, Any] | None:
    """The Neuron row for an instance type ("trn2.48xlarge", or the driver's "Trn1"), at `scope` (neuroncore:
    what one cell on neuron:N uses; chip) and, for neuroncore rows that have one, logical core config `lnc`."""
    for row in load_table():
        if row["platform"] != "neuron" or row.get("scope") != scope:
            continue
        if not any(re.search(p, instance_type.strip(), re.IGNORECASE) for p in row.get("match_instance", [])):
            continue
        if scope == "neuroncore" and row.get("lnc") is not None and lnc is not None and row["lnc"] != lnc:
            continue
        return row
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def row_peak(row: dict[str, Any], dtype: str, tf32: bool = False) -> Peak:
    """The row's bandwidth and its dense FLOP/s for `dtype` (TF32's figure for float32 when `tf32`)."""
    flops = row.get("flops_tflops") or {}
    key = DTYPE_KEYS.get(dtype)
    if key == "fp32" and tf32 and row["platform"] == "cuda":
        key = "tf32"
    tflops = _number(flops.get(key)) if key else None
    source = f"published: {row['name']} ({row['key']}, {row.get('confidence', '?')})"
    if row.get("unconfirmed"):
        source += f"; unconfirmed: {', '.join(map(str, row['unconfirmed']))}"
    return Peak(_number(row.get("memory_bandwidth_gbs")), tflops, source, row["key"])


def published_peak(backend: str, hint: dict[str, Any], dtype: str) -> Peak:
    """The table's roofs for a CUDA or Neuron cell; `hint` is what its backend knows about the device
    (Backend.peak_hint: device_name and tf32 on CUDA, instance_type and lnc on Neuron). Unknown devices get
    None roofs and a source saying why."""
    if backend == "cuda":
        row = match_cuda(str(hint.get("device_name", "")))
        what = f"device {hint.get('device_name')!r}"
    elif backend == "neuron":
        instance = hint.get("instance_type")
        row = match_neuron(str(instance), hint.get("lnc")) if instance else None
        what = f"instance type {instance!r}" if instance else "an unknown instance type"
    else:
        return Peak(None, None, f"no published peak for backend {backend}")
    if row is None:
        return Peak(None, None, f"no row of peaks.yaml matches {what}: set roofline.peak_bw_gbs / peak_tflops")
    return row_peak(row, dtype, bool(hint.get("tf32")))


def given_peak(peak: Peak, bandwidth_gbs: float | None, tflops: float | None) -> Peak:
    """`peak` with the roofs the user set (roofline.peak_bw_gbs / peak_tflops) in place of its own."""
    if bandwidth_gbs is None and tflops is None:
        return peak
    given = [k for k, v in (("roofline.peak_bw_gbs", bandwidth_gbs), ("roofline.peak_tflops", tflops)) if v is not None]
    return Peak(bandwidth_gbs if bandwidth_gbs is not None else peak.bandwidth_gbs,
                tflops if tflops is not None else peak.tflops,
                f"given: {', '.join(given)}" + ("" if len(given) == 2 else f"; other roof {peak.source}"), peak.key)
