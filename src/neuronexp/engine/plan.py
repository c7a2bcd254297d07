"""The cells of a run or a sweep, composed and validated before the first one runs: an invocation either starts clean
or fails in one line with no files. Each cell of a sweep gets its job directory here too: two cells never share one,
and none is outside the sweep directory. What a plan is checked against once its plain values are good (the code,
the host's memory, the executor's slots) is engine.preflight."""

from __future__ import annotations

import itertools
from pathlib import PurePosixPath
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from neuronexp.backends import check_options
from neuronexp.config import ConfigError, InMemory
from neuronexp.config.compose import override_dirname, spec_from, spec_from_sweep_config
from neuronexp.config.fingerprint import code_files
from neuronexp.engine._hydra import CellComposer
from neuronexp.engine.grouping import process_key
from neuronexp.engine.planned import PlannedCell


def grid(params: dict[str, str], arguments: list[str]) -> list[list[str]]:
    """Every job's overrides: the cartesian product of the swept values (`a=1,2 b=x,y`), in the order Hydra's
    basic sweeper would launch them; `hydra.sweeper.params` first, then the command line's overrides."""
    parser = OverridesParser.create()
    axes: dict[str, list[str]] = {}
    for o in parser.parse_overrides([f"{k}={v}" for k, v in params.items()] + list(arguments)):
        key = o.get_key_element()
        if o.is_sweep_override():
            if not o.is_discrete_sweep():  # interval(), glob(): the value as typed, after its key
                value = (o.input_line or "").partition("=")[2]
                raise ConfigError(key, value, "only lists of values can be swept (a,b,c or range())")
            axes[key] = [f"{key}={v}" for v in o.sweep_string_iterator()]
        else:
            axes[key] = [f"{key}={o.get_value_element_as_str()}"]
    return [list(job) for job in itertools.product(*axes.values())]


def swept_keys(arguments: list[str]) -> list[str]:
    """The command line's overrides that list several values (`module=a,b`)."""
    parsed = OverridesParser.create().parse_overrides(arguments)
    return [o.input_line or o.key_or_group for o in parsed if o.is_sweep_override()]


def plan_cell(
    num: int, job: list[str], cfg: DictConfig, varying: set[str], memory: InMemory | None = None
) -> PlannedCell:
    """One composed job as a planned cell: its spec built, its plain values validated (no torch: engine.preflight).
    `memory`: a module from the caller's memory, `job` the overrides that label it (engine.in_memory)."""
    if memory is None:
        spec = spec_from_sweep_config(cfg, check_code=False)
    else:
        choices = dict(OmegaConf.select(cfg, "hydra.runtime.choices", default={}) or {})
        spec = spec_from(cfg, choices, job, override_dirname(job), check_code=False, memory=memory)
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


def plan_sweep(master: DictConfig, jobs: list[list[str]], composer: CellComposer) -> list[PlannedCell]:
    """Compose every cell, check its plain values and give it its job directory (check_runnable: the rest). Raises
    ConfigError: the first bad value, two cells that would share a directory, a launcher that cannot run here."""
    varying = varying_keys(jobs)
    cells = [plan_cell(num, job, composer.compose(job, num), varying) for num, job in enumerate(jobs)]
    check_distinct(cells, master)
    return cells


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


def varying_keys(jobs: list[list[str]]) -> set[str]:
    """The keys whose value differs between jobs: what a cell's label shows."""
    values: dict[str, set[str]] = {}
    for job in jobs:
        for o in job:
            k, _, v = o.partition("=")
            values.setdefault(k.lstrip("+~"), set()).add(v)
    return {k for k, v in values.items() if len(v) > 1}
