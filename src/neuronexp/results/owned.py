"""Files neuronexp writes into a directory the user names (`neuronexp-extract --out`): never through a symbolic link,
never over a file it did not write, all or nothing. The directory's manifest records each file written with its
sha256; a later invocation may replace a file while it still holds those bytes, never any other (docs/guarantees.md,
"What neuronexp writes")."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from neuronexp.results.regular import read_in, read_regular

MANIFEST = ".neuronexp-files.json"
_WRITTEN_BY = "neuronexp"
# What marks a results directory (engine.ownership.DIR_MARKER, files.CELL_MARKER, a job's or a run's table); a
# directory under one is known by the first alone (a `cell.json` of another tool higher up proves nothing).
RESULTS_MARKS = (".neuronexp-dir.json", "cell.json", "cells.parquet")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(ValueError):
    """One line for the user: which file or directory, and what to do."""


@dataclass
class OwnedDir:
    root: Path
    key: str  # how the user named it, for messages ("--out=studies")
    recorded: dict[str, str] = field(default_factory=dict)  # relative path → sha256 of the bytes neuronexp wrote


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prepare(root: Path, key: str) -> OwnedDir:
    """`root` checked before any work: a directory or nothing yet, not a link, writable, not a results directory,
    its manifest (if any) neuronexp's (Refused: what is wrong, naming `key`)."""
    if root.is_symlink():
        raise Refused(f"{key}: a symbolic link; neuronexp never writes through one: give the real directory")
    existing = next(p for p in (root, *root.absolute().parents) if os.path.lexists(p))
    if not existing.is_dir():
        raise Refused(f"{key}: {existing} is not a directory; choose a new directory or one neuronexp wrote")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise Refused(f"{key}: {existing} is not writable; choose a directory you can write")
    for place in (root.absolute(), *root.absolute().parents):  # above it, only neuronexp's own marker counts
        found = [
            m for m in (RESULTS_MARKS if place == root.absolute() else RESULTS_MARKS[:1]) if os.path.lexists(place / m)
        ]
        if found:
            raise Refused(
                f"{key}: {place} is a results directory (it holds {found[0]}); generated files do not go among "
                "results: choose another directory"
            )
    return OwnedDir(root, key, _recorded(root, key))


def _recorded(root: Path, key: str) -> dict[str, str]:
    if not os.path.lexists(root / MANIFEST):
        return {}
    with contextlib.suppress(OSError, ValueError, KeyError, AttributeError):
        info = json.loads(read_regular(root / MANIFEST))
        files = info["files"] if info.get("written_by") == _WRITTEN_BY else None
        if isinstance(files, dict) and all(isinstance(v, str) for v in files.values()):
            return {str(k): v for k, v in files.items()}
    raise Refused(f"{key}: {root / MANIFEST} is not a record neuronexp wrote; choose another directory")


def _parts(rel: str) -> list[str]:
    parts = rel.split("/")
    if any(p in ("", ".", "..") or "\0" in p or "\n" in p for p in parts):
        raise ValueError(f"not a plain relative path: {rel!r}")  # a caller's bug: names are sanitised before
    return parts


def check_free(owned: OwnedDir, rels: list[str]) -> None:
    """Every path in `rels` is free: nothing there yet, or the very bytes neuronexp recorded writing (Refused: the
    first that is not, naming it)."""
    for rel in rels:
        if why := _taken(owned, rel):
            raise Refused(
                f"{owned.key}: {rel} {why}; neuronexp never overwrites a file it did not write: "
                "move it away or choose another directory"
            )


def _taken(owned: OwnedDir, rel: str) -> str | None:
    path, parts = owned.root, _parts(rel)
    for i, part in enumerate(parts):
        path = path / part
        if not os.path.lexists(path):
            return None
        if path.is_symlink():
            return f"is a symbolic link ({path.name}; never written through)"
        if i < len(parts) - 1 and not path.is_dir():
            return f"cannot be written ({part} is not a directory)"
    if not path.is_file():
        return "is not a regular file"
    try:
        mine = sha256(read_regular(path)) == owned.recorded.get(rel)
    except OSError:
        mine = False
    return None if mine else "holds a file neuronexp did not write (or one changed since it did)"


