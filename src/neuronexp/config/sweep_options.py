"""The `sweep.*` node: how a sweep is carried out, never what a cell measures (not part of any run_id)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SweepConfig:
    # true: plan and check every cell, print each one's label, run_id and whether it is cached, and an estimate of
    # the time; run nothing, write nothing (neuronexp.sweep.dryrun). A single run prints its one cell.
    dry_run: bool = False
