"""The cells of a run or a sweep, composed and validated before the first one runs: an invocation either starts clean
or fails in one line with no files. A single run is a plan of one. Each cell of a sweep gets its job directory here
too: two cells never share one, and a cell already complete in the sweep directory (same run_id, wherever it sits) is
reused, not run again. A host cell that cannot fit in this host's memory, as far as is known before it is built (its
inputs' specs; a module from Python's memory, its weights), is refused before anything is allocated, instead of
swapping until the kernel's out-of-memory killer ends it (docs/guarantees.md, "Memory")."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import logging
import math
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from neuronexp.backends import BACKENDS, check_options, named_backend
from neuronexp.config import CellSpec, ConfigError
from neuronexp.config.compose import spec_from_sweep_config
from neuronexp.config.fingerprint import code_files
from neuronexp.config.input_specs import compute_dtype, first_spec, tensor_dtype
from neuronexp.config.validate import validate_code
from neuronexp.engine._hydra import CellComposer, LauncherKind, launcher_kind
from neuronexp.engine.grouping import process_key
from neuronexp.formatting import fmt_bytes
from neuronexp.slurm.cluster import check_slurm_sweep

log = logging.getLogger("neuronexp.engine")
# Bytes per element of each input dtype the schema allows (config.schema.DType).
ITEM_BYTES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "bfloat16": 2, "float16": 2, "bool": 1}
# A cell whose lower bound is above this share of the available memory is warned about: the bound leaves out the
# outputs and intermediates, which for a layer working element by element are a multiple of its input.
WARN_SHARE = 0.5


@dataclass(kw_only=True)
class PlannedCell:
    num: int
    dir: str  # relative to the sweep directory ("." for a single run: the run directory itself)
    overrides: list[str]  # the job's task overrides, as typed
    run_id: str
    backend: str
    label: str  # the overrides that tell this cell apart, for progress lines
    compiled: bool = False  # compile.enabled: the fork server warms the compiler up for such cells
    process_key: str = ""  # the process state it sets (engine.grouping: cells timed together agree on it)
    isolated: bool = False  # launcher.isolate: a device slot of its own, never timed with other cells
    # correctness.rtol/atol of this invocation: applied when results are gathered, also to a reused cell (they are
    # not part of run_id, so a cell measured under another tolerance is reused and checked under this one).
    rtol: float | None = None
    atol: float | None = None
    # The files its code fingerprint hashed → their content hashes (config.fingerprint.code_files), in its cell.json:
    # a later sweep into the directory names the files that changed (engine.rerun).
    code: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    spec: CellSpec | None = field(default=None, repr=False, compare=False)  # built and validated here, once
    config_yaml: str = field(default="", repr=False, compare=False)  # its composed config, the job's config.yaml
    composed: DictConfig | None = field(default=None, repr=False, compare=False)  # ... or where it comes from

    def manifest(self) -> dict[str, Any]:
        """This cell's entry in the sweep's jobs.json: plain values only (a job of a Hydra launcher checks its
        own run_id against it; nothing read back from it is ever run)."""
        return {k: v for k, v in vars(self).items() if k not in ("spec", "config_yaml", "code", "composed")}

    def yaml(self) -> str:
        """Its config.yaml, written only when it runs: not for a cell reused or refused (~50 ms a cell)."""
        if not self.config_yaml and self.composed is not None:
            self.config_yaml, self.composed = job_yaml(self.composed), None
        return self.config_yaml


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


def swept_keys(arguments: list[str]) -> list[str]:
    """The command line's overrides that list several values (`module=a,b`)."""
    parsed = OverridesParser.create().parse_overrides(arguments)
    return [o.input_line or o.key_or_group for o in parsed if o.is_sweep_override()]


