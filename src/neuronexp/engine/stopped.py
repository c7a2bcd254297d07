"""How an invocation's outcome reaches the exit status; its own module so the command line can name it without
importing the engine (and torch) on paths that never run a cell: --help, a one-line error."""

from __future__ import annotations

# neuronexp's exit statuses, one meaning each (docs/guarantees.md, "Exit status"); 0: every cell ran and results/ is
# written. A cell that failed is a result (its row says why); a run that could not finish is not: rerun it.
CELL_FAILED = 1  # every planned cell has its row, and one or more say status=error
MISTAKE = 2  # refused before anything ran: a bad value, a directory another run holds
UNFINISHED = 3  # stopped before every cell had its row or results/ was written (a full disk, a launcher that gave up)
INTERRUPTED = 130  # Ctrl-C: what finished is gathered; the same command resumes


class Stopped(BaseException):
    """The run or sweep ended with a non-zero exit status (the codes above). `message`, when set, is the one line to
    print. A BaseException: it must pass Hydra's job runner and callbacks, which catch every Exception and only
    warn."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or f"exit status {code}")
        self.code, self.message = code, message
