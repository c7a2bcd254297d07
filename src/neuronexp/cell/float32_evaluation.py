"""A 16-bit cell's module evaluated once more in float32, on the CPU, with the same parameters and inputs widened
exactly: what the output check judges accuracy against, since two correct 16-bit implementations can differ by
more than a few roundings and the difference alone cannot say which is right (docs/methodology.md, "Output check")."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from neuronexp.cell.output import save_output
from neuronexp.results.files import FLOAT32_OUTPUT_FILE

LOW_PRECISION = (torch.bfloat16, torch.float16)


def _widen(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.detach().to("cpu")
        return value.float() if value.dtype in LOW_PRECISION else value
    return value


def save_float32_output(
    module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out_dir: Path
) -> str | None:
    """Write `output_fp32.npz` when the cell computes in 16 bits; a note when it could not, else None.

    The eager module is copied (a compiled cell's too: the float32 evaluation is of the function, not of the
    kernel), its 16-bit parameters and buffers widened, and called under the cell's grad mode.
    """
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