def plan_cell(num: int, job: list[str], cfg: DictConfig, varying: set[str]) -> PlannedCell:
    """One composed job as a planned cell: its spec built, its plain values validated (no torch: check_runnable)."""
    spec = spec_from_sweep_config(cfg, check_code=False)
    check_options(spec.config)  # each backend's own options (backends/<name>/), plain values too
    config = spec.config
    label = " ".join(o for o in job if o.split("=", 1)[0].lstrip("+~") in varying) or " ".join(job)
    return PlannedCell(
        num=num,
        dir=str(OmegaConf.select(cfg, "hydra.sweep.subdir")),
        overrides=list(job),
        run_id=spec.run_id,
        backend=config.backend.value,
        label=label,
        compiled=bool(config.compile.enabled),
        process_key=process_key(config),
        isolated=bool(config.launcher.isolate),
        rtol=config.correctness.rtol,
        atol=config.correctness.atol,
        code=code_files(config.module.get("_target_")),
        spec=spec,
        composed=cfg,
    )


def job_yaml(cfg: DictConfig) -> str:
    """The job's config as its config.yaml holds it: resolved, without Hydra's node."""
    job = copy.deepcopy(cfg)
    with open_dict(job):
        job.pop("hydra", None)
    try:
        return OmegaConf.to_yaml(job, resolve=True)
    except Exception:  # an interpolation only Hydra's running job could resolve (${hydra:...}): kept as written
        return OmegaConf.to_yaml(job)


def plan_sweep(master: DictConfig, jobs: list[list[str]], composer: CellComposer) -> list[PlannedCell]:
    """Compose every cell, check its plain values and give it its job directory (check_runnable: the rest). Raises
    ConfigError: the first bad value, two cells that would share a directory, a launcher that cannot run here."""
    check_launcher(master)
    varying = _varying_keys(jobs)
    cells = [plan_cell(num, job, composer.compose(job, num), varying) for num, job in enumerate(jobs)]
    check_distinct(cells, master)
    return cells


def check_launcher(master: DictConfig) -> None:
    if launcher_kind(master) == LauncherKind.slurm and not shutil.which("sbatch"):
        raise ConfigError(
            "hydra/launcher",
            "slurm",
            "no Slurm here (sbatch is not on PATH); hydra/launcher=submitit_local runs the same path on this machine",
        )


def check_distinct(cells: list[PlannedCell], master: DictConfig) -> None:
    """ConfigError: a job directory outside the sweep directory, two cells in one, two cells of one configuration."""
    by_dir: dict[str, int] = {}  # job directory → the cell that has it
    by_run: dict[str, int] = {}  # run_id → the cell that has it
    for cell in cells:
        _check_inside(cell.dir, master)
        if cell.dir in by_dir:
            raise ConfigError(
                "hydra.sweep.subdir",
                _subdir_as_written(master),
                f"cells {by_dir[cell.dir]} and {cell.num} would share the job directory {cell.dir!r}; "
                "keep ${hydra.job.num} in it, or every swept key",
            )
        if cell.run_id in by_run:
            raise ConfigError(
                "sweep", cell.label, f"cells {by_run[cell.run_id]} and {cell.num} are the same configuration"
            )
        by_dir[cell.dir], by_run[cell.run_id] = cell.num, cell.num


def _subdir_as_written(master: DictConfig) -> Any:
    """`hydra.sweep.subdir` as given (`../x${hydra.job.num}`), unresolved: the master has no job number to resolve."""
    sweep = OmegaConf.select(master, "hydra.sweep")
    written = OmegaConf.to_container(sweep, resolve=False) if OmegaConf.is_dict(sweep) else None
    return written.get("subdir") if isinstance(written, dict) else None


def _check_inside(subdir: str, master: DictConfig) -> None:
    """A job directory is a relative path down from the sweep directory: never `..`, absolute, or the sweep directory
    itself, where a cell would write its files outside the sweep or over its `jobs.json` and `results/`."""
    parts = PurePosixPath(subdir).parts
    if not parts or subdir.startswith("/") or ".." in parts:
        raise ConfigError(
            "hydra.sweep.subdir",
            _subdir_as_written(master),
            f"a cell's job directory would be {subdir!r}: it must be a relative path inside hydra.sweep.dir "
            "(no '..', '.', or leading '/'), such as the default ${hydra.job.num}",
        )


