"""What the command-line tools share: an argument type that refuses a bad value in the same words, and a quiet end
when the reader stops reading (`neuronexp ... | head`), which is not an error, as with Unix tools."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable

from neuronexp.version import __version__

# What a shell reports for a command stopped by a closed pipe (128 + SIGPIPE).
CLOSED_PIPE_STATUS = 141


def stdout_closed() -> int:
    """Point stdout at /dev/null, since Python flushes it again at exit and would fail a second time, and give
    the status to exit with."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return CLOSED_PIPE_STATUS


def quiet_on_closed_stdout(main: Callable[..., int]) -> Callable[..., int]:
    """Wrap a console script's main so that a closed stdout ends it quietly."""

    @functools.wraps(main)
    def wrapper(*args: object, **kwargs: object) -> int:
        try:
            return main(*args, **kwargs)
        except BrokenPipeError:
            return stdout_closed()

    return wrapper


def add_version(parser: argparse.ArgumentParser) -> None:
    """`--version`: the command's name and neuronexp's one version (neuronexp/version.py)."""
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer >= 1")
    return value