def commit(owned: OwnedDir, files: dict[str, bytes]) -> None:
    """Write `files` (relative path → bytes), then the manifest, into place. Everything is staged first as
    temporaries beside its name (a full disk fails there, before anything is in place), then moved in: a new name
    by a hard link, which fails rather than replace a file or a link that appeared meanwhile; a file of neuronexp's
    by a rename, once it is seen to hold the recorded bytes still. On any failure what this call placed or created
    is removed (a file of neuronexp's already replaced stays replaced: it holds the new bytes, whole). Refused: a
    name taken meanwhile; OSError: the disk (full, read-only)."""
    txn = _Transaction(owned)
    try:
        staged = [(rel, *txn.stage(rel, data)) for rel, data in files.items()]
        manifest = {**owned.recorded, **{rel: sha256(data) for rel, data in files.items()}}
        text = json.dumps({"written_by": _WRITTEN_BY, "files": manifest}, indent=2, sort_keys=True) + "\n"
        staged.append((MANIFEST, *txn.stage(MANIFEST, text.encode())))
        for rel, dir_fd, tmp in staged:
            txn.place(rel, dir_fd, tmp)
    except BaseException:
        txn.undo()
        raise
    finally:
        txn.close()
    owned.recorded = manifest


class _Transaction:
    def __init__(self, owned: OwnedDir) -> None:
        self.owned = owned
        self.fds: dict[str, int] = {}  # directory (relative, "" for the root) → its descriptor
        self.made: list[tuple[int | None, str]] = []  # directories created: (parent's descriptor or None, name)
        self.temps: list[tuple[int, str]] = []
        self.placed: list[tuple[int, str]] = []

    def _dir(self, rel_dir: str) -> int:
        if rel_dir in self.fds:
            return self.fds[rel_dir]
        if rel_dir == "":
            root = self.owned.root.absolute()
            missing = [p for p in (root, *root.parents) if not os.path.lexists(p)]
            root.mkdir(parents=True, exist_ok=True)
            self.made += [(None, str(p)) for p in reversed(missing)]
            fd = os.open(root, _DIR_FLAGS)
        else:
            parent, _, name = rel_dir.rpartition("/")
            parent_fd = self._dir(parent)
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=parent_fd)
                self.made.append((parent_fd, name))
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)  # a link planted there: ELOOP, never followed
        self.fds[rel_dir] = fd
        return fd

    def stage(self, rel: str, data: bytes) -> tuple[int, str]:
        parts = _parts(rel)
        dir_fd = self._dir("/".join(parts[:-1]))
        tmp = f".{parts[-1]}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
        self.temps.append((dir_fd, tmp))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return dir_fd, tmp

    def place(self, rel: str, dir_fd: int, tmp: str) -> None:
        name = rel.rsplit("/", 1)[-1]
        if rel == MANIFEST or (rel in self.owned.recorded and _exists(name, dir_fd)):
            if rel != MANIFEST and _digest(name, dir_fd) != self.owned.recorded[rel]:
                raise Refused(
                    f"{self.owned.key}: {rel} was changed while neuronexp wrote; it is yours now: "
                    "move it away or choose another directory"
                )
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # replaces the name, never what it points to
        else:
            try:
                os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise Refused(
                    f"{self.owned.key}: {rel} appeared while neuronexp wrote; neuronexp never "
                    "overwrites a file it did not write: move it away or choose another directory"
                ) from None
            self.placed.append((dir_fd, name))
            os.unlink(tmp, dir_fd=dir_fd)
        self.temps.remove((dir_fd, tmp))

    def undo(self) -> None:
        for dir_fd, name in self.temps + self.placed:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)
        for parent_fd, name in reversed(self.made):
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=parent_fd)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _digest(name: str, dir_fd: int) -> str | None:
    try:
        return sha256(read_in(dir_fd, name))
    except OSError:  # a link or a FIFO put there meanwhile
        return None
