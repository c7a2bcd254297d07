"""What the command-line tools share: an argument type that refuses a bad value in the same words, a quiet end
when the reader stops reading (`neuronexp ... | head`), which is not an error, as with Unix tools, and an exit that
does not collect garbage the process is about to drop."""

from __future__ import annotations

import argparse
import atexit
import functools
import gc
import os
import sys
from collections.abc import Callable

# What a shell reports for a command stopped by a closed pipe (128 + SIGPIPE).
CLOSED_PIPE_STATUS = 141


def stdout_closed() -> int:
    """Point stdout at /dev/null, since Python flushes it again at exit and would fail a second time, and give
    the status to exit with."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return CLOSED_PIPE_STATUS


def no_collection_at_exit() -> None:
    """Have Python skip its garbage collections while it exits (gc.freeze as the last exit handler): 0.2 s of a
    command's end with Hydra and pandas loaded, spent on a heap the process is about to drop. What must be done at exit
    does not wait for them: files are written in `with` blocks, logging and weakref.finalize close theirs in their own
    exit handlers (a frozen object is still closed when called). Only garbage in reference cycles goes unfinalized, as
    Python allows."""
    atexit.unregister(gc.freeze)  # once, however many commands a process runs (the tests run them in-process)
    atexit.register(gc.freeze)


def quiet_on_closed_stdout(main: Callable[..., int]) -> Callable[..., int]:
    """Wrap a console script's main so that a closed stdout ends it quietly, and its exit is quick."""

    @functools.wraps(main)
    def wrapper(*args: object, **kwargs: object) -> int:
        no_collection_at_exit()
        try:
            return main(*args, **kwargs)
        except BrokenPipeError:
            return stdout_closed()

    return wrapper


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer >= 1")
    return value
