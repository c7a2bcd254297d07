"""The cell's output, saved for the output check (results.outputs describes the file and the sample)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from neuronexp.results.outputs import OUTPUT_FILE, OutputLeaf, sample_index, write_outputs


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
        wide = flat.to(torch.float64)
        finite = wide[torch.isfinite(wide)]
        stats = {
            "numel": float(flat.numel()),
            "rms": float(finite.pow(2).mean().sqrt()) if finite.numel() else float("nan"),
            "abs_max": float(finite.abs().max()) if finite.numel() else float("nan"),
            "nan": float(torch.isnan(wide).sum()),
            "inf": float(torch.isinf(wide).sum()),
        }
        leaves.append(OutputLeaf(tuple(tensor.shape), values.to(keep).numpy().copy(), index, stats))
    return leaves


def save_output(out: Any, out_dir: Path) -> int:
    """Write `output.npz`; the number of output tensors saved."""
    leaves = output_leaves(out)
    write_outputs(out_dir / OUTPUT_FILE, leaves)
    return len(leaves)
