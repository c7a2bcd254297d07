"""A cell's job log (`neuronexp.log` in its directory): what the process running the cell logs while it runs, and a
failing cell's whole traceback, which goes there only (its row and the terminal keep the one-line error)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

JOB_LOG = "neuronexp.log"
TRACEBACK_LOGGER = "neuronexp.cell.traceback"
_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


@contextmanager
def job_log(dirs: list[Path]) -> Iterator[None]:
    """For the `with` block: this process's log records (INFO and up) also in each directory's job log; tracebacks
    only there."""
    root, traceback = logging.getLogger(), logging.getLogger(TRACEBACK_LOGGER)
    handlers = [logging.FileHandler(d / JOB_LOG) for d in dirs]
    for handler in handlers:
        handler.setFormatter(logging.Formatter(_FORMAT))
        root.addHandler(handler)
        traceback.addHandler(handler)
    saved = root.level, traceback.propagate
    root.setLevel(min(root.level or logging.INFO, logging.INFO))
    traceback.propagate = False
    try:
        yield
    finally:
        root.setLevel(saved[0])
        traceback.propagate = saved[1]
        for handler in handlers:
            root.removeHandler(handler)
            traceback.removeHandler(handler)
            handler.close()
