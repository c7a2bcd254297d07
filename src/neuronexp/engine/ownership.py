"""Whose directory this is: neuronexp writes only into a directory it may prove is its own, one that does not
exist, is empty, or holds its marker (`.neuronexp-dir.json`) of the same kind, run or sweep. File names prove
nothing; the marker's content does. Anything else is refused before any work (docs/guarantees.md)."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from functools import partial
from pathlib import Path

from neuronexp.config import ConfigError

log = logging.getLogger("neuronexp.engine")
DIR_MARKER = ".neuronexp-dir.json"
_WRITTEN_BY = "neuronexp"
_KINDS = {"run": ("hydra.run.dir", "a single run"), "sweep": ("hydra.sweep.dir", "a sweep")}


def marker_kind(directory: Path) -> str | None:
    """The kind ("run" or "sweep") an earlier neuronexp recorded in `directory`, or None when it holds no marker
    of neuronexp's (none, a link, unreadable, or someone else's content)."""
    path = directory / DIR_MARKER
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        info = json.loads(os.read(fd, 65536) or b"{}")
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(info, dict) or info.get("written_by") != _WRITTEN_BY or info.get("kind") not in _KINDS:
        return None
    return str(info["kind"])


def check_ours(directory: Path, kind: str, key: str, ignore: tuple[str, ...] = ()) -> None:
    """Refuse `directory` for a `kind` invocation unless neuronexp may write there (a ConfigError naming `key` and
    what it holds). `ignore`: names that prove nothing either way (the lock file, which a refused or concurrent
    invocation may have created)."""
    if not os.path.lexists(directory):
        return
    refused = partial(ConfigError, key, str(directory))
    if not directory.is_dir():
        raise refused("is not a directory; choose a new or empty directory")
    if kind == "sweep" and (directory / "results").is_symlink():
        raise refused(
            "its results/ is a symbolic link; neuronexp never writes through one: remove the link or choose another "
            "directory"
        )
    found = marker_kind(directory)
    if found == kind:
        return
    if found is not None:
        other_key, other = _KINDS[found]
        raise refused(
            f"holds the results of {other} ({other_key}); {_KINDS[kind][1]} there would mix the two: choose another "
            "directory"
        )
    try:
        names = sorted(p.name for p in directory.iterdir() if p.name not in ignore)
    except OSError as exc:
        raise refused(f"cannot be read ({exc.strerror or exc}); choose a readable directory") from None
    if names:
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        raise refused(
            f"holds files neuronexp did not write ({shown}); neuronexp writes only into a new or empty directory or "
            "one it wrote before, and never overwrites yours: choose another directory"
        )


def mark(directory: Path, kind: str) -> None:
    """Record that `directory` is a neuronexp `kind` directory (once; an existing marker is kept)."""
    if marker_kind(directory) == kind:
        return
    from neuronexp.results.files import write_json

    write_json(
        directory / DIR_MARKER,
        {"written_by": _WRITTEN_BY, "kind": kind, "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
    )


def check_run_dir(run_dir: Path, run_id: str) -> None:
    """Refuse a directory holding another cell's results; one whose cell ended without any (killed while it ran:
    out of memory, a signal) is this run's to use, and says so."""
    from neuronexp.results.files import owner, read_phase

    other = owner(run_dir)
    if other in (None, run_id) or (other != "unknown" and not (run_dir / "cells.parquet").exists()):
        if other is not None and not (run_dir / "cells.parquet").exists():
            phase = read_phase(run_dir)
            log.warning(
                "the last run into %s ended without a result%s (killed: out of memory, or a signal); running again",
                run_dir,
                f" during {phase}" if phase else "",
            )
        return
    raise ConfigError(
        "hydra.run.dir",
        str(run_dir),
        f"already holds the results of another cell (run_id {other}); neuronexp never overwrites them: "
        "choose another directory",
    )
