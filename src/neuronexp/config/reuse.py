"""The `sweep` node: how a run or sweep is carried out and treats the cells already in its directory. Not part of a
cell's run_id (config.compose): whether to reuse a cell, or to run at all, says nothing about what it measures."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RerunMode(str, Enum):
    failed = "failed"  # rerun the failed, interrupted and missing cells; reuse a complete one of the same run_id
    all = "all"  # rerun every cell (e.g. after a change the code fingerprint, config.fingerprint, cannot see)


@dataclass
class SweepConfig:
    rerun: RerunMode = RerunMode.failed
    # true: plan and check every cell, print each one's label, run_id and whether it is cached, and an estimate of
    # the time; run nothing, write nothing (neuronexp.engine.dryrun). A single run prints its one cell.
    dry_run: bool = False
