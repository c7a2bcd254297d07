"""`hydra/callbacks=mlflow`: a sweep logs itself to MLflow when the command ends, the same runs `neuronexp-export`
logs from its directory (a failed cell included: Hydra skips on_multirun_end then), and a bad URI stops it in one
line before the first cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import FAST
from helpers import run_process as run_cli  # the callback exports when the command exits
from helpers.layers import FAILING_LAYER
from helpers.optional import require

pytestmark = pytest.mark.slow
QUICK = [a for a in FAST if not a.startswith("input.shape")]
SWEEP = [
    "-m",
    "module._target_=failing.FailsOnWideInputs",
    "~module.hidden_size",
    "~module.eps",
    "input.shape=[1,8,32],[1,8,128]",
    *QUICK,
]


def _snapshot(client, experiment: str) -> dict[str, tuple]:
    """Each run by export key: what it says, its artifacts, and its parent's key (ids differ between stores)."""
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    key_of = {r.info.run_id: r.data.tags["neuronexp.export_key"] for r in runs}
    out = {}
    for r in runs:
        tags = {k: v for k, v in r.data.tags.items() if k not in ("mlflow.parentRunId", "neuronexp.sweep_dir")}
        files = sorted(a.path for d in ("tables", "traces", "results") for a in client.list_artifacts(r.info.run_id, d))
        out[key_of[r.info.run_id]] = (
            r.info.run_name,
            r.info.status,
            r.data.params,
            r.data.metrics,
            tags,
            files,
            key_of.get(r.data.tags.get("mlflow.parentRunId")),
        )
    return out


def test_a_sweep_logged_by_the_callback_has_the_runs_neuronexp_export_logs(tmp_path: Path) -> None:
    mlflow = require("mlflow")
    (tmp_path / "failing.py").write_text(FAILING_LAYER)
    live, later = f"sqlite:///{tmp_path / 'live.db'}", f"sqlite:///{tmp_path / 'later.db'}"
    res = run_cli(
        [*SWEEP, "hydra.sweep.dir=sweep", "hydra/callbacks=mlflow", f"hydra.callbacks.mlflow.tracking_uri={live}"],
        cwd=tmp_path,
    )
    assert res.returncode == 1, res.stderr[-2000:]  # one cell failed: the sweep says so, and is logged all the same
    assert "mlflow: 2 cell run(s) logged to experiment adhoc" in res.stderr
    res = run_cli(["sweep", "--mlflow", later], cwd=tmp_path, script="neuronexp-export")
    assert res.returncode == 0, res.stderr[-2000:]
    a = _snapshot(mlflow.MlflowClient(tracking_uri=live), "adhoc")
    b = _snapshot(mlflow.MlflowClient(tracking_uri=later), "adhoc")
    assert len(a) == 3 and a == b
    assert {v[1] for v in a.values()} == {"FINISHED", "FAILED"}


@pytest.mark.parametrize("uri", ["nosuch://x", "http://127.0.0.1:9"])
def test_a_bad_uri_stops_the_sweep_in_one_line_before_its_first_cell(tmp_path: Path, uri: str) -> None:
    require("mlflow")
    (tmp_path / "failing.py").write_text(FAILING_LAYER)
    res = run_cli(
        [*SWEEP, "hydra.sweep.dir=sweep", "hydra/callbacks=mlflow", f"hydra.callbacks.mlflow.tracking_uri={uri}"],
        cwd=tmp_path,
    )
    assert res.returncode == 2, res.stderr[-2000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"neuronexp: error: hydra.callbacks.mlflow.tracking_uri={uri}: "), (
        lines
    )
    assert not (tmp_path / "sweep").exists()


def test_a_single_run_logs_one_run_and_no_uri_at_all_is_one_line(tmp_path: Path) -> None:
    mlflow = require("mlflow")
    res = run_cli([*FAST, "hydra.run.dir=run", "hydra/callbacks=mlflow"], cwd=tmp_path, env={"MLFLOW_TRACKING_URI": ""})
    assert res.returncode == 2 and "hydra.callbacks.mlflow.tracking_uri=null: " in res.stderr, res.stderr[-2000:]
    assert not (tmp_path / "run").exists()
    uri = f"sqlite:///{tmp_path / 'single.db'}"
    res = run_cli(
        [*FAST, "hydra.run.dir=run", "hydra/callbacks=mlflow"], cwd=tmp_path, env={"MLFLOW_TRACKING_URI": uri}
    )
    assert res.returncode == 0, res.stderr[-2000:]
    client = mlflow.MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("adhoc").experiment_id])
    assert "mlflow.parentRunId" not in run.data.tags and "latency_median_us" in run.data.metrics
