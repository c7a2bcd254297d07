"""Hydra callback for single runs: the whole config is checked, and the run directory locked, before Hydra
creates anything in it. A bad value then leaves nothing behind, and neuronexp never has to remove a
directory (it may be the user's, e.g. `hydra.run.dir=.`). Sweeps are checked by the sweeper plugin."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class RunChecks(Callback):
    def __init__(self) -> None:
        self._held = ExitStack()

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from neuronexp.config import ConfigError
        from neuronexp.config.compose import spec_from_sweep_config

        try:
            # The config's own checks first: a plain mistake is reported before torch or pandas is imported
            # (the backends and the results' files bring them in).
            spec = spec_from_sweep_config(config)
            from neuronexp.backends import backend_kind, check_available
            from neuronexp.results.files import owner
            from neuronexp.sweep.lock import locked
            from neuronexp.sweep.machine import check_slots_fit

            check_available(spec.config.backend)
            check_slots_fit(backend_kind(spec.config.backend), spec.config.launcher, spec.config.neuron.visible_cores)
            from neuronexp.sweep.job import timeout_asked

            if spec.config.launcher.isolate or timeout_asked(list(config.hydra.overrides.task)):  # takes a slot
                from neuronexp.sweep.placement import check_lock_dir

                check_lock_dir(spec.config.launcher.lock_dir)
            run_dir = Path(str(config.hydra.run.dir))
            other = owner(run_dir)
            if other not in (None, spec.run_id):
                raise ConfigError("hydra.run.dir", str(run_dir), f"already holds the results of another cell "
                                  f"(run_id {other}); neuronexp never overwrites them: choose another directory")
            self._held.enter_context(locked(run_dir, "hydra.run.dir", "run"))
            from neuronexp.results import invocation

            invocation.begin()  # this run's identity, in every row it writes
        except Exception as exc:  # a ConfigError, an OmegaConf error in a user's value, or a bug (cli.main tells)
            # Hydra turns an Exception raised by a callback into a warning and runs on; this must stop the run.
            raise RunRejected(exc) from None

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._held.close()


class RunRejected(BaseException):
    """A single run's config is invalid (cli.main prints `error` in one line). A BaseException because Hydra
    catches every Exception a callback raises and only warns."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error

