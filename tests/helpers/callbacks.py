"""A user's Hydra callback writing down each hook it gets and what it was given (tests/engine/test_user_callbacks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf


def _shape(config: DictConfig) -> str:
    return "[" + ",".join(str(d) for d in OmegaConf.select(config, "input.shape")) + "]"


class Recorder(Callback):
    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def _note(self, *words: object) -> None:
        with self.path.open("a") as f:
            f.write(" ".join(map(str, words)) + "\n")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._note("multirun_start")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._note("multirun_end")

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._note("run_start", _shape(config))

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        ret = kwargs.get("job_return")
        self._note("run_end", ret.status.name if ret is not None else None)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._note("job_start", config.module._target_.rsplit(".", 1)[-1], _shape(config))

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        ret = job_return
        value = ret.return_value["status"] if ret.status.name == "COMPLETED" else ret._return_value
        target = config.module._target_.rsplit(".", 1)[-1]
        self._note("job_end", target, ret.status.name, Path(ret.working_dir).name, value)


class Detailed(Callback):
    """Writes one JSON line per run or job hook: its name, the callback's `name`, and what a JobReturn carries."""

    def __init__(self, path: str, name: str) -> None:
        self.path, self.name = Path(path), name

    def _note(self, hook: str, config: DictConfig, ret: Any = None, given: dict[str, Any] | None = None) -> None:
        note: dict[str, Any] = {"hook": hook, "by": self.name, "config": OmegaConf.to_container(config)}
        note["given"] = {k: v for k, v in (given or {}).items() if k != "job_return"}  # as Hydra names them
        if ret is not None:
            value = ret.return_value if ret.status.name == "COMPLETED" else repr(ret._return_value)
            hydra = OmegaConf.to_container(ret.hydra_cfg) if ret.hydra_cfg is not None else None
            note.update(status=ret.status.name, value=value, task=ret.task_name, overrides=ret.overrides)
            note.update(dir=ret.working_dir, hydra=hydra, same_cfg=ret.cfg is config)
        with self.path.open("a") as f:
            f.write(json.dumps(note, default=str) + "\n")

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._note("run_start", config, given=kwargs)

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._note("run_end", config, kwargs.get("job_return"), given=kwargs)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._note("job_start", config, given=kwargs)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        self._note("job_end", config, job_return, given=kwargs)


class Raises(Callback):
    """A callback whose every job hook fails."""

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        raise RuntimeError("disk full")


class OnlyMultirun(Callback):
    """Defines no run or job hook: neuronexp has nothing to call it for."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        return None


def detailed(**kwargs: Any) -> Detailed:
    """A factory, not a class, as a callback's `_target_` (Hydra instantiates either)."""
    return Detailed(**kwargs)
