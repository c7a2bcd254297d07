"""One cell, as plain data: what the edges (cli, sweeper) build and validate once and every process after them
receives as is (the job, the fork server, the cell process, a Slurm task). No closure, no Hydra node: it pickles,
and the cell process builds the module from `config.module` itself (cell.build). The one exception, `memory`, is a
module from the Python caller's memory (neuronexp.sweep(modules=...)), whose cells run in the caller's process."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from neuronexp.config.schema import RunConfig


@dataclass(frozen=True)
class InMemory:
    """A cell's module and inputs from the caller's memory: used instead of `config.module` and `config.input`."""

    module: Any  # the nn.Module instance (cell.build works on a copy: the caller's stays as it was)
    inputs: tuple[Any, ...]  # its positional inputs
    name: str = ""  # the name the caller gave it: the cell's `module` label
    # The invocation it was handed to: its code has no fingerprint, so its run_id is new in every invocation.
    invocation: str = ""


@dataclass(frozen=True, kw_only=True)
class CellSpec:
    """A validated cell: its typed config (dataclasses of plain values; `module` a plain dict), its labels and,
    once its job directory is known, where it writes."""

    config: RunConfig
    run_id: str
    experiment: str
    module_name: str
    overrides: str = ""
    # For the cell's row: what validation found suspicious but not wrong (an input `forward` may ignore).
    warnings: tuple[str, ...] = ()
    out_dir: str = ""  # the job directory; "" until the job places the cell (CellSpec.placed)
    memory: InMemory | None = field(default=None, repr=False, compare=False)

    def placed(self, out_dir: str) -> CellSpec:
        """This cell, writing into `out_dir`."""
        return dataclasses.replace(self, out_dir=out_dir)
