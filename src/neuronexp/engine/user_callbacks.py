"""The user's Hydra callbacks (`hydra.callbacks`) where Hydra cannot call them: every invocation is Hydra's multirun,
so Hydra calls only on_multirun_start/end, and a cell run on this host never passes Hydra's run_job. Here, in Hydra's
order: on_run_start/end around a single run, on_job_start/end around each such cell, with its composed config and a
JobReturn holding its row (a Slurm task's cell: on_job_start as it is submitted, on_job_end as its row appears; a Hydra
launcher's job: Hydra's run_job calls them there). Instantiated once more for this; a callback that raises is warned
about, as Hydra does (docs/architecture.md, "Hydra callbacks")."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from neuronexp.config import ConfigError
from neuronexp.config.targets import locate
from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.progress import finished_row

_HOOKS = ("on_run_start", "on_run_end", "on_job_start", "on_job_end")
_MULTIRUN_HOOKS = ("on_multirun_start", "on_multirun_end")


def refuse_multirun_hooks(master: DictConfig) -> None:
    """ConfigError: a callback of `master` with a multirun hook, where nothing would call it: only Hydra's main does,
    and the Python door composes without it (`hydra/callbacks=mlflow` would log nothing, without a word)."""
    for name, node in (OmegaConf.select(master, "hydra.callbacks") or {}).items():
        target = node.get("_target_") if isinstance(node, DictConfig) else None
        try:  # not Hydra's get_class: it logs three lines of its own before raising
            kind = locate(str(target), f"hydra.callbacks.{name}._target_")
        except ConfigError:  # UserCallbacks instantiating it says why, in the command line's words
            continue
        if isinstance(kind, type) and any(getattr(kind, h, None) is not getattr(Callback, h) for h in _MULTIRUN_HOOKS):
            why = "its on_multirun hooks run only from the command line (neuronexp ...); neuronexp.run and sweep call"
            raise ConfigError(f"hydra.callbacks.{name}", target, f"{why} a callback's run and job hooks only")


class UserCallbacks:
    """The callbacks of `master` (hydra.callbacks) that define a run or job hook; nothing to do, and nothing composed
    or read, where none does (neuronexp's own `+hydra/callbacks=mlflow` defines none) or `master` is None (the cells
    are jobs of Hydra's run_job, which calls them)."""

    def __init__(self, master: DictConfig | None) -> None:
        nodes = (OmegaConf.select(master, "hydra.callbacks") if master is not None else None) or {}
        made = [instantiate(node) for node in nodes.values()] if nodes else []
        self.callbacks = [c for c in made if any(getattr(type(c), h) is not getattr(Callback, h) for h in _HOOKS)]
        self.configs: dict[str, DictConfig] = {}  # each started cell's config, until it ends

    def __bool__(self) -> bool:
        return bool(self.callbacks)

    def _call(self, hook: str, reverse: bool, **kwargs: Any) -> None:
        for callback in reversed(self.callbacks) if reverse else self.callbacks:
            try:
                getattr(callback, hook)(**kwargs)
            except Exception as exc:  # as Hydra's own Callbacks: a callback never stops the run
                warnings.warn(
                    f"Callback {type(callback).__name__}.{hook} raised {type(exc).__name__}: {exc}", stacklevel=2
                )

    def run_start(self, config: DictConfig | None) -> None:
        if config is not None:
            self._call("on_run_start", False, config=config, config_name="config")

    def run_end(self, config: DictConfig | None, job_return: JobReturn | None) -> None:
        if config is not None:
            self._call("on_run_end", True, config=config, config_name="config", job_return=job_return)

    def job_start(self, cell: PlannedCell, config: DictConfig | None = None) -> None:
        """Before the cell runs (and before its config is written and let go: PlannedCell.yaml)."""
        if not self or (config := config if config is not None else cell.composed) is None:
            return
        self.configs[cell.dir] = config
        self._call("on_job_start", False, config=config, task_function=None)

    def job_end(self, cell: PlannedCell, job_dir: Path) -> JobReturn | None:
        """After the cell's files are written: a JobReturn whose value is its row (status, error, median latency),
        FAILED with its error where the cell failed or left no row."""
        config = self.configs.pop(cell.dir, None)
        if config is None:
            return None
        row = finished_row(job_dir)
        ret = JobReturn(
            overrides=list(cell.overrides), cfg=config, hydra_cfg=config.get("hydra"), working_dir=str(job_dir)
        )
        ret.task_name = str(OmegaConf.select(config, "hydra.job.name", default="neuronexp"))
        if row is None or row.get("status") == "error":
            ret.status, ret._return_value = JobStatus.FAILED, RuntimeError((row or {}).get("error") or "no result")
        else:
            ret.status, ret._return_value = JobStatus.COMPLETED, row
        self._call("on_job_end", True, config=config, job_return=ret)
        return ret
