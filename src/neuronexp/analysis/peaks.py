"""The published peaks a cell is measured against: analysis/peaks.yaml (sources in docs/peaks.md), read here.

One row per device, chosen by what its backend says of it (the device's own name on CUDA, the instance type on Neuron:
Backend.peak_hint) among the rows of the backend's peaks key; the figure for the cell's dtype. A value the table leaves
null stays unknown: % of peak is then empty, never guessed."""

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


# A row's patterns (case-insensitive regexes, tried in file order, the first match wins) and the value of a
# backend's peak hint (Backend.peak_hint) each is searched in, with what to call that value in a message.
PATTERNS = {"match": ("device_name", "device"), "match_instance": ("instance_type", "instance type")}


def match_row(platform: str, hint: dict[str, Any]) -> dict[str, Any] | None:
    """The first row of `platform` (a backend's peaks key) that `hint` matches: one regex of each of the row's
    pattern lists is found in the hint's value for it (the CUDA device's name; the Neuron instance type,
    "trn2.48xlarge" or the driver's "Trn1"), the row's `scope` is the hint's (neuroncore: what one cell on
    neuron:N uses; chip), and so is its logical core config `lnc` where both give one."""
    for row in load_table():
        if row["platform"] != platform or row.get("scope") != hint.get("scope"):
            continue
        patterns = [(row[key], hint.get(field)) for key, (field, _) in PATTERNS.items() if key in row]
        if not patterns or not all(
            value and any(re.search(p, str(value).strip(), re.IGNORECASE) for p in pats) for pats, value in patterns
        ):
            continue
        if row.get("lnc") is not None and hint.get("lnc") is not None and row["lnc"] != hint["lnc"]:
            continue
        return row
    return None


def _hint_words(hint: dict[str, Any]) -> str:
    """What the hint names, for the message of a device no row matches."""
    for field, noun in PATTERNS.values():
        if field in hint:
            return f"{noun} {hint[field]!r}" if hint[field] else f"an unknown {noun}"
    return "this device"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def row_peak(row: dict[str, Any], dtype: str, tf32: bool = False) -> Peak:
    """The row's bandwidth and its dense FLOP/s for `dtype` (TF32's figure for float32 when `tf32`)."""
    flops = row.get("flops_tflops") or {}
    key = DTYPE_KEYS.get(dtype)
    if key == "fp32" and tf32:  # only a CUDA device's hint says tf32
        key = "tf32"
    tflops = _number(flops.get(key)) if key else None
    source = f"published: {row['name']} ({row['key']}, {row.get('confidence', '?')})"
    if row.get("unconfirmed"):
        source += f"; unconfirmed: {', '.join(map(str, row['unconfirmed']))}"
    return Peak(_number(row.get("memory_bandwidth_gbs")), tflops, source, row["key"])


def published_peak(platform: str, hint: dict[str, Any], dtype: str) -> Peak:
    """The table's roofs for a cell whose backend's rows are `platform` (its peaks key, BackendInfo.peaks_key);
    `hint` is what its backend knows about the device (Backend.peak_hint: device_name and tf32 on CUDA,
    instance_type, lnc and scope on Neuron). Unknown devices get None roofs and a source saying why."""
    if not any(row["platform"] == platform for row in load_table()):
        return Peak(None, None, f"no published peak for backend {platform}")
    row = match_row(platform, hint)
    if row is None:
        return Peak(
            None, None, f"no row of peaks.yaml matches {_hint_words(hint)}: set roofline.peak_bw_gbs / peak_tflops"
        )
    return row_peak(row, dtype, bool(hint.get("tf32")))


def given_peak(peak: Peak, bandwidth_gbs: float | None, tflops: float | None) -> Peak:
    """`peak` with the roofs the user set (roofline.peak_bw_gbs / peak_tflops) in place of its own."""
    if bandwidth_gbs is None and tflops is None:
        return peak
    given = [k for k, v in (("roofline.peak_bw_gbs", bandwidth_gbs), ("roofline.peak_tflops", tflops)) if v is not None]
    return Peak(
        bandwidth_gbs if bandwidth_gbs is not None else peak.bandwidth_gbs,
        tflops if tflops is not None else peak.tflops,
        f"given: {', '.join(given)}" + ("" if len(given) == 2 else f"; other roof {peak.source}"),
        peak.key,
    )
