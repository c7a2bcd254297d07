"""Which invocation of neuronexp measured a row: `invocation_id` and `invocation_started_at` in every table.

Two runs of one configuration share a run_id by design (it is the configuration's hash); these tell them apart.
The invocation (a single run, or a whole sweep) begins in the process the user started and is handed to every
process that runs one of its cells (a forked cell, a parallel worker, a Slurm task) in the environment.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone

ENV = "NEURONEXP_INVOCATION"


def begin() -> tuple[str, str]:
    """Start a new invocation in this process (a run or a sweep), replacing any inherited one (a neuronexp started
    from inside another's cell is an invocation of its own); returns (id, started_at)."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    os.environ[ENV] = f"{uuid.uuid4().hex[:12]} {started}"
    return current()


def current() -> tuple[str, str]:
    """(invocation_id, invocation_started_at) of the invocation this process works for; begins one when none
    was handed down (a cell run from Python, not from the command line)."""
    value = os.environ.get(ENV, "").split(" ", 1)
    if len(value) != 2 or not value[0]:
        return begin()
    return value[0], value[1]


def columns() -> dict[str, str]:
    invocation_id, started = current()
    return {"invocation_id": invocation_id, "invocation_started_at": started}
