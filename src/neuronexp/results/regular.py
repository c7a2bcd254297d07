"""The readers' one way into a results directory: regular files only, never through a symbolic link, never blocking.

A results directory may come from someone else: a link planted under a file's name would make a reader show or upload
any file the user can read, and a FIFO would hang it. Every reader (load, report, compare, export) opens files here.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(OSError):
    """A file (or a directory on the way to it) of a results directory that is a symbolic link."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            errno.ELOOP,
            "a symbolic link; neuronexp reads no file of a results directory through a link (it could point at "
            "any file of yours): replace it with the file itself",
            str(path),
        )

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _opened(name: str, flags: int, dir_fd: int, shown: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        if os.path.islink(shown):
            raise LinkRefused(shown) from None
        raise


def _open_fd(path: Path, root: Path | None) -> int:
    """A descriptor of `path`, opened one component at a time from `root` (default: its own directory), none of
    them followed if it is a link; `root` itself is the directory the user named, and may be one."""
    try:
        parts = path.relative_to(root).parts if root is not None else ()
    except ValueError:
        parts = ()
    if not parts:
        root, parts = path.parent, (path.name,)
    if ".." in parts:  # a name from a table or a manifest that climbs out of the directory
        raise OSError(errno.EINVAL, "outside the results directory it was read from", str(path))
    assert root is not None  # for mypy: set above whenever parts came out empty
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts[:-1]):
            inner = _opened(part, _DIR, fd, root.joinpath(*parts[: i + 1]))
            os.close(fd)
            fd = inner
        return _opened(parts[-1], _FILE, fd, path)
    finally:
        os.close(fd)


def _regular(fd: int, path: Path | str) -> BinaryIO:
    """`fd` as a file to read, if it is a regular file (a FIFO, a device, a directory: OSError, `fd` closed)."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def open_regular(path: Path, root: Path | None = None) -> Iterator[BinaryIO]:
    """`path` open for reading, if it is a regular file reached from `root` without following a link (LinkRefused:
    `path`, or a directory between `root` and it, is a symbolic link; OSError: no such file, or not a regular one)."""
    with _regular(_open_fd(Path(path), Path(root) if root is not None else None), path) as f:
        yield f


def read_regular(path: Path, root: Path | None = None) -> bytes:
    """The bytes of the regular file `path` (open_regular's rules)."""
    with open_regular(path, root) as f:
        return f.read()


def read_in(dir_fd: int, name: str) -> bytes:
    """The bytes of the regular file `name` in the open directory `dir_fd`, not through a link (OSError)."""
    with _regular(os.open(name, _FILE, dir_fd=dir_fd), name) as f:
        return f.read()
