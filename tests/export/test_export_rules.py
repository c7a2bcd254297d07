"""`neuronexp-export`'s rules (issue 32 X16, X10 and the minor findings; issue 34 item 7): no file uploaded through a
link, finite figures only in the benchmark JSON, no file replaced that neuronexp did not write, no value cut silently,
and a cell's MLflow run named as the terminal names it, lasting what the cell's measured calls took.

In-process, on the small real sweep; MLflow's side is what neuronexp hands its client (a recording stand-in with the
client's own signatures), never a server."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import shutil
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.optional import require
from neuronexp.analysis.variants import cell_labels
from neuronexp.cli.export import main
from neuronexp.export.artifacts import artifact_plan, log_files
from neuronexp.export.cells import CUT, CUT_TAG, MAX_TEXT, ExportError, cell_exports
from neuronexp.results import LinkRefused, read_any
from neuronexp.results.files import write_table

SECRET = "SECRET-TOKEN-1234"


class _Page(list):
    token = None


class Recorder:
    """What neuronexp hands MlflowClient, recorded; artifacts by their bytes at upload time."""

    def __init__(self) -> None:
        self.runs: dict[str, dict] = {}

    def get_experiment_by_name(self, name):
        return None

    def create_experiment(self, name, artifact_location=None, tags=None):
        return "1"

    def search_runs(
        self, experiment_ids, filter_string="", run_view_type=1, max_results=1000, order_by=None, page_token=None
    ):
        return _Page()

    def create_run(self, experiment_id, start_time=None, tags=None, run_name=None):
        run_id = f"run{len(self.runs)}"
        self.runs[run_id] = {"start": start_time, "tags": dict(tags or {}), "name": run_name, "files": {}, "params": {}}
        return SimpleNamespace(info=SimpleNamespace(run_id=run_id), data=SimpleNamespace(params={}, metrics={}))

    def log_batch(self, run_id, metrics=(), params=(), tags=(), synchronous=None):
        self.runs[run_id]["params"].update({p.key: p.value for p in params})

    def log_artifact(self, run_id, local_path, artifact_path=None):
        self.runs[run_id]["files"][f"{artifact_path}/{Path(local_path).name}"] = Path(local_path).read_bytes()

    def set_tag(self, run_id, key, value, synchronous=None):
        self.runs[run_id]["tags"][key] = value

    def set_terminated(self, run_id, status=None, end_time=None):
        self.runs[run_id].update(status=status, end=end_time)

    def list_artifacts(self, run_id, path=None):
        return []


def _copy(sweep: Path, dest: Path) -> Path:
    return Path(shutil.copytree(sweep, dest, symlinks=True, ignore=shutil.ignore_patterns(".neuronexp.lock")))


def _plant(path: Path, target: Path) -> None:
    if path.exists():
        path.unlink()
    path.symlink_to(target)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("neuronexp-export: error: "), err
    return err


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"token": SECRET}))
    return path


# -- X16: no file uploaded through a link


@pytest.mark.parametrize(
    "planted", ["0/env.json", "1/config.yaml", "1/trace.json", "0/error.log", "results/summary.md"]
)
def test_a_linked_artifact_is_refused_before_anything_is_written(
    small: Path, tmp_path: Path, secret: Path, capsys, monkeypatch, planted: str
) -> None:
    monkeypatch.chdir(tmp_path)  # where MLflow would put a SQLite store's artifacts (./mlruns)
    copy = _copy(small, tmp_path / "copy")
    _plant(copy / planted, secret)
    db, bench = tmp_path / "m.db", tmp_path / "bench.json"
    assert main([str(copy), "--mlflow", f"sqlite:///{db}", "--pytorch-benchmark", str(bench)]) == 2
    err = _one_line(capsys)
    assert f"copy/{planted}: a symbolic link" in err and SECRET not in err
    assert not db.exists() and not bench.exists()  # checked before the store or the file was touched


def test_no_traces_leaves_a_linked_trace_alone_but_not_a_linked_env(small: Path, tmp_path: Path, secret: Path) -> None:
    copy = _copy(small, tmp_path / "copy")
    _plant(copy / "1" / "trace.json", secret)
    plan = artifact_plan(read_any(copy), copy, traces=False)
    assert all(a.folder != "traces" for files in plan.values() for a in files)
    _plant(copy / "0" / "env.json", secret)
    with pytest.raises(ExportError, match="0/env.json: a symbolic link"):
        artifact_plan(read_any(copy), copy, traces=False)


def test_a_file_swapped_for_a_link_after_the_check_is_not_uploaded(small: Path, tmp_path: Path, secret: Path) -> None:
    copy = _copy(small, tmp_path / "copy")
    found = read_any(copy)
    plan = artifact_plan(found, copy, traces=True)
    _plant(copy / "0" / "env.json", secret)  # after the check, before the upload
    client = Recorder()
    client.create_run("1")
    with pytest.raises(LinkRefused, match="0/env.json"):
        log_files(client, "run0", plan[next(r for r, d in found.job_dir_of.items() if d.name == "0")], copy)
    assert all(SECRET.encode() not in data for data in client.runs["run0"]["files"].values())


# -- MLflow: what the client is handed


def _recorded(small: Path, cells_change=None):
    require("mlflow")
    from neuronexp.export.tracking import export_mlflow

    found = read_any(small)
    if cells_change is not None:
        found = dataclasses.replace(
            found, results=found.results._replace(cells=cells_change(found.results.cells.copy()))
        )
    client = Recorder()
    return client, found, export_mlflow(client, found, small)


def test_the_recorder_takes_what_mlflow_client_takes() -> None:
    mlflow = require("mlflow")
    for name, method in inspect.getmembers(Recorder, inspect.isfunction):
        if not name.startswith("_"):
            real = set(inspect.signature(getattr(mlflow.MlflowClient, name)).parameters)
            assert set(inspect.signature(method).parameters) <= real, name


def _millis(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


@pytest.mark.parametrize("block", [None, 4])
def test_a_cells_run_is_named_as_the_terminal_and_lasts_its_measured_calls(small: Path, block: int | None) -> None:
    """`block`: calls per sample, as a paired cell shorter than 10 µs is timed (each sample the mean of the block)."""
    client, found, done = _recorded(small, None if block is None else lambda c: c.assign(sample_block=block))
    cells, samples = found.results.cells, found.results.samples
    names = dict(zip(cells["run_id"], cell_labels(cells)))
    children = {r["tags"]["neuronexp.run_id"]: r for r in client.runs.values() if r["tags"]["neuronexp.kind"] == "cell"}
    assert len(children) == len(cells) == len(done.created) and not done.cut
    for row in cells.to_dict("records"):
        run = children[row["run_id"]]
        assert run["name"] == names[row["run_id"]] and " · [1," in run["name"]
        start = _millis(row["started_at"])
        timed_us = samples.loc[samples["run_id"] == row["run_id"], "latency_us"].sum() * row["sample_block"]
        assert run["start"] == start and run["status"] == "FINISHED"
        assert run["end"] == start + round(row["first_call_s"] * 1e3 + timed_us / 1e3)
        assert run["end"] - run["start"] < 60_000  # a tiny cell: seconds at most, never the time of the export
        job = found.job_dir_of[row["run_id"]]
        assert run["files"]["tables/env.json"] == (job / "env.json").read_bytes()
        assert run["files"]["traces/trace.json"] == (job / "trace.json").read_bytes()
    (parent,) = [r for r in client.runs.values() if r["tags"]["neuronexp.kind"] == "sweep"]
    assert parent["start"] == min(r["start"] for r in children.values())
    assert parent["end"] == max(r["end"] for r in children.values())


def test_a_value_too_long_for_mlflow_is_cut_and_named(small: Path) -> None:
    long_error = "E" * (MAX_TEXT + 1)

    def change(cells):
        cells.loc[cells.index[0], ["status", "error"]] = ["error", long_error]
        cells.loc[cells.index[1], "error"] = "e" * MAX_TEXT  # at the limit: kept whole
        return cells

    client, found, done = _recorded(small, change)
    first, second = cell_labels(found.results.cells)[:2]
    (run,) = [r for r in client.runs.values() if r["name"] == first]
    assert run["tags"]["neuronexp.error"].endswith(CUT) and len(run["tags"]["neuronexp.error"]) == MAX_TEXT
    assert run["tags"][CUT_TAG] == f"tag neuronexp.error ({MAX_TEXT + 1:,} characters)"
    (other,) = [r for r in client.runs.values() if r["name"] == second]
    assert other["tags"]["neuronexp.error"] == "e" * MAX_TEXT and CUT_TAG not in other["tags"]
    assert done.cut == [first]


def test_a_long_override_is_cut_and_named_for_both_exporters() -> None:
    import pandas as pd

    row = dict(run_id="a", experiment="x", module="m", compiled=False, backend="cpu", device="cpu", dtype="float32")
    cells = pd.DataFrame([{**row, "input_shape": "[1,8]", "overrides": f"module=m,+module.note={'n' * 6000}"}])
    (cell,) = cell_exports(cells)
    assert cell.params["module.note"].endswith(CUT) and len(cell.params["module.note"]) == MAX_TEXT
    assert cell.tags[CUT_TAG] == "param module.note (6,000 characters)"


def test_a_file_store_refusal_keeps_mlflows_remedy(tmp_path: Path, monkeypatch) -> None:
    require("mlflow")
    from neuronexp.export.tracking import connect

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    try:
        connect(f"file://{tmp_path / 'mlruns'}")
    except ExportError as exc:
        message = str(exc)
    else:
        pytest.skip("this MLflow takes a file store")
    assert "\n" not in message and "sqlite:///" in message
    assert message.rstrip(")").rstrip().endswith("to opt out of this exception.")
    assert "MLFLOW_ALLOW_FILE_STORE=true" in message


# -- the PyTorch benchmark JSON


def _strict(path: Path) -> list:
    def refuse(name: str):
        raise AssertionError(f"not JSON: {name}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_non_finite_figures_are_left_out_and_said(small: Path, tmp_path: Path, capsys) -> None:
    copy = _copy(small, tmp_path / "copy")
    table = pq.read_table(copy / "results" / "cells.parquet")
    cells = table.to_pandas()
    cells.loc[1, "speedup_vs_baseline"] = -math.inf
    cells.loc[2, "latency_p90_us"] = math.inf
    write_table(
        copy / "results" / "cells.parquet", pa.Table.from_pandas(cells, schema=table.schema, preserve_index=False)
    )
    bench = tmp_path / "bench.json"
    assert main([str(copy), "--pytorch-benchmark", str(bench)]) == 0
    out = capsys.readouterr().out
    names = cell_labels(read_any(copy).results.cells)
    records = _strict(bench)
    said = out.split("left out, not finite numbers: ", 1)[1]
    assert said.count(" of ") == 2 and "speedup_vs_baseline of " in said and "(-inf)" in said and "(inf)" in said
    assert all(math.isfinite(r["metric"]["benchmark_values"][0]) for r in records)
    counts = {m: sum(r["metric"]["name"] == m for r in records) for m in ("speedup_vs_baseline", "latency_p90_us")}
    assert counts == {"speedup_vs_baseline": len(cells) - 1, "latency_p90_us": len(cells) - 1}
    assert {r["model"]["name"] for r in records} == set(names)


@pytest.mark.parametrize("target", ["results/cells.parquet", "mine.json", "link.json", "link-to-ours.json", "a-dir"])
def test_the_benchmark_file_never_replaces_what_neuronexp_did_not_write(
    small: Path, tmp_path: Path, capsys, target: str
) -> None:
    copy = _copy(small, tmp_path / "copy")
    victim = tmp_path / "victim.json"
    victim.write_text('{"mine": true}\n')
    (copy / "mine.json").write_text('[{"benchmark": {"name": "someone else"}}]\n')
    (copy / "link.json").symlink_to(victim)
    ours = tmp_path / "ours.json"  # a benchmark file neuronexp wrote, reached through the user's link
    assert main([str(small), "--pytorch-benchmark", str(ours)]) == 0
    (copy / "link-to-ours.json").symlink_to(ours)
    (copy / "a-dir").mkdir()
    path = copy / target
    capsys.readouterr()
    kept = (copy / "results" / "cells.parquet", copy / "mine.json", victim, ours)
    before = {p: p.read_bytes() for p in kept}
    assert main([str(copy), "--pytorch-benchmark", str(path)]) == 2
    err = _one_line(capsys)
    assert f"--pytorch-benchmark {path}: " in err
    assert ("a symbolic link; neuronexp writes no file through a link" in err) == target.startswith("link")
    assert {p: p.read_bytes() for p in before} == before
    assert (copy / "link-to-ours.json").is_symlink() and (copy / "link.json").is_symlink()
    assert not [p for p in copy.rglob(".*.tmp-*")]


def test_the_benchmark_file_replaces_its_own(small: Path, tmp_path: Path) -> None:
    bench = tmp_path / "bench.json"
    assert main([str(small), "--pytorch-benchmark", str(bench)]) == 0
    first = _strict(bench)
    assert main([str(small), "--pytorch-benchmark", str(bench)]) == 0
    assert _strict(bench) == first and (bench.stat().st_mode & 0o777) != 0o600  # the user's umask, not mkstemp's


@pytest.mark.parametrize(
    ("name", "said"),
    [("x" * 600, "--experiment='xxxxxxxx"), ("   ", "--experiment='   '"), ("", "--experiment=''")],
)
def test_an_experiment_name_mlflow_refuses_is_one_line_before_anything_is_written(
    small: Path, tmp_path: Path, capsys, name: str, said: str
) -> None:
    """Issue 44: 600 characters gave MLflow's 29-line traceback and exit status 1."""
    db, bench = tmp_path / "mlflow.db", tmp_path / "bench.json"
    code = main([str(small), "--mlflow", f"sqlite:///{db}", "--experiment", name, "--pytorch-benchmark", str(bench)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"neuronexp-export: error: {said}") and "1 to 500 characters" in err
    assert not db.exists() and not bench.exists()


def test_a_name_of_500_characters_is_mlflows_longest_and_passes() -> None:
    from neuronexp.export.tracking import experiment_name

    assert experiment_name(None, "y" * 500) == "y" * 500
    with pytest.raises(ExportError, match="the cells' experiment label="):
        experiment_name({"experiment": SimpleNamespace(iloc=["z" * 501])}, None)


def test_an_infinite_figure_is_no_mlflow_metric_and_its_row_says_so(small: Path) -> None:
    """Issue 44: an infinite latency reached MLflow as 1.8e308."""
    found = read_any(small)
    cells = found.results.cells.copy()
    cells.loc[cells.index[0], "latency_median_us"] = math.inf
    cells.loc[cells.index[0], "latency_p90_us"] = -math.inf
    from neuronexp.export.tracking import logged_metrics, logged_tags

    first, second = cell_exports(cells)[:2]
    logged = logged_metrics(first)
    assert "latency_median_us" not in logged and "latency_p90_us" not in logged
    assert logged_tags(first)["neuronexp.not_finite"] == "latency_median_us=inf; latency_p90_us=-inf"
    assert math.isfinite(logged["latency_p10_us"]) and first.metrics["latency_median_us"] == math.inf
    assert "neuronexp.not_finite" not in logged_tags(second) and "latency_median_us" in logged_metrics(second)
