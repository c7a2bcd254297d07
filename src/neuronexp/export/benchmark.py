"""The PyTorch OSS benchmark database's JSON records: one per cell and metric, in the shape PyTorch's own benchmark
scripts write (`output_json` in benchmarks/gpt_fast/benchmark.py), so the dashboards that read that format
(PyTorch's HUD, vLLM's, TorchAO's) read neuronexp's cells. The mapping: docs/columns.md; the file's rules (finite
figures only; a file it did not write never replaced, never written through a link): docs/export.md."""

from __future__ import annotations

import json
import math
import os
import secrets
from pathlib import Path
from typing import Any

import pandas as pd

from neuronexp.export.cells import UNITS, CellExport, ExportError, cell_exports
from neuronexp.results import read_regular

BENCHMARK_NAME = "neuronexp"
# The format's `model.type` for a single layer rather than a whole model (gpt-fast's own word for its layers).
MODEL_TYPE = "micro-benchmark"


def _extra_info(cell: CellExport) -> dict[str, Any]:
    """Everything that tells two records of the same metric apart: labels, the overrides as typed, the tags; and
    `arch`, the hardware as PyTorch's own benchmark scripts name it there (their get_arch_name: the device's name)."""
    info: dict[str, Any] = {**cell.labels, **{f"override.{k}": v for k, v in cell.overrides.items()}}
    info.update({k.removeprefix("neuronexp."): v for k, v in cell.tags.items()})
    info["arch"] = cell.tags.get("neuronexp.device_name", "")
    return info


def model_backend(cell: CellExport) -> str:
    """The format's `model.backend`, how the model ran: `eager`, or the torch.compile backend of a compiled cell
    (`inductor`, `neuron`; `torch.compile` for a cell from before neuronexp recorded which)."""
    if cell.labels.get("compiled") != "true":
        return "eager"
    return cell.tags.get("neuronexp.compile_backend", "torch.compile")


def _record(cell: CellExport, metric: str, value: float) -> dict[str, Any]:
    return {
        "benchmark": {
            "name": BENCHMARK_NAME,
            "mode": "inference",  # neuronexp times forward passes only
            "dtype": cell.labels.get("dtype", ""),
            "extra_info": _extra_info(cell),
        },
        "model": {"name": cell.name, "type": MODEL_TYPE, "backend": model_backend(cell), "origins": [BENCHMARK_NAME]},
        "metric": {
            "name": metric,
            "benchmark_values": [value],
            "target_value": None,  # neuronexp sets no target; a baseline's figure is its own record
            "extra_info": {"unit": UNITS[metric]},
        },
    }


def records(cells: pd.DataFrame) -> tuple[list[dict[str, Any]], list[str]]:
    """One record per cell and finite figure (a failed cell has none, so no records), and the figures left out
    because they are not finite ("speedup_vs_baseline of <cell> (-inf)"): JSON has no inf or NaN, and a reader of
    the format gets a number in `benchmark_values` or no record, never text in its place."""
    out, left_out = [], []
    for cell in cell_exports(cells):
        for metric, value in cell.metrics.items():
            if math.isfinite(value):
                out.append(_record(cell, metric, value))
            else:
                left_out.append(f"{metric} of {cell.name} ({value})")
    return out, left_out


def _ours(data: bytes) -> bool:
    """A file neuronexp wrote: a JSON list of records each named and originating `neuronexp` ([] included)."""
    try:
        recs = json.loads(data)
    except ValueError:
        return False
    return isinstance(recs, list) and all(
        isinstance(r, dict)
        and isinstance(r.get("benchmark"), dict)
        and r["benchmark"].get("name") == BENCHMARK_NAME
        and isinstance(r.get("model"), dict)
        and r["model"].get("origins") == [BENCHMARK_NAME]
        for r in recs
    )


def check_target(path: Path) -> None:
    """Refuse, in one line, a FILE neuronexp may not replace: a link, not a regular file, or one it did not write.

    Raises:
        ExportError: the reason, naming the flag and the file.
    """
    if os.path.islink(path):
        raise ExportError(f"--pytorch-benchmark {path}: a symbolic link; neuronexp writes no file through a link")
    if not os.path.lexists(path):
        return
    try:
        data = read_regular(path)
    except OSError as exc:
        raise ExportError(f"--pytorch-benchmark {path}: cannot be replaced ({exc.strerror or exc})") from None
    if not _ours(data):
        raise ExportError(
            f"--pytorch-benchmark {path}: exists and is not a benchmark file neuronexp wrote; neuronexp replaces "
            "only its own files: give a new name, or move that file away"
        )


def _replace(path: Path, text: str) -> None:
    """`path` replaced atomically by `text`, staged in a file created new next to it (never one that was there)."""
    staged = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    # O_EXCL: created here, so a link or a file planted under the name fails the write instead of receiving it.
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(staged, path)
    finally:
        if os.path.lexists(staged):
            os.unlink(staged)


def write_benchmark_json(cells: pd.DataFrame, path: Path) -> tuple[int, list[str]]:
    """Write the records as one JSON list, replacing `path` atomically only if neuronexp wrote it (check_target);
    how many were written, and the non-finite figures left out."""
    recs, left_out = records(cells)
    check_target(path)
    _replace(path, json.dumps(recs, indent=1, allow_nan=False) + "\n")
    return len(recs), left_out
