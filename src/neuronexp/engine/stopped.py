"""How a sweep's outcome reaches the exit status; its own module so the command line can name it without
importing the sweep (and torch) on paths that never sweep: --help, a one-line error."""

from __future__ import annotations


class SweepStopped(Exception):
    """The sweep ended with a non-zero exit status: cells failed (1), the launcher gave up (1), or it was
    interrupted (130). `message`, when set, is the one line to print."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or f"exit status {code}")
        self.code, self.message = code, message
