"""`neuronexp-export DIR --mlflow URI` into a real MLflow store (SQLite, in a temporary directory: MLflow 3 refuses
a plain file store unless told otherwise), read back with MlflowClient, on a real run of the main study."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import neuronexp
from helpers import FAST, run_cli
from helpers.layers import FAILING_LAYER
from helpers.optional import require
from neuronexp.analysis.variants import cell_labels

pytestmark = pytest.mark.slow  # MLflow's import and its database's creation take seconds each


def export(tmp: Path, *args: str, env: dict[str, str] | None = None):
    return run_cli([*args], cwd=tmp, script="neuronexp-export", env=env)


@pytest.fixture(scope="module")
def store(study: Path, tmp_path_factory: pytest.TempPathFactory):
    """The study exported once into a fresh store: (client, uri, working directory, the command's result)."""
    mlflow = require("mlflow")
    tmp = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    res = export(tmp, str(study), "--mlflow", uri)
    assert res.returncode == 0, res.stderr[-2000:]
    return mlflow.MlflowClient(tracking_uri=uri), uri, tmp, res


def _runs(client, experiment: str) -> list:
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], max_results=1000)


def test_a_sweep_is_one_parent_and_one_nested_child_per_cell(store, study: Path) -> None:
    client, _, _, res = store
    cells = neuronexp.load(study).cells
    runs = _runs(client, "rmsnorm_sweep")
    parents = [r for r in runs if r.data.tags.get("neuronexp.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("neuronexp.kind") == "cell"]
    assert len(parents) == 1 and len(children) == len(cells) == len(runs) - 1
    parent = parents[0].info.run_id
    assert all(r.data.tags["mlflow.parentRunId"] == parent for r in children)
    assert f"parent run {parent}" in res.stdout and f"{len(cells)} cell run(s) logged" in res.stdout
    assert {a.path for a in client.list_artifacts(parent, "results")} >= {"results/summary.md", "results/cells.parquet"}

    by_run_id = {r.data.tags["neuronexp.run_id"]: r for r in children}
    shape = "input_shape"
    names = dict(zip(cells["run_id"], cell_labels(cells)))  # as the terminal names the cells
    assert set(by_run_id) == set(cells["run_id"])
    for _, row in cells.iterrows():
        run = by_run_id[row["run_id"]]
        params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
        # params: the override keys as typed, flattened, and the labels no override names
        assert params["module"] == row["module"] and params["input.shape"] == row[shape]
        assert params["timing.iters"] == "5" and params["dtype"] == row["dtype"] and params["backend"] == row["backend"]
        for col in (
            "latency_median_us",
            "latency_p10_us",
            "latency_p90_us",
            "speedup_vs_baseline",
            "pct_peak_bw",
            "peak_memory_bytes",
            "device_time_us",
            "cpu_time_us",
            "first_call_s",
        ):
            assert metrics[col] == pytest.approx(row[col]), col
        for col in ("speedup_ci_low", "speedup_ci_high"):  # written by neuronexp versions that have them
            assert (col in metrics) == (col in cells.columns and row[col] == row[col])
        assert tags["neuronexp.status"] == "ok" and tags["neuronexp.noisy"] == str(bool(row["noisy"])).lower()
        assert tags["neuronexp.backend"] == row["backend"] and tags["neuronexp.device"] == row["device"]
        assert tags["neuronexp.torch_version"] == row["torch_version"]
        assert tags["mlflow.runName"] == run.info.run_name
        assert run.info.run_name == names[row["run_id"]]
        assert run.info.status == "FINISHED"
        files = {a.path for a in client.list_artifacts(run.info.run_id, "tables")}
        assert {
            "tables/cells.parquet",
            "tables/ops.parquet",
            "tables/samples.parquet",
            "tables/config.yaml",
            "tables/env.json",
        } <= files
        assert [a.path for a in client.list_artifacts(run.info.run_id, "traces")] == ["traces/trace.json"]


def test_exporting_twice_changes_nothing(store, study: Path) -> None:
    client, uri, tmp, _ = store
    before = sorted(r.info.run_id for r in _runs(client, "rmsnorm_sweep"))
    res = export(tmp, str(study), "--mlflow", uri)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 cell run(s) logged" in res.stdout
    assert sorted(r.info.run_id for r in _runs(client, "rmsnorm_sweep")) == before


def test_a_run_left_unfinished_is_completed_in_place_by_the_next_export(store, study: Path) -> None:
    client, uri, tmp, _ = store
    child = next(r for r in _runs(client, "rmsnorm_sweep") if r.data.tags.get("neuronexp.kind") == "cell")
    client.update_run(child.info.run_id, status="RUNNING")  # as an export killed half-way through leaves it
    count = len(_runs(client, "rmsnorm_sweep"))
    res = export(tmp, str(study), "--mlflow", uri)
    assert res.returncode == 0 and "1 cell run(s) logged" in res.stdout, res.stdout + res.stderr
    runs = _runs(client, "rmsnorm_sweep")
    assert len(runs) == count  # nothing deleted, nothing duplicated
    again = client.get_run(child.info.run_id)
    assert again.info.status == "FINISHED" and again.data.params == child.data.params
    assert again.data.metrics == child.data.metrics


def test_the_uri_from_the_environment_and_traces_left_out(store, study: Path) -> None:
    client, uri, tmp, _ = store
    res = export(
        tmp, str(study), "--mlflow", "--experiment", "no-traces", "--no-traces", env={"MLFLOW_TRACKING_URI": uri}
    )
    assert res.returncode == 0, res.stderr[-2000:]
    children = [r for r in _runs(client, "no-traces") if r.data.tags.get("neuronexp.kind") == "cell"]
    assert children and all(not client.list_artifacts(r.info.run_id, "traces") for r in children)
    assert all(client.list_artifacts(r.info.run_id, "tables") for r in children)


def test_a_single_run_is_a_run_without_a_parent(store, single_run: Path) -> None:
    client, uri, tmp, _ = store
    res = export(tmp, str(single_run), "--mlflow", uri, "--experiment", "single")
    assert res.returncode == 0 and "parent run" not in res.stdout, res.stdout + res.stderr
    (run,) = _runs(client, "single")
    assert "mlflow.parentRunId" not in run.data.tags and run.data.tags["neuronexp.kind"] == "cell"
    assert run.data.params["module"] == "rmsnorm_naive" and "latency_median_us" in run.data.metrics


@pytest.mark.parametrize("uri", ["nosuch://place", "http://127.0.0.1:9"])
def test_a_bad_uri_fails_in_one_line_before_anything_is_written(study: Path, tmp_path: Path, uri: str) -> None:
    require("mlflow")
    bench = tmp_path / "bench.json"
    res = export(tmp_path, str(study), "--mlflow", uri, "--pytorch-benchmark", str(bench))
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"neuronexp-export: error: --mlflow {uri}: "), lines
    assert not bench.exists() and not res.stdout


def test_bare_mlflow_without_the_environment_is_one_line(study: Path, tmp_path: Path) -> None:
    res = export(tmp_path, str(study), "--mlflow", env={"MLFLOW_TRACKING_URI": ""})
    assert res.returncode == 2 and "needs MLFLOW_TRACKING_URI" in res.stderr and res.stderr.count("\n") == 1


def test_exported_while_the_sweep_runs_then_after_gives_the_runs_one_export_after_gives(
    store, study: Path, tmp_path: Path
) -> None:
    client, uri, tmp, _ = store
    running = tmp_path / "copy" / study.name  # the same directory name: the same sweep, moved
    shutil.copytree(study, running, ignore=shutil.ignore_patterns("results"))  # not aggregated yet
    res = export(tmp, str(running), "--mlflow", uri, "--experiment", "during")
    assert res.returncode == 0, res.stderr[-2000:]
    early = {r.info.run_id: r for r in _runs(client, "during") if r.data.tags["neuronexp.kind"] == "cell"}
    assert early and all("speedup_vs_baseline" not in r.data.metrics for r in early.values())
    shutil.copytree(study / "results", running / "results")  # the sweep ends: aggregated
    res = export(tmp, str(running), "--mlflow", uri, "--experiment", "during")
    assert res.returncode == 0 and "0 cell run(s) logged" in res.stdout, res.stdout + res.stderr
    runs = _runs(client, "during")
    after = {r.info.run_id: r for r in runs if r.data.tags["neuronexp.kind"] == "cell"}
    assert set(after) == set(early) and all("speedup_vs_baseline" in r.data.metrics for r in after.values())
    (parent,) = [r for r in runs if r.data.tags["neuronexp.kind"] == "sweep"]
    assert client.list_artifacts(parent.info.run_id, "results")


@pytest.fixture(scope="module")
def failed_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real sweep of 2 cells, one of which raises."""
    root = tmp_path_factory.mktemp("failed")
    (root / "failing.py").write_text(FAILING_LAYER)
    out = root / "sweep"
    quick = [a for a in FAST if not a.startswith("input.shape")]
    res = run_cli(
        [
            "-m",
            "module._target_=failing.FailsOnWideInputs",
            "~module.hidden_size",
            "~module.eps",
            "input.shape=[1,8,32],[1,8,128]",
            *quick,
            f"hydra.sweep.dir={out}",
        ],
        cwd=root,
    )
    assert res.returncode == 1, res.stderr[-2000:]
    return out


def test_a_failed_cell_is_a_failed_run_with_its_error_and_no_figures(store, failed_sweep: Path, tmp_path: Path) -> None:
    client, uri, tmp, _ = store
    bench = tmp_path / "bench.json"
    res = export(tmp, str(failed_sweep), "--mlflow", uri, "--experiment", "failed", "--pytorch-benchmark", str(bench))
    assert res.returncode == 0, res.stderr[-2000:]
    runs = _runs(client, "failed")
    (parent,) = [r for r in runs if r.data.tags["neuronexp.kind"] == "sweep"]
    by_status = {r.data.tags["neuronexp.status"]: r for r in runs if r.data.tags["neuronexp.kind"] == "cell"}
    assert set(by_status) == {"ok", "error"} and parent.info.status == "FAILED"
    failed = by_status["error"]
    assert failed.info.status == "FAILED" and not failed.data.metrics
    assert "RuntimeError: unsupported width 128" in failed.data.tags["neuronexp.error"]
    assert (
        failed.data.params["input.shape"] == "[1,8,128]"
        and failed.data.params["module._target_"] == "failing.FailsOnWideInputs"
    )
    assert "tables/error.log" in {a.path for a in client.list_artifacts(failed.info.run_id, "tables")}
    assert by_status["ok"].info.status == "FINISHED" and "latency_median_us" in by_status["ok"].data.metrics
    records = json.loads(bench.read_text())
    assert records and {r["benchmark"]["extra_info"]["status"] for r in records} == {"ok"}


def test_the_git_commit_a_cell_ran_from_is_mlflows_own_tag(store, study: Path, tmp_path: Path) -> None:
    """env.json's git_commit (the working tree the command ran from) as `mlflow.source.git.commit`, which MLflow's UI
    links to the code, on each cell's run and on the sweep's when its cells agree; none where the tree was not a
    repository (the study's own runs: it ran in a temporary directory)."""
    client, uri, _, _ = store
    assert all("mlflow.source.git.commit" not in r.data.tags for r in _runs(client, "rmsnorm_sweep"))
    copy = tmp_path / "committed"
    shutil.copytree(study, copy)
    commit = "0123456789abcdef0123456789abcdef01234567"
    for env_file in copy.glob("*/env.json"):
        env = json.loads(env_file.read_text())
        env_file.write_text(json.dumps({**env, "git_commit": commit}))
    res = export(tmp_path, str(copy), "--mlflow", uri, "--experiment", "committed")
    assert res.returncode == 0, res.stderr[-2000:]
    runs = _runs(client, "committed")
    assert len(runs) == len(neuronexp.load(copy).cells) + 1
    assert {r.data.tags.get("mlflow.source.git.commit") for r in runs} == {commit}
