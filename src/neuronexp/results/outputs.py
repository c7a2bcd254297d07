"""A cell's output, kept in its job directory for the output check (`output.npz`): numpy only, no torch. Cells run
in separate processes, so outputs are compared from these files when results are gathered; what is kept and
why a sample suffices: docs/profile.md, "Output check" (the file's keys: write_outputs)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# The file names re-exported (redundant aliases): the readers of outputs find them here.
from neuronexp.results.files import FLOAT32_OUTPUT_FILE as FLOAT32_OUTPUT_FILE
from neuronexp.results.files import OUTPUT_FILE as OUTPUT_FILE
from neuronexp.results.files import atomic_path
from neuronexp.results.regular import read_regular

# Elements kept per output tensor: 1 MiB of float32. One per block of numel / SAMPLE_ELEMENTS positions: an error
# that spans a block (one row of a [1, 4096, 4096] output spans 64) is always seen; a single wrong element of a
# larger tensor may be missed (the whole-tensor stats still catch a NaN, an inf or a new largest value).
SAMPLE_ELEMENTS = 1 << 18
SAMPLE_SEED = 0
STATS = ("numel", "rms", "abs_max", "nan", "inf")


@dataclass
class OutputLeaf:
    shape: tuple[int, ...]
    values: np.ndarray
    index: np.ndarray  # empty: `values` is the whole tensor, flattened
    stats: dict[str, float]


def sample_index(numel: int) -> np.ndarray:
    """The flat positions kept of an output with `numel` elements (empty: keep all)."""
    if numel <= SAMPLE_ELEMENTS:
        return np.empty(0, dtype=np.int64)
    stride = numel // SAMPLE_ELEMENTS
    offsets = np.random.default_rng(SAMPLE_SEED).integers(0, stride, size=SAMPLE_ELEMENTS, dtype=np.int64)
    return np.arange(SAMPLE_ELEMENTS, dtype=np.int64) * stride + offsets


def write_outputs(path: Path, leaves: list[OutputLeaf]) -> None:
    """Per output tensor `i`, in the order the module returned them: `shape{i}`; `values{i}`, its elements as
    float32 (float64 for float64 outputs; complex as real pairs), all of them up to SAMPLE_ELEMENTS, else a sample;
    `index{i}`, the flat positions sampled, one drawn at random in each of SAMPLE_ELEMENTS equal blocks by a
    generator seeded from the element count alone, so outputs of one shape sample the same positions (empty when
    nothing was sampled); `stats{i}`: element count, root mean square, largest magnitude, NaN and inf counts."""
    arrays: dict[str, np.ndarray] = {}
    for i, leaf in enumerate(leaves):
        arrays[f"shape{i}"] = np.asarray(leaf.shape, dtype=np.int64)
        arrays[f"values{i}"] = leaf.values
        arrays[f"index{i}"] = leaf.index
        arrays[f"stats{i}"] = np.asarray([leaf.stats[k] for k in STATS], dtype=np.float64)
    with atomic_path(path, "data") as tmp, open(tmp, "wb") as f:  # its rename synced with the job's tables
        np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy types **kwds as if one could be allow_pickle


def read_outputs(path: Path) -> list[OutputLeaf]:
    """The output tensors a cell saved (OSError, ValueError, KeyError: no such file, or not one neuronexp wrote)."""
    with np.load(io.BytesIO(read_regular(path)), allow_pickle=False) as data:  # a link is refused (OSError)
        count = sum(1 for k in data.files if k.startswith("shape"))
        return [
            OutputLeaf(
                tuple(int(d) for d in data[f"shape{i}"]),
                data[f"values{i}"],
                data[f"index{i}"],
                dict(zip(STATS, map(float, data[f"stats{i}"]))),
            )
            for i in range(count)
        ]
