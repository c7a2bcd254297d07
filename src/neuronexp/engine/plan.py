"""The cells of a sweep, composed and validated before the first one runs.

Every cell goes through the same validation as a single run, up front, so a sweep either starts clean or
fails in one line with no files. Each cell gets its job directory here too: two cells never share one, and a
cell already complete in the sweep directory (same run_id, wherever it sits) is reused, not run again.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import os
import pickle
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from neuronexp.backends.table import named_backend
from neuronexp.config import BackendName, CellSpec, ConfigError, LauncherConfig
from neuronexp.config.compose import spec_from_sweep_config
from neuronexp.config.validate import validate_code
from neuronexp.slurm.cluster import check_slurm_sweep
from neuronexp.engine._hydra import LauncherKind, apply_value_overrides, launcher_kind, override_dirname
from neuronexp.engine.pairing import process_key


@dataclass
class PlannedCell:
    num: int
    dir: str  # relative to the sweep directory
    overrides: list[str]  # the job's task overrides, as typed
    run_id: str
    backend: str
    label: str  # the overrides that tell this cell apart, for progress lines
    compiled: bool = False  # compile.enabled: the fork server warms the compiler up for such cells
    process_key: str = ""  # the process state it sets (sweep.pairing: cells timed together agree on it)
    isolated: bool = False  # launcher.isolate: a device slot of its own, never timed with other cells
    # correctness.rtol/atol of this invocation: applied when results are gathered, also to a reused cell (they are
    # not part of run_id, so a cell measured under another tolerance is reused and checked under this one).
    rtol: float | None = None
    atol: float | None = None
    spec: CellSpec | None = field(default=None, repr=False, compare=False)  # built and validated here, once

    def manifest(self) -> dict[str, Any]:
        """This cell's entry in the sweep's jobs.json (its spec travels in PLANNED_SPECS)."""
        return {k: v for k, v in vars(self).items() if k != "spec"}


# Every planned cell's spec, in the sweep directory, for its job to take as is (planned_spec): jobs run in the
# sweep's process, in a launcher's workers or in Slurm tasks, and every one of them sees the sweep directory.
PLANNED_SPECS = ".neuronexp-cells.pickle"


def write_planned(sweep_dir: Path, cells: list[PlannedCell]) -> None:
    from neuronexp.results.files import atomic_write_bytes

    specs = {os.path.normpath(c.dir): (c.overrides, c.spec) for c in cells}
    atomic_write_bytes(sweep_dir / PLANNED_SPECS, pickle.dumps(specs))


def planned_spec(sweep_dir: Path, out_dir: Path, task: list[str]) -> CellSpec | None:
    """The spec the sweep planned for the job with these task overrides writing `out_dir`; None for a job that
    no neuronexp sweep planned (another sweeper), which then builds its own."""
    path = sweep_dir / PLANNED_SPECS
    if not path.is_file():
        return None
    specs = pickle.loads(path.read_bytes())
    overrides, spec = specs.get(os.path.relpath(os.path.abspath(out_dir), os.path.abspath(sweep_dir)), (None, None))
    return spec if overrides == list(task) else None


def grid(params: dict[str, str], arguments: list[str]) -> list[list[str]]:
    """Every job's overrides: the cartesian product of the swept values (`a=1,2 b=x,y`), in the order Hydra's
    basic sweeper would launch them; `hydra.sweeper.params` first, then the command line's overrides."""
    parser = OverridesParser.create()
    axes: dict[str, list[str]] = {}
    for o in parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + list(arguments)):
        key = o.get_key_element()
        if o.is_sweep_override():
            if not o.is_discrete_sweep():
                raise ConfigError(o.input_line or key, "", "only lists of values can be swept (a,b,c or range())")
            axes[key] = [f"{key}={v}" for v in o.sweep_string_iterator()]
        else:
            axes[key] = [f"{key}={o.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*axes.values())]


class CellComposer:
    """Each cell's config, composing only once per choice of config groups.

    Cells mostly differ in plain values (shapes, dtypes) that Hydra applies after composing; those are
    applied to a copy of the composition (sweep._hydra) instead of composing every cell from scratch.
    """

    def __init__(self, master: DictConfig, loader: Any) -> None:
        self.master, self.loader = master, loader
        self.groups = _all_groups(loader)
        self.cache: dict[tuple[str, ...], DictConfig] = {}

    def compose(self, job: list[str], num: int) -> DictConfig:
        parsed = OverridesParser.create().parse_overrides(job)
        group_overrides = [o for o in parsed if o.key_or_group.lstrip("+~") in self.groups or o.package is not None]
        values = [o for o in parsed if o not in group_overrides and not o.is_hydra_override()]
        # A value in Hydra's own node (the planned hydra.sweep.subdir, different for every cell) is set on the copy
        # like any value; a choice of a Hydra group (hydra/launcher=...) is composed.
        hydra_values = [o for o in parsed if o.is_hydra_override() and o not in group_overrides]
        # Parsed from text, so each has its input line.
        key = tuple(o.input_line for o in group_overrides if o.input_line is not None)
        if key not in self.cache:
            self.cache[key] = self.loader.load_sweep_config(self.master, list(key))
        cfg = copy.deepcopy(self.cache[key])
        apply_value_overrides(cfg, values)
        task = [o for o in parsed if not o.is_hydra_override()]
        with open_dict(cfg):
            for o in hydra_values:  # (set as Hydra sets them: the value as parsed, never resolved first)
                OmegaConf.update(cfg, o.key_or_group, o.value(), merge=True)
                cfg.hydra.overrides.hydra.append(o.input_line)
            cfg.hydra.overrides.task = [o.input_line for o in task]
            cfg.hydra.job.override_dirname = override_dirname(cfg, task)
            cfg.hydra.job.num = num
            cfg.hydra.job.id = str(num)
        return cfg


def _all_groups(loader: Any, parent: str = "") -> set[str]:
    out: set[str] = set()
    for name in loader.list_groups(parent):
        path = f"{parent}/{name}" if parent else name
        out |= {path} | _all_groups(loader, path)
    return out


def plan_sweep(master: DictConfig, jobs: list[list[str]], composer: CellComposer) -> list[PlannedCell]:
    """Compose and validate every cell and give each its job directory.

    Raises:
        ConfigError: the first bad value, naming its key; two cells that would share a directory; a
            backend or launcher that cannot run here.
    """
    launcher = launcher_kind(master)
    slurm = launcher == LauncherKind.slurm
    if slurm and not shutil.which("sbatch"):
        raise ConfigError(
            "hydra/launcher",
            "slurm",
            "no Slurm here (sbatch is not on PATH); hydra/launcher=submitit_local runs the same path on this machine",
        )
    cells: list[PlannedCell] = []
    backends: set[BackendName] = set()
    cpu_slots: set[tuple[int, int | None]] = set()
    by_dir: dict[str, int] = {}  # job directory → the cell that has it
    by_run: dict[str, int] = {}  # run_id → the cell that has it
    slot_asks: dict[tuple[Any, ...], tuple[BackendName, LauncherConfig, str | None]] = {}  # one check per kind of slot
    varying = _varying_keys(jobs)
    for num, job in enumerate(jobs):
        cfg = composer.compose(job, num)
        spec = spec_from_sweep_config(cfg, check_code=False)  # the checks that import torch: below, once all pass
        backends.add(spec.config.backend)
        slots = spec.config.launcher
        ask = (spec.config.backend, slots, spec.config.neuron.visible_cores)
        slot_asks.setdefault((ask[0], slots.devices, slots.per_device, slots.pool, ask[2]), ask)
        named = named_backend(spec.config.backend)  # explicitly: `auto` may mean another device on the nodes
        if named is not None and named.on_host:
            cpu_slots.add((slots.devices, slots.per_device))
        subdir = str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
        label = " ".join(o for o in job if o.split("=", 1)[0].lstrip("+~") in varying) or " ".join(job)
        if subdir in by_dir:
            raise ConfigError(
                "hydra.sweep.subdir",
                OmegaConf.select(master, "hydra.sweep.subdir", throw_on_resolution_failure=False),
                f"cells {by_dir[subdir]} and {num} would share the job directory {subdir!r}; "
                "keep ${hydra.job.num} in it, or every swept key",
            )
        if spec.run_id in by_run:
            raise ConfigError("sweep", label, f"cells {by_run[spec.run_id]} and {num} are the same configuration")
        by_dir[subdir], by_run[spec.run_id] = num, num
        cells.append(
            PlannedCell(
                num,
                subdir,
                list(job),
                spec.run_id,
                spec.config.backend.value,
                label,
                bool(spec.config.compile.enabled),
                process_key(spec.config),
                bool(spec.config.launcher.isolate),
                spec.config.correctness.rtol,
                spec.config.correctness.atol,
                spec,
            )
        )
    # Only now, with every value checked: the backends' checks import torch, the slot checks pandas (results' files).
    from neuronexp.backends import backend_kind, check_available
    from neuronexp.cellprocess.machine import check_slots_fit

    for cell in cells:  # the inputs' warnings go into the cell's row
        if cell.spec is not None:
            cell.spec = dataclasses.replace(cell.spec, warnings=tuple(validate_code(cell.spec.config)))
    for name in backends:  # an unavailable backend fails here, once, before any cell runs
        check_available(name)
    if slurm:  # Slurm's cells run on other machines, whatever this one has: checked against the cluster
        check_slurm_sweep(master, cpu_slots)
    else:
        from neuronexp.cellprocess.placement import check_lock_dir

        for backend, launcher_cfg, cores in slot_asks.values():
            check_slots_fit(backend_kind(backend), launcher_cfg, cores)
        for cell in cells:  # cells that take a device slot: its locks' directory must be usable before the first
            if cell.spec is not None and (launcher != LauncherKind.basic or cell.isolated):
                check_lock_dir(cell.spec.config.launcher.lock_dir)
    return cells


def _varying_keys(jobs: list[list[str]]) -> set[str]:
    values: dict[str, set[str]] = {}
    for job in jobs:
        for o in job:
            k, _, v = o.partition("=")
            values.setdefault(k.lstrip("+~"), set()).add(v)
    return {k for k, v in values.items() if len(v) > 1}