def check_runnable(master: DictConfig, cells: list[PlannedCell], single: bool = False, forked: bool = False) -> None:
    """With every plain value checked: the checks that import torch (inputs against `forward`, the backends) and
    the device slots the cells will ask for, each kind once (`single`: a single run, which no launcher runs;
    `forked`: the code is checked in a process forked from this host's fork server, never imported here). Raises
    ConfigError: an input `forward` cannot take, a backend missing here, slots this machine cannot give."""
    from neuronexp.backends import backend_kind, check_available

    # An unavailable backend fails first, once: where the answer needs no torch (torch-neuronx not installed, a
    # CPU-only torch build), before the module's code or the slot checks import it.
    for name in {c.spec.config.backend for c in cells if c.spec is not None}:
        check_available(name)
    # The inputs' warnings go into the cell's row (a module from memory: engine.in_memory checked its inputs); an
    # input that cannot be is named before the memory it would need is weighed.
    warnings = _code_warnings(cells, forked)
    remote = not single and launcher_kind(master) == LauncherKind.slurm  # its cells run on other machines
    memory = _memory_warnings(cells) if not remote else {}  # a cell that cannot fit here: refused before any is built
    from neuronexp.cellprocess.launch import check_slots_fit
    from neuronexp.cellprocess.placement import check_lock_dir

    for cell, found in zip(cells, warnings):
        assert cell.spec is not None
        cell.spec = dataclasses.replace(cell.spec, warnings=(*found, *memory.get(cell.num, [])))
    specs = [c.spec for c in cells if c.spec is not None]
    if remote:  # the cluster's checks instead
        check_slurm_sweep(master, _host_slots(specs))
        return
    for s in {_slot_ask(s): s for s in specs}.values():
        check_slots_fit(backend_kind(s.config.backend), s.config)
    for spec, cell in zip(specs, cells):  # cells that take a device slot: the locks' directory must be usable now
        if cell.isolated if single else slotted(master, cell):
            check_lock_dir(spec.config.launcher.lock_dir)


def _code_warnings(cells: list[PlannedCell], forked: bool) -> list[list[str]]:
    """Each cell's code checked (config.validate.validate_code: its module, its inputs' factories); the inputs'
    warnings, by cell. Forked: in a child of the fork server's template, which has imported torch already, so that
    this process imports neither torch nor the user's layers for it (about 2 s of a sweep's start on 2 cores)."""
    configs = [c.spec.config for c in cells if c.spec is not None and c.spec.memory is None]
    if forked and configs:
        from neuronexp.cellprocess.entry import code_warnings

        checked = iter(code_warnings(configs))
    else:
        checked = iter([validate_code(config) for config in configs])
    return [list(c.spec.warnings) if c.spec is not None and c.spec.memory is not None else next(checked) for c in cells]


def _memory_warnings(cells: list[PlannedCell]) -> dict[int, list[str]]:
    """Each host cell against the host's available memory (check_fits, which raises ConfigError for a cell that
    cannot fit); the warnings for their rows, by cell."""
    from neuronexp.backends import backend_info, backend_kind
    from neuronexp.host.memory import available_bytes

    host = [c for c in cells if c.spec is not None and backend_info(backend_kind(c.spec.config.backend)).on_host]
    found = check_fits([c.spec for c in host if c.spec is not None], available_bytes())
    for cell, warning in zip(host, found):
        if warning is not None:
            log.warning("%s: %s", cell.label or "the cell", warning)
    return {c.num: [w] for c, w in zip(host, found) if w is not None}


def _slot_ask(spec: CellSpec) -> tuple[Any, ...]:
    launcher, assumed = spec.config.launcher, tuple(tuple(b.assumed_units(spec.config)) for b in BACKENDS)
    return (spec.config.backend, launcher.devices, launcher.per_device, launcher.pool, assumed)


def slotted(master: DictConfig, cell: PlannedCell) -> bool:
    """Whether the cell runs on a device slot of its own (its locks taken), rather than with its supervisor's cores:
    under a parallel or Hydra launcher, and whenever launcher.isolate asks for it."""
    return cell.isolated or launcher_kind(master) != LauncherKind.basic


