"""How an invocation's outcome reaches the exit status; its own module so the command line can name it without
importing the engine (and torch) on paths that never run a cell: --help, a one-line error."""

from __future__ import annotations


class Stopped(BaseException):
    """The run or sweep ended with a non-zero exit status: refused before it started (2), cells failed (1), the
    launcher gave up (1), or it was interrupted (130). `message`, when set, is the one line to print. A
    BaseException: it must pass Hydra's job runner and callbacks, which catch every Exception and only warn."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or f"exit status {code}")
        self.code, self.message = code, message
