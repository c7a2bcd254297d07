"""`neuronexp-export DIR --mlflow http://127.0.0.1:PORT` against a real `mlflow server`, started by the test on
localhost (its own SQLite store and artifact directory in a temporary directory) and killed after."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import neuronexp
from helpers import run_cli
from helpers.optional import require

pytestmark = pytest.mark.slow
# MLflow's server creates its database and starts its workers: seconds here, more on a busy 2-core VM.
START_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    require("mlflow")
    mlflow_cli = Path(sys.executable).parent / "mlflow"
    if not mlflow_cli.exists() and shutil.which("mlflow") is None:
        pytest.fail("the mlflow command is missing although mlflow imports: install the full `mlflow` package")
    tmp = tmp_path_factory.mktemp("server")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(
        [
            str(mlflow_cli) if mlflow_cli.exists() else "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{tmp / 'server.db'}",
            "--artifacts-destination",
            str(tmp / "artifacts"),
        ],
        cwd=tmp,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_S
        while not _up(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not come up in {START_S} s: {(tmp / 'server.log').read_text()[-2000:]}")
            time.sleep(1)
        yield url, tmp
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the server and its workers, nothing else
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        log.close()


def test_a_sweep_logged_to_a_server_reads_back_and_twice_changes_nothing(server, study: Path, tmp_path: Path) -> None:
    mlflow = require("mlflow")
    url, _ = server
    cells = neuronexp.load(study).cells
    for attempt in ("first", "second"):
        res = run_cli([str(study), "--mlflow", url], cwd=tmp_path, script="neuronexp-export")
        assert res.returncode == 0, (attempt, res.stderr[-2000:])
    assert f"0 cell run(s) logged, {len(cells)} already there" in res.stdout
    client = mlflow.MlflowClient(tracking_uri=url)
    exp = client.get_experiment_by_name("rmsnorm_sweep")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    (parent,) = [r for r in runs if r.data.tags["neuronexp.kind"] == "sweep"]
    children = [r for r in runs if r.data.tags["neuronexp.kind"] == "cell"]
    assert len(children) == len(cells) and len(runs) == len(cells) + 1
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parent.info.run_id}
    assert {r.data.tags["neuronexp.run_id"] for r in children} == set(cells["run_id"])
    one = children[0]
    assert {"latency_median_us", "speedup_vs_baseline", "first_call_s"} <= set(one.data.metrics)
    assert {"module", "input.shape", "dtype"} <= set(one.data.params)
    # Artifacts went through the server (its artifact proxy), not to a local path.
    assert {a.path for a in client.list_artifacts(one.info.run_id, "tables")} >= {"tables/cells.parquet"}
    assert client.list_artifacts(one.info.run_id, "traces")
    assert not (tmp_path / "mlruns").exists()
