"""The cell's output, saved for the output check (results.outputs describes the file and the sample), and for a
16-bit cell its module evaluated once more in float32, on the CPU, with the same parameters and inputs widened
exactly: what the check judges accuracy against, since two correct 16-bit implementations can differ by more than a
few roundings and the difference alone cannot say which is right (docs/profile.md, "Output check")."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from neuronexp.results.files import FLOAT32_OUTPUT_FILE
from neuronexp.results.outputs import OUTPUT_FILE, OutputLeaf, sample_index, write_outputs

LOW_PRECISION = (torch.bfloat16, torch.float16)


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


def save_output(out: Any, out_dir: Path, name: str = OUTPUT_FILE) -> list[OutputLeaf]:
    """Write `output.npz` (or `name`); the output tensors saved."""
    leaves = output_leaves(out)
    write_outputs(out_dir / name, leaves)
    return leaves


def nonfinite(leaves: list[OutputLeaf]) -> int:
    """NaN and inf elements over every saved tensor (whole-tensor counts, not the sample's)."""
    return int(sum(leaf.stats["nan"] + leaf.stats["inf"] for leaf in leaves))


def _widen(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.detach().to("cpu")
        return value.float() if value.dtype in LOW_PRECISION else value
    return value


def save_float32_output(
    module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out_dir: Path
) -> str | None:
    """Write `output_fp32.npz` when the cell computes in 16 bits; a note when it could not, else None. The eager
    module is copied (a compiled cell's too: the float32 evaluation is of the function, not of the kernel), its
    16-bit parameters and buffers widened, and called under the cell's grad mode."""
    inputs = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
    if not any(t.dtype in LOW_PRECISION for t in [*module.parameters(), *module.buffers(), *inputs]):
        return None
    try:
        wide = copy.deepcopy(module).to("cpu")
        for tensor in [*wide.parameters(), *wide.buffers()]:
            if tensor.dtype in LOW_PRECISION:
                tensor.data = tensor.data.float()
        out = wide(*pytree.tree_map(_widen, args), **pytree.tree_map(_widen, kwargs))
        save_output(out, out_dir, FLOAT32_OUTPUT_FILE)
    except Exception as exc:  # a layer that insists on its dtype, or no memory for a copy: the check says so
        (out_dir / FLOAT32_OUTPUT_FILE).unlink(missing_ok=True)
        return f"no float32 evaluation: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None
