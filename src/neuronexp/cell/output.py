"""The cell's output, saved for the output check (results.outputs describes the file and the sample)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from neuronexp.results.outputs import OUTPUT_FILE, OutputLeaf, sample_index, write_outputs


def _stats(flat: torch.Tensor, wide: torch.dtype) -> dict[str, float]:
    """Whole-tensor statistics, accumulated in `wide`: the check's scale and its NaN/inf counts. One pass each
    for the norm and the extremes; the counting passes only when one of those says something is not finite."""
    numel = float(flat.numel())
    low, high = (float(v) for v in torch.aminmax(flat)) if flat.numel() else (0.0, 0.0)
    rms = float(torch.linalg.vector_norm(flat, dtype=wide)) / math.sqrt(max(flat.numel(), 1))
    if math.isfinite(rms) and math.isfinite(low) and math.isfinite(high):
        return {"numel": numel, "rms": rms, "abs_max": max(-low, high), "nan": 0.0, "inf": 0.0}
    finite = flat[torch.isfinite(flat)]
    stats = _stats(finite, wide) if finite.numel() else {"rms": math.nan, "abs_max": math.nan}
    return {**stats, "numel": numel, "nan": float(torch.isnan(flat).sum()), "inf": float(torch.isinf(flat).sum())}


def output_leaves(out: Any) -> list[OutputLeaf]:
    """Every tensor the module returned (tuples, lists, dicts and model-output classes walked through), as
    the values and whole-tensor statistics the check compares."""
    leaves = []
    for tensor in (t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)):
        t = tensor.detach().to("cpu")
        if t.is_complex():
            t = torch.view_as_real(t)
        keep = torch.float64 if t.dtype == torch.float64 or not t.is_floating_point() else torch.float32
        flat = t.reshape(-1)
        index = sample_index(flat.numel())
        values = flat[torch.from_numpy(index)] if index.size else flat
        stats = _stats(flat if flat.is_floating_point() else flat.to(keep), keep)
        leaves.append(OutputLeaf(tuple(tensor.shape), values.to(keep).numpy().copy(), index, stats))
    return leaves


def save_output(out: Any, out_dir: Path, name: str = OUTPUT_FILE) -> int:
    """Write `output.npz` (or `name`); the number of output tensors saved."""
    leaves = output_leaves(out)
    write_outputs(out_dir / name, leaves)
    return len(leaves)
