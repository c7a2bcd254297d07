"""What a row of the table of backends (backends.table) says: everything the sweep, the cell and the analysis know
of a backend without building it. Each backend's folder holds its row (`INFO`, in its `__init__.py`)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from neuronexp.backends.base import Backend
from neuronexp.config import RunConfig


def collect_cycles() -> None:
    gc.collect()  # device memory held by reference cycles (compiled graphs) must be back before the next cell


@dataclass(frozen=True, kw_only=True)
class BackendInfo:
    """One backend, as the sweep, the cell and the analysis see it. Reading a field imports nothing; calling one
    may import torch (`build` its vendor packages too), but starts no device runtime. Its options (its node of
    config/schema.py) are read only by the fields that take the RunConfig."""

    name: str  # its `backend=` value, the row's `backend`, a device slot's kind, its slot locks' prefix
    unit: str  # what its device slots are made of, plural, for messages: "GPUs"
    build: Callable[[RunConfig], Backend]  # the backend of a cell of this config; imports its vendor packages
    present: Callable[[], bool]  # backend=auto's probe: cheap, and it starts no device runtime
    # The launching process's cheap check (raises BackendUnavailable or ConfigError), and its options' checks (plain
    # values, no torch): run on every config, whatever its backend, before any work.
    check: Callable[[], None] = lambda: None
    check_options: Callable[[RunConfig], None] = lambda cfg: None
    # The pool probe: the units this process may use, None where counting them would start the device runtime; then
    # `assumed_units(config)` are split: the units the config selects, else the first ones its slots need.
    count_units: Callable[[], list[str] | None]
    assumed_units: Callable[[RunConfig], list[str]] = lambda cfg: []
    visible_devices: str | None = None  # the variable its runtime reads its device selection from, once, at start
    unit_ranges: bool = False  # that variable takes a range ("4-5"): a slot's units must be contiguous
    slot_overrides: tuple[str, ...] = ()  # variables a slot's selection replaces: dropped from a slotted cell's env
    unpin: Callable[[RunConfig], None] = lambda cfg: None  # a slotted cell's config: its slot placed it
    on_host: bool = False  # its units are the host's cores, which its slots pin their processes to
    placement: Callable[[Any], str]  # the row's `placement` for this process running a cell on `device`
    inference_mode: bool = True  # False: its tensors reject torch.inference_mode (XLA), so no_grad instead
    clean_up: Callable[[], None] = lambda: None  # after a cell, so that the next cell of the process starts clean
    # Its rows' `platform` in analysis/peaks.yaml, the published roofs its cells are held against; None: nothing is
    # published, the host's roofs are measured (host.probe).
    peaks_key: str | None = None
    # Whether its runtime started in this process, so that a process forked from it could not use the device:
    runtime_started: Callable[[], bool] = lambda: False
    fork_refusal: str = ""  # why its cells are then refused by the fork server
    unpaired: str | None = None  # why its cells cannot be timed together in one process (engine.grouping)
