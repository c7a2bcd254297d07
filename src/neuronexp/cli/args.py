"""Argument types the command-line tools share (argparse), so each refuses a bad value in the same words."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be an integer >= 1")
    return value
