"""Hydra callbacks of neuronexp's: `+hydra/callbacks=mlflow`, the invocation logged to MLflow when the command ends."""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class MlflowExport(Callback):
    """`+hydra/callbacks=mlflow`: the run or sweep logged to MLflow when the command ends, by the code `neuronexp-export
    --mlflow` runs, so the runs are the same. The tracking store is checked in on_multirun_start (every invocation is
    Hydra's multirun: cli.main), before the first cell (a bad URI is one line, exit 2, nothing measured). The export
    itself is registered to run at exit rather than in on_multirun_end, which Hydra skips when the sweep ends with an
    error, as one with a failed cell does: a failed cell is data and is logged too. Only the process that checked the
    URI exports (a cell's process forked from it inherits the exit handler, and returns from it at once)."""

    def __init__(self, tracking_uri: str | None = None, experiment: str | None = None, traces: bool = True) -> None:
        self.uri, self.experiment, self.traces = tracking_uri, experiment, traces

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if config.get("sweep", {}).get("dry_run"):  # nothing will run: nothing to connect to, nor to log
            return
        from neuronexp.config import ConfigError
        from neuronexp.engine.stopped import Stopped
        from neuronexp.export.cells import ExportError
        from neuronexp.export.tracking import connect

        uri = self.uri or os.environ.get("MLFLOW_TRACKING_URI", "")
        key = "hydra.callbacks.mlflow.tracking_uri"
        try:
            if not uri:
                raise ExportError("null and MLFLOW_TRACKING_URI is not set; give the URI, e.g. sqlite:///mlflow.db")
            client = connect(uri)
        except ExportError as exc:
            line = str(ConfigError(key, uri or "null", str(exc).removeprefix(f"--mlflow {uri}: ")))
            raise Stopped(2, line) from None  # (Hydra turns a callback's Exception into a warning and runs on)
        single = config.hydra.sweeper.get("single") and not config.hydra.sweeper.get("params")
        out_dir = Path(str(config.hydra.run.dir if single else config.hydra.sweep.dir))
        atexit.register(self._export, client, uri, out_dir.resolve(), os.getpid())

    def _export(self, client: Any, uri: str, out_dir: Path, pid: int) -> None:
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
