"""The process exit code: jobs and the sweep callback note failed cells here, `cli.main` reads it.

Hydra's entry point returns nothing from a run or a sweep, so this small piece of process state is how
the outcome reaches the exit code.
"""

from __future__ import annotations

_failed = 0
_config_error = False


def reset() -> None:
    global _failed, _config_error
    _failed, _config_error = 0, False


def note_config_error() -> None:
    global _config_error
    _config_error = True


def note_failed_cells(count: int) -> None:
    global _failed
    _failed += count


def code() -> int:
    """2: a configuration error; 1: a cell failed; 0: every cell succeeded."""
    return 2 if _config_error else 1 if _failed else 0
