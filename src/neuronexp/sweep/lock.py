"""One writer per run or sweep directory: an exclusive lock held for the whole invocation.

The lock is `fcntl.flock` on `<dir>/.neuronexp.lock`; the kernel drops it when the holding process dies, so
a killed run never leaves its directory locked. The file says who holds it, for the refusal message. It is
never deleted (removing a lock file another process waits on would let two writers in).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from neuronexp.config import ConfigError

LOCK_FILE = ".neuronexp.lock"


@contextmanager
def locked(directory: Path, key: str) -> Iterator[None]:
    """Hold `directory`'s lock for the `with` block (creating the directory if needed).

    Raises:
        ConfigError: another neuronexp holds it (the message names that process), or the directory cannot be
            created or written; naming `key`.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # read-only, full, not a directory, no permission: before anything is written
        raise ConfigError(key, str(directory), f"cannot write there ({exc.strerror or exc}); "
                          "choose a writable directory") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(key, str(directory), f"another neuronexp is writing there ({_holder(fd)}); "
                              "wait for it to finish, or choose another directory") from None
        os.ftruncate(fd, 0)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S"),
                "command": " ".join(sys.argv)[:300]}
        os.pwrite(fd, json.dumps(info).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        return "a process that left no details"
    return f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')}: {info.get('command', '')}".strip()
