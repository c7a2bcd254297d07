"""A stand-in for whatever runs a sweep's cells (a Hydra launcher, a cluster): it writes each job's row into its job
directory as a cell process would (tests/engine/test_exit_status.py, test_user_callbacks.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from neuronexp.results import arrow_table
from neuronexp.results.files import write_job_tables


class RowWriter:
    """Writes each launched job's row into its job directory (`hydra.sweep.subdir=...`); `fail` names the run_ids
    whose row is an error row."""

    def __init__(self, sweep_dir: Path, cells: list[Any], fail: set[str]) -> None:
        self.sweep_dir, self.by_dir, self.fail = sweep_dir, {c.dir: c for c in cells}, fail

    def launch(self, jobs: list[list[str]], initial_job_idx: int) -> list[None]:
        for job in jobs:
            subdir = next(
                re.fullmatch(r"hydra\.sweep\.subdir='(.*)'", o).group(1)
                for o in job
                if o.startswith("hydra.sweep.subdir=")
            )
            cell = self.by_dir[subdir]
            failed = cell.run_id in self.fail
            row = {
                "run_id": cell.run_id,
                "experiment": "adhoc",
                "module": cell.label,
                "compiled": False,
                "backend": "cpu",
                "device": "cpu",
                "dtype": "float32",
                "input_shape": "[1,8]",
                "overrides": f"module={cell.label}",
                "status": "error" if failed else "ok",
                "error": "RuntimeError: boom" if failed else None,
                "latency_median_us": None if failed else 10.0,
            }
            (self.sweep_dir / subdir).mkdir(parents=True, exist_ok=True)
            write_job_tables(
                self.sweep_dir / subdir,
                {
                    "cells": arrow_table("cells", [row]),
                    "ops": arrow_table("ops", []),
                    "samples": arrow_table("samples", []),
                },
            )
        return [None] * len(jobs)
