"""One writer per run or sweep directory: an exclusive `fcntl.flock` on `<dir>/.neuronexp.lock` for the whole
invocation, which the kernel drops when the holder dies (a killed run never leaves its directory locked). The
file is never deleted, since removing a lock file another process waits on would let two writers in, and it is
opened without following a link or blocking, so a planted link or FIFO is refused (docs/guarantees.md)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from neuronexp.config import ConfigError

LOCK_FILE = ".neuronexp.lock"
_THROUGH_ONE = "through one: remove it or choose another directory"


@contextmanager
def locked(directory: Path, key: str, kind: str | None = None) -> Iterator[None]:
    """Hold `directory`'s lock for the `with` block (creating the directory if needed). `kind` ("run" or "sweep"):
    first check that neuronexp may write there (sweep.ownership), and once the lock is held, mark the directory as
    that kind's. A ConfigError names `key`: another neuronexp holds it (named), the directory holds files neuronexp
    did not write or the other kind's results, or it cannot be created or written."""
    from neuronexp.engine.ownership import check_ours, mark

    if kind is not None:
        check_ours(directory, kind, key, ignore=(LOCK_FILE,))
    refused = partial(ConfigError, key, str(directory))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(
            directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644
        )
    except OSError as exc:  # read-only, full, not a directory, no permission, a link: before anything is written
        raise refused(f"cannot write there ({exc.strerror or exc}); {_why_not(directory / LOCK_FILE)}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise refused(f"{LOCK_FILE} there is not a regular file; neuronexp never locks {_THROUGH_ONE}")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise refused(
                f"another neuronexp is writing there ({_holder(fd)}); wait for it to finish, or choose another "
                "directory"
            ) from None
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(sys.argv)[:300],
        }
        os.pwrite(fd, json.dumps(info).encode(), 0)
        if kind is not None:
            mark(directory, kind)
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        return "a process that left no details"
    return f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')}: {info.get('command', '')}".strip()


def _why_not(path: Path) -> str:
    if path.is_symlink():
        return f"{LOCK_FILE} there is a symbolic link; neuronexp never locks {_THROUGH_ONE}"
    return "choose a writable directory"
