"""Device slots for parallel sweeps: which NeuronCores / GPU / CPU cores a cell owns, and the locks that keep
two concurrent cells off the same device. Plain Python (no Hydra, no torch at import).

A host's devices are split into `launcher.devices` slots. A cell holds its slot's lock files (one per device
unit, `fcntl.flock`) for as long as it runs; the kernel drops the locks when the holding process dies, so a
killed worker never leaves a slot taken. The locks live in a node-local directory and are named after the
device, not the sweep: two sweeps on one host, or two Slurm jobs sharing a node, cannot share a device either.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import tempfile
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from neuronexp.config import format_units

KINDS = ("cpu", "cuda", "neuron")


class PlacementError(ValueError):
    """The slots asked for do not fit this host; the message names the key to change."""


@dataclass(frozen=True)
class Slot:
    index: int
    kind: str  # cpu | cuda | neuron
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
        if self.kind == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = ",".join(self.units)
        elif self.kind == "neuron":
            # An index or an inclusive range (Neuron runtime configuration guide); slots are contiguous.
            env["NEURON_RT_VISIBLE_CORES"] = format_units(self.units)
        return env


def plan_slots(kind: str, devices: int, per_device: int | None, pool: list[str], cpus: list[int]) -> list[Slot]:
    """Split `pool` (the host's units of `kind`) into `devices` disjoint slots of `per_device` units.

    Raises:
        PlacementError: the pool has too few units, or a NeuronCore slot would not be a contiguous range.
    """
    if kind == "cpu":
        pool = [str(c) for c in cpus] if not pool else pool
        per = per_device or max(1, len(pool) // devices)
    else:
        per = per_device or 1
    need = devices * per
    if need > len(pool):
        what = {"cpu": "CPU cores", "cuda": "GPUs", "neuron": "NeuronCores"}[kind]
        raise PlacementError(f"launcher.devices={devices} x launcher.per_device={per} needs {need} {what}; "
                             f"{len(pool)} available here ({format_units(pool) or 'none'}); lower launcher.devices "
                             f"or set launcher.pool")
    slots = []
    for i in range(devices):
        units = tuple(pool[i * per:(i + 1) * per])
        if kind == "neuron" and "," in format_units(units):
            raise PlacementError(f"launcher.pool: NeuronCore slot {format_units(units)} is not a contiguous range")
        if kind == "cpu":
            own = tuple(int(u) for u in units)
        else:  # host threads of accelerator cells are split too, so one cell's dispatch cannot slow another's
            share = len(cpus) // devices
            own = tuple(cpus[i * share:(i + 1) * share]) if share else tuple(cpus)
        slots.append(Slot(i, kind, units, own))
    return slots


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "neuronexp-locks"


def _open(path: Path) -> int:
    # Read-only is enough for flock. No O_CREAT on an existing file: in a sticky world-writable directory
    # Linux (fs.protected_regular) refuses it on another user's file.
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        try:
            return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return os.open(path, os.O_RDONLY)


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
    """Wait for a slot whose every unit is free and lock it; returns the slot and its lock descriptors.

    Closing a descriptor releases its unit (so does the process's exit, e.g. when it is killed).
    """
    root = lock_dir or default_lock_dir()
    if not root.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        if lock_dir is None:  # the default is shared by every user of the host, like /tmp itself
            with suppress(OSError):
                os.chmod(root, 0o1777)
    while True:
        for slot in slots:
            fds: list[int] = []
            for unit in slot.units:
                fd = _lock(root / f"{slot.kind}-{re.sub(r'[^A-Za-z0-9_.-]', '_', unit)}.lock")
                if fd is None:
                    break
                fds.append(fd)
            else:
                return slot, fds
            for fd in fds:  # part of this slot is busy: let go of what was taken, try the next
                os.close(fd)
        time.sleep(poll_s)


@contextmanager
def hold_slot(slots: list[Slot], lock_dir: Path | None = None, poll_s: float = 0.1) -> Iterator[Slot]:
    """Wait for a free slot, hold it for the `with` block, then release it."""
    slot, fds = acquire_slot(slots, lock_dir, poll_s)
    try:
        yield slot
    finally:
        for fd in fds:
            os.close(fd)
