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
            from neuronexp.cellprocess.machine import check_slots_fit
            from neuronexp.results.files import owner
            from neuronexp.engine.lock import locked

            check_available(spec.config.backend)
            check_slots_fit(backend_kind(spec.config.backend), spec.config.launcher, spec.config.neuron.visible_cores)
            from neuronexp.engine.job import timeout_asked

            if spec.config.launcher.isolate or timeout_asked(list(config.hydra.overrides.task)):  # takes a slot
                from neuronexp.cellprocess.placement import check_lock_dir

                check_lock_dir(spec.config.launcher.lock_dir)
            run_dir = Path(str(config.hydra.run.dir))
            other = owner(run_dir)
            if other not in (None, spec.run_id):
                raise ConfigError(
                    "hydra.run.dir",
                    str(run_dir),
                    f"already holds the results of another cell "
                    f"(run_id {other}); neuronexp never overwrites them: choose another directory",
                )
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


class MlflowExport(Callback):
    """`+hydra/callbacks=mlflow`: the run or sweep logged to MLflow when the command ends, by the code
    `neuronexp-export --mlflow` runs, so the runs are the same.

    The tracking store is checked in on_run_start / on_multirun_start, before the first cell (a bad URI is one
    line, exit 2, nothing measured). The export itself is registered to run at exit rather than in
    on_multirun_end, which Hydra skips when the sweep ends with an error, as one with a failed cell does: a
    failed cell is data and is logged too. Only the process that checked the URI exports (a cell's process
    forked from it inherits the exit handler, and returns from it at once)."""

    def __init__(self, tracking_uri: str | None = None, experiment: str | None = None, traces: bool = True) -> None:
        self.uri, self.experiment, self.traces = tracking_uri, experiment, traces

    def _start(self, out_dir: Path) -> None:
        import atexit
        import os

        from neuronexp.config import ConfigError
        from neuronexp.export.cells import ExportError
        from neuronexp.export.tracking import connect

        uri = self.uri or os.environ.get("MLFLOW_TRACKING_URI", "")
        key = "hydra.callbacks.mlflow.tracking_uri"
        try:
            if not uri:
                raise ExportError("null and MLFLOW_TRACKING_URI is not set; give the URI, e.g. sqlite:///mlflow.db")
            client = connect(uri)
        except ExportError as exc:
            raise RunRejected(ConfigError(key, uri or "null", str(exc).removeprefix(f"--mlflow {uri}: "))) from None
        atexit.register(self._export, client, uri, out_dir.resolve(), os.getpid())

    def _export(self, client: Any, uri: str, out_dir: Path, pid: int) -> None:
        import os
        import sys

        if os.getpid() != pid:
            return
        from neuronexp.export.tracking import export_mlflow
        from neuronexp.results import read_any

        try:
            done = export_mlflow(client, read_any(out_dir), out_dir, experiment=self.experiment, traces=self.traces)
        except Exception as exc:  # at exit: say it in one line, the results stay on disk for neuronexp-export
            print(
                f"neuronexp: mlflow: error: {type(exc).__name__}: {exc}; export later with neuronexp-export "
                f"{out_dir} --mlflow {uri}",
                file=sys.stderr,
            )
            return
        print(
            f"mlflow: {len(done.created)} cell run(s) logged to experiment {done.experiment} at {uri}", file=sys.stderr
        )

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._start(Path(str(config.hydra.run.dir)))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._start(Path(str(config.hydra.sweep.dir)))