def _host_slots(specs: list[CellSpec]) -> set[tuple[int, int | None]]:
    """The (devices, per_device) of cells whose backend runs on the host: the CPU slots a Slurm node must fit."""
    out = set()
    for spec in specs:
        named = named_backend(spec.config.backend)  # explicitly: `auto` may mean another device on the nodes
        if named is not None and named.on_host:
            out.add((spec.config.launcher.devices, spec.config.launcher.per_device))
    return out


def _varying_keys(jobs: list[list[str]]) -> set[str]:
    values: dict[str, set[str]] = {}
    for job in jobs:
        for o in job:
            k, _, v = o.partition("=")
            values.setdefault(k.lstrip("+~"), set()).add(v)
    return {k for k, v in values.items() if len(v) > 1}


def _tensor_specs(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensor_specs(item)
    elif isinstance(value, Mapping) and "shape" in value and "_target_" not in value and "_value_" not in value:
        yield value


def input_bytes(spec: CellSpec) -> int:
    """The bytes of the tensors its inputs' specs describe (a factory's output, unknown here, counts 0)."""
    cfg = spec.config.input
    follows = compute_dtype(cfg)  # the dtype of a tensor spec without its own (config.input_specs)
    tensors = [first_spec(cfg), *_tensor_specs(list(cfg.args)), *_tensor_specs(list(cfg.kwargs.values()))]
    return sum(math.prod(int(d) for d in t["shape"]) * ITEM_BYTES.get(tensor_dtype(t, follows), 8) for t in tensors)


def least_bytes(spec: CellSpec) -> tuple[int, str]:
    """A lower bound of the host memory the cell allocates while it runs, and what it is made of: its inputs, twice
    where timing.relocate copies them to a fresh place each round (the copy is made while they exist), and the copy
    cell.build makes of a module from memory. Left out: a built module's weights (unknown before it is built), its
    outputs and intermediates."""
    relocate = bool(spec.config.timing.relocate)
    if spec.memory is not None:
        tensors = [*spec.memory.module.parameters(), *spec.memory.module.buffers()]
        weights = sum(t.numel() * t.element_size() for t in tensors)
        inputs = sum(t.numel() * t.element_size() for t in spec.memory.inputs if hasattr(t, "element_size"))
        moved = f", and the copy of its inputs each timing round makes, {fmt_bytes(inputs)} (timing.relocate)"
        return weights + (inputs if relocate else 0), f"the copy of its module, {fmt_bytes(weights)}" + (
            moved if relocate else ""
        )
    inputs = input_bytes(spec)
    twice = ", twice: each timing round copies them to a fresh place (timing.relocate)" if relocate else ""
    return inputs * (2 if relocate else 1), f"its inputs, {fmt_bytes(inputs)}{twice}"


def check_fits(specs: list[CellSpec], available: int | None) -> list[str | None]:
    """Refuse the first cell that cannot fit in `available` bytes (the host's MemAvailable; None: unknown, nothing
    checked); for each spec, the warning for its row when its lower bound is above WARN_SHARE of it, else None.
    The ConfigError names the first input's shape, what the cell needs at least, and what the host has."""
    if available is None:
        return [None for _ in specs]
    warnings: list[str | None] = []
    for spec in specs:
        needed, made_of = least_bytes(spec)
        if needed > available:
            raise ConfigError(
                "input.shape",
                list(spec.config.input.shape),
                f"the cell needs at least {fmt_bytes(needed)} of host memory while it runs "
                f"({made_of}), and this host has {fmt_bytes(available)} available (MemAvailable): use a smaller "
                "shape",
            )
        warnings.append(
            f"this cell needs at least {fmt_bytes(needed)} of host memory ({made_of}), more than half of the "
            f"{fmt_bytes(available)} available when it was planned: it may be killed for lack of memory"
            if needed > WARN_SHARE * available
            else None
        )
    return warnings
