"""Which config keys are not what a cell measured: left out of its run_id and of its `overrides` label, so a cell
run elsewhere, compared with another cell or judged by other thresholds is still the same cell."""

from __future__ import annotations

from typing import Any

# A key, or a node with every key under it. analysis.overrides reads it too (the one edge from analysis to config).
NOT_MEASURED = (
    "launcher",  # where it runs (recorded in `placement`): the same run_id under any launcher
    "baseline",  # what it is compared with
    "sweep",  # how a sweep is carried out: whether to reuse cells, or to run at all
    "roofline",  # how the roofs are found: applied when results are read
    "noise",  # the thresholds judge what was measured; a sweep applies its own when it gathers the cells
    "correctness.rtol",
    "correctness.atol",  # the output check's tolerances, applied when results are read
    "correctness.float32_reference",  # adds a file beside the output, not a figure
)


def measured(key: str) -> bool:
    """Whether an override's key (`+`/`~` allowed) is part of what a cell measured."""
    key = key.lstrip("+~")
    return not any(key == k or key.startswith(k + ".") for k in NOT_MEASURED)


def drop_unmeasured(resolved: dict[str, Any]) -> None:
    """Remove the NOT_MEASURED keys from a resolved config, in place."""
    for key in NOT_MEASURED:
        *path, leaf = key.split(".")
        node: Any = resolved
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
