"""The device-unit grammar shared by every key that lists cores or devices: "0", "0,1", "0,1,2-5".

One implementation for the config checks, the launcher's slot planning and the Neuron backend.
"""

from __future__ import annotations

import re

from neuronexp.config.errors import ConfigError

_UNIT_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def parse_units(text: str) -> list[str]:
    """ "0-3,6" → ["0", "1", "2", "3", "6"]; anything else (GPU UUIDs) is split on commas."""
    units: list[str] = []
    for part in str(text).replace(" ", "").split(","):
        if m := re.fullmatch(r"(\d+)-(\d+)", part):
            units += [str(i) for i in range(int(m[1]), int(m[2]) + 1)]
        elif part:
            units.append(part)
    return units


def format_units(units: tuple[str, ...] | list[str] | list[int] | tuple[int, ...]) -> str:
    """Runs of consecutive integers as ranges: [0, 1, 2, 5] → "0-2,5"."""
    items = [str(u) for u in units]
    if not all(u.isdigit() for u in items):
        return ",".join(items)
    runs: list[list[int]] = []
    for n in map(int, items):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def validate_units(key: str, value: str | None) -> None:
    """A unit list is "0", "0,1" or "0,1,2-5" with ascending ranges (None: not set); ConfigError names `key`."""
    if value is None:
        return
    text = str(value).replace(" ", "")
    if not _UNIT_LIST.match(text):
        raise ConfigError(key, value, 'expected indices like "0", "0,1" or "0,1,2-5"')
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if hi and int(hi) < int(lo):
            raise ConfigError(key, value, f"range {part} runs backwards; write {hi}-{lo}")


def unit_set(text: str) -> set[int]:
    """The integer units a valid list names: "0-2,5" → {0, 1, 2, 5}."""
    return {int(u) for u in parse_units(text)}
