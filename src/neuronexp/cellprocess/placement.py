"""Device slots for parallel sweeps: which device units and CPU cores a cell owns, and the locks that keep two
concurrent cells off the same device. A slot's lock files (`fcntl.flock`, one per unit) are dropped by the kernel when
their holder dies, so a killed worker never leaves a slot taken; they live in a node-local directory and are named after
the device, so two sweeps (or two Slurm jobs on one node) cannot share a device either."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from neuronexp.backends.table import backend_info
from neuronexp.config import format_units


class PlacementError(ValueError):
    """The slots asked for do not fit this host; the message names the key to change."""


@dataclass(frozen=True)
class Slot:
    index: int
    kind: str  # the backend's name (backends.table)
    units: tuple[str, ...]  # what the slot owns: CPU cores, GPU ids or NeuronCore indices
    cpus: tuple[int, ...]  # host cores its process is pinned to (all of them when too few to split)

    @property
    def label(self) -> str:
        """The row's `placement` value: "cpu:0-1", "cuda:3", "neuron:4-5"."""
        return f"{self.kind}:{format_units(self.units)}"

    def env(self) -> dict[str, str]:
        """Environment of the cell's process, set there before any device runtime starts (its cores and
        threads are set by the process itself: childproc.enter_cell_process)."""
        threads = str(len(self.cpus))
        env = {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        info = backend_info(self.kind)
        if info.visible_devices:
            env[info.visible_devices] = format_units(self.units) if info.unit_ranges else ",".join(self.units)
        return env


def plan_slots(kind: str, devices: int, per_device: int | None, pool: list[str], cpus: list[int]) -> list[Slot]:
    """Split `pool` (the host's units of `kind`) into `devices` disjoint slots of `per_device` units. PlacementError:
    too few units, or a slot not the contiguous range its backend's visible-devices variable needs (NeuronCores)."""
    info = backend_info(kind)
    if info.on_host:
        pool = [str(c) for c in cpus] if not pool else pool
        per = per_device or max(1, len(pool) // devices)
    else:
        per = per_device or 1
    need = devices * per
    if need > len(pool):
        raise PlacementError(
            f"launcher.devices={devices} x launcher.per_device={per} needs {need} {info.unit}; "
            f"{len(pool)} available here ({format_units(pool) or 'none'}); lower launcher.devices "
            f"or set launcher.pool"
        )
    slots = []
    for i in range(devices):
        units = tuple(pool[i * per : (i + 1) * per])
        if info.unit_ranges and "," in format_units(units):  # its visible-devices variable takes one range
            raise PlacementError(
                f"launcher.pool: {info.unit.removesuffix('s')} slot {format_units(units)} is not a contiguous range"
            )
        if info.on_host:
            own = tuple(int(u) for u in units)
        else:  # host threads of accelerator cells are split too, so one cell's dispatch cannot slow another's
            share = len(cpus) // devices
            own = tuple(cpus[i * share : (i + 1) * share]) if share else tuple(cpus)
        slots.append(Slot(i, kind, units, own))
    return slots


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "neuronexp-locks"


# Never follow a link, never block: the default lock directory is world-writable, so anyone may plant a link or a
# FIFO under a lock's name (a FIFO would block a plain open, and so every parallel sweep of the host, forever).
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open(path: Path) -> int:
    # Read-only is enough for flock. No O_CREAT on an existing file: in a sticky world-writable directory
    # Linux (fs.protected_regular) refuses it on another user's file.
    try:
        try:
            fd = os.open(path, _FLAGS)
        except FileNotFoundError:
            try:
                fd = os.open(path, _FLAGS | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                fd = os.open(path, _FLAGS)
    except OSError as exc:
        what = "a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise PlacementError(
            f"cannot open the slot lock {path} ({what}); remove it, or set launcher.lock_dir to a directory of your own"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PlacementError(
            f"the slot lock {path} is not a regular file (a FIFO or device put there?); remove it, "
            "or set launcher.lock_dir to a directory of your own"
        )
    return fd


def check_lock_dir(value: str | None) -> None:
    """Raises ConfigError when the slot locks' directory (`launcher.lock_dir`, or the default) cannot hold them, or
    holds a link, a FIFO or a device under a lock's name: checked before the first cell, since a cell that cannot
    take its slot has no terminal to say so on."""
    from neuronexp.config import ConfigError

    root = Path(value) if value else default_lock_dir()
    probe = root
    while not os.path.lexists(probe) and probe.parent != probe:
        probe = probe.parent
    own_dir = "choose a directory this user can write"
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        why = f"{probe} is not a directory" if not probe.is_dir() else f"{probe} is not writable by this user"
        raise ConfigError("launcher.lock_dir", str(value or root), f"{why}; {own_dir}")
    for path in sorted(root.glob("*.lock")) if probe == root else ():
        try:
            kind = stat.S_IFMT(os.lstat(path).st_mode)
        except OSError:  # gone meanwhile
            continue
        if kind != stat.S_IFREG:  # put there by someone: a cell would find its slot's lock unusable (_open)
            what = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO"}.get(kind, "not a regular file")
            raise ConfigError(
                "launcher.lock_dir",
                str(value or root),
                f"the slot lock {path} is {what}, not a lock file neuronexp made; remove it, or set "
                "launcher.lock_dir to a directory of your own",
            )


def _lock(path: Path) -> int | None:
    """An exclusive flock on `path`, or None when another process holds it."""
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return None
        raise
    return fd


def acquire_slot(slots: list[Slot], lock_dir: Path | None = None, poll_s: float = 0.1) -> tuple[Slot, list[int]]:
    """Wait for a slot whose every unit is free and lock it; returns the slot and its lock descriptors. Closing a
    descriptor releases its unit (so does the process's exit, e.g. when it is killed)."""
    root = lock_dir or default_lock_dir()
    if not root.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        if lock_dir is None:  # the default is shared by every user of the host, like /tmp itself
            with suppress(OSError):
                os.chmod(root, 0o1777)
    since, said = time.monotonic(), False
    while True:
        busy: list[Path] = []
        for slot in slots:
            fds: list[int] = []
            for unit in slot.units:
                path = root / f"{slot.kind}-{re.sub(r'[^A-Za-z0-9_.-]', '_', unit)}.lock"
                fd = _lock(path)
                if fd is None:
                    busy.append(path)
                    break
                fds.append(fd)
            else:
                return slot, fds
            for fd in fds:  # part of this slot is busy: let go of what was taken, try the next
                os.close(fd)
        if not said and time.monotonic() - since > WAIT_NOTICE_S:  # a wait nobody explains looks like a hang
            print(f"neuronexp: waiting for a device slot: {'; '.join(_holder(p) for p in busy[:3])}", file=sys.stderr)
            said = True
        time.sleep(poll_s)


# How long a cell waits for a slot before it says who holds the slots.
WAIT_NOTICE_S = 5.0


def _holder(path: Path) -> str:
    """Who holds the flock on `path`, from the kernel's own table (/proc/locks, Linux): the lock files are opened
    read-only, so they cannot carry the holder's name themselves."""
    with suppress(OSError):
        inode = os.stat(path).st_ino
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
                pid = fields[4]
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                return f"{path.name} held by pid {pid} ({cmd[:200] or 'no command line'})"
    return f"{path.name} held by another process"


@contextmanager
def hold_slot(slots: list[Slot], lock_dir: Path | None = None, poll_s: float = 0.1) -> Iterator[Slot]:
    """Wait for a free slot, hold it for the `with` block, then release it."""
    slot, fds = acquire_slot(slots, lock_dir, poll_s)
    try:
        yield slot
    finally:
        for fd in fds:
            os.close(fd)
