"""What the edges (cli, sweeper) hand to the core for one cell: a typed config plus its labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from neuronexp.config.schema import RunConfig


@dataclass
class CellSpec:
    """What the edges (cli, sweeper) hand to the core: a typed config plus the cell's labels."""

    config: RunConfig
    build_module: Callable[[], Any]
    run_id: str
    experiment: str
    module_name: str
    overrides: str = ""
    # For the cell's row: what validation found suspicious but not wrong (an input `forward` may ignore).
    warnings: list[str] = field(default_factory=list)
