"""A run or a sweep as MLflow runs, through MLflow's own client: a sweep is a parent run with one nested run per cell.
Idempotent (docs/export.md): a run already holding a cell's export key only gains what it lacks, and nothing is
ever deleted. mlflow is imported here only, inside the functions: neuronexp's default path never imports it."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from neuronexp.export.artifacts import Artifact, artifact_plan, log_files
from neuronexp.export.cells import CUT_TAG, CellExport, ExportError, cell_exports
from neuronexp.export.spans import Span, cell_spans
from neuronexp.results import JOBS_MANIFEST, Found, read_regular
from neuronexp.results.environment import job_environment

KEY_TAG = "neuronexp.export_key"
NOT_FINITE_TAG = "neuronexp.not_finite"  # the figures left out of a run's metrics: not finite (logged_metrics)
# MLflow's log_batch limits per call (params and tags 100, metrics 1,000).
_BATCH = 100
# The most of a tracking store's error kept in the one line: MLflow's own remedy comes at its end (the file store's
# refusal ends with MLFLOW_ALLOW_FILE_STORE=true), so a longer one loses its middle, never its end.
_DETAIL = 600


@dataclass(kw_only=True)
class Exported:
    experiment: str
    experiment_id: str
    parent_run_id: str | None = None
    created: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)  # the names of the cells whose runs hold a value cut (CUT_TAG)


@contextmanager
def _one_try() -> Iterator[None]:
    """MLflow retries a failing HTTP request for minutes by default; the check at the start must answer in
    seconds (a user's own settings win)."""
    saved = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def connect(uri: str) -> Any:
    """An MlflowClient for `uri`, checked by one request before any work. Raises ExportError (one line) for a
    missing mlflow package, a URI no tracking store takes, or a server that does not answer."""
    try:
        from mlflow import MlflowClient
    except ImportError:
        raise ExportError("--mlflow needs the mlflow package: pip install 'neuronexp[mlflow]'") from None
    try:
        with _one_try():
            client = MlflowClient(tracking_uri=uri)
            client.search_experiments(max_results=1)
    except Exception as exc:  # MlflowException, requests' and the database drivers' errors: all mean "not usable"
        raise ExportError(f"--mlflow {uri}: no usable MLflow tracking store there ({_detail(exc)})") from None
    return client


def _detail(exc: Exception) -> str:
    """The error on one line, whole up to _DETAIL characters; beyond, its start and its end (where the remedy is)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    head, tail = _DETAIL // 3, 2 * _DETAIL // 3
    return text if len(text) <= _DETAIL else f"{text[:head]} … {text[-tail:]}"


def _existing(client: Any, experiment_id: str) -> dict[str, Any]:
    """The experiment's runs that neuronexp exported, by export key (one paged search, not one per cell)."""
    found, token = {}, None
    while True:
        page = client.search_runs([experiment_id], f"tags.`{KEY_TAG}` LIKE '%'", max_results=1000, page_token=token)
        found.update({r.data.tags[KEY_TAG]: r for r in page})
        token = page.token
        if not token:
            return found


def _log(client: Any, run_id: str, params: dict[str, str], metrics: dict[str, float], at: int | None) -> None:
    from mlflow.entities import Metric, Param

    stamp = at or int(datetime.now().timestamp() * 1000)
    items = [Param(k, v) for k, v in params.items()]
    values = [Metric(k, v, stamp, 0) for k, v in metrics.items()]
    for i in range(0, max(len(items), len(values), 1), _BATCH):
        client.log_batch(run_id, metrics=values[i : i + _BATCH], params=items[i : i + _BATCH])


def parent_key(root: Path, run_ids: list[str]) -> str:
    """The sweep directory's name with its planned cells: the same sweep resumed keeps its parent, another sweep
    of the same cells (another directory) gets its own."""
    manifest = root / JOBS_MANIFEST
    try:
        planned = sorted(str(j["run_id"]) for j in json.loads(read_regular(manifest))) if manifest.is_file() else []
    except (OSError, ValueError, TypeError, KeyError):  # a link among them: read_any refused it already
        planned = []
    ident = root.resolve().name + "|" + ",".join(planned or sorted(run_ids))
    return hashlib.sha256(ident.encode()).hexdigest()[:24]


@dataclass(frozen=True, kw_only=True)
class _Sweep:
    """What the parent run is made of: the experiment, the runs found there, the directory and its files."""

    exp_id: str
    existing: dict[str, Any]
    root: Path
    files: list[Artifact]
    span: Span


def _parent(client: Any, sweep: _Sweep, cells: Any) -> str:
    root = sweep.root
    key = parent_key(root, [str(r) for r in cells["run_id"]])
    run = sweep.existing.get(key)
    if run is None:
        run_id = client.create_run(
            sweep.exp_id,
            start_time=sweep.span.start,
            run_name=root.resolve().name,
            tags={KEY_TAG: key, "neuronexp.kind": "sweep", "neuronexp.sweep_dir": str(root.resolve())},
        ).info.run_id
    elif run.info.status != "RUNNING" and client.list_artifacts(run.info.run_id, "results"):
        return run.info.run_id
    else:  # exported before the sweep was aggregated (while it ran), or left unfinished by a killed export
        run_id = run.info.run_id
    log_files(client, run_id, sweep.files, root)
    client.set_tag(run_id, "neuronexp.cells", str(len(cells)))
    failed = bool((cells["status"] == "error").any()) if "status" in cells else False
    client.set_terminated(run_id, "FAILED" if failed else "FINISHED", end_time=sweep.span.end)
    return run_id


def logged_metrics(export: CellExport) -> dict[str, float]:
    """The cell's figures as MLflow metrics: the finite ones. MLflow would store an infinite one as ±1.8e308, a
    figure nobody measured; it is left out and named in the tag NOT_FINITE_TAG (logged_tags)."""
    return {k: v for k, v in export.metrics.items() if math.isfinite(v)}


def logged_tags(export: CellExport) -> dict[str, str]:
    left_out = [f"{k}={v}" for k, v in export.metrics.items() if not math.isfinite(v)]
    return {**export.tags, **({NOT_FINITE_TAG: "; ".join(left_out)} if left_out else {})}


def _complete(client: Any, run: Any, cell: CellExport, span: Span) -> None:
    """A finished cell's run exported before aggregation lacks the figures aggregation adds (the speedups): log
    them now, so exporting during and after a sweep gives the runs one export after it gives."""
    missing = {k: v for k, v in logged_metrics(cell).items() if k not in run.data.metrics}
    if missing:
        _log(client, run.info.run_id, {}, missing, span.start)


@dataclass(frozen=True)
class _Cell:
    """One cell's run as logged: its export, its span, its files, its parent run and the commit it ran from."""

    export: CellExport
    span: Span
    files: list[Artifact]
    parent: str | None
    commit: str | None = None


# MLflow's own tag for the code a run ran from, which its UI links to (mlflow.utils.mlflow_tags.MLFLOW_GIT_COMMIT).
GIT_COMMIT_TAG = "mlflow.source.git.commit"


def commits(found: Found) -> dict[str, str]:
    """Each cell's git commit (env.json's `git_commit`: the working tree it was run from), where it had one."""
    out = {}
    for run, job_dir in found.job_dir_of.items():
        env = job_environment(job_dir)
        if env is not None and isinstance(env.get("git_commit"), str) and env["git_commit"]:
            out[run] = env["git_commit"]
    return out


def _child(client: Any, exp_id: str, cell: _Cell, root: Path, run: Any = None) -> str:
    """Log a cell's run, or finish `run`, the cell's run an earlier export left unfinished (what it already holds
    is not logged twice; artifacts are the same files, written again over themselves)."""
    export, span = cell.export, cell.span
    if run is None:
        tags = {**logged_tags(export), KEY_TAG: export.key, "neuronexp.kind": "cell"}
        if cell.parent is not None:
            tags["mlflow.parentRunId"] = cell.parent
        if cell.commit is not None:
            tags[GIT_COMMIT_TAG] = cell.commit
        run = client.create_run(exp_id, start_time=span.start, tags=tags, run_name=export.name)
    run_id, held = run.info.run_id, run.data
    params = {k: v for k, v in export.params.items() if k not in held.params}
    metrics = {k: v for k, v in logged_metrics(export).items() if k not in held.metrics}
    _log(client, run_id, params, metrics, span.start)
    log_files(client, run_id, cell.files, root)
    ok = export.tags.get("neuronexp.status") in ("ok", "cached")
    client.set_terminated(run_id, "FINISHED" if ok else "FAILED", end_time=span.end)
    return run_id


# MLflow's longest experiment name (mlflow.utils.validation.MAX_EXPERIMENT_NAME_LENGTH).
MAX_EXPERIMENT_NAME = 500


def experiment_name(cells: Any, given: str | None) -> str:
    """The MLflow experiment the cells go into: `given` (--experiment), else their own `experiment` label. ExportError,
    before anything is written: a name MLflow would refuse (empty, or longer than it takes)."""
    name = given if given is not None else str(cells["experiment"].iloc[0])
    if not name.strip() or len(name) > MAX_EXPERIMENT_NAME:
        where = "--experiment" if given is not None else "the cells' experiment label"
        shown = name if len(name) <= 60 else f"{name[:40]}... ({len(name)} characters)"
        raise ExportError(
            f"{where}={shown!r}: not an MLflow experiment name (1 to {MAX_EXPERIMENT_NAME} characters, not blank)"
        )
    return name


def export_mlflow(
    client: Any,
    found: Found,
    root: Path,
    experiment: str | None = None,
    traces: bool = True,
    plan: dict[str | None, list[Artifact]] | None = None,
) -> Exported:
    """Log `found` (read from `root`) into `experiment` (default: the cells' own `experiment` label). `plan`: the
    files to upload (artifacts.artifact_plan, checked before anything was written), made here when not given."""
    cells = found.results.cells
    if cells.empty:
        raise ExportError(f"{root}: the results hold no cells")
    plan = artifact_plan(found, root, traces) if plan is None else plan
    spans = cell_spans(cells, found.results.samples)
    name = experiment_name(cells, experiment)
    exp = client.get_experiment_by_name(name)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(name)
    out = Exported(experiment=name, experiment_id=exp_id)
    existing = _existing(client, exp_id)
    commit = commits(found)
    if found.kind == "sweep":
        span = Span.around(list(spans.values()))
        sweep = _Sweep(exp_id=exp_id, existing=existing, root=root, files=plan.get(None, []), span=span)
        out.parent_run_id = _parent(client, sweep, cells)
        if len(set(commit.values())) == 1:  # the sweep's commit, where its cells agree on one
            client.set_tag(out.parent_run_id, GIT_COMMIT_TAG, next(iter(commit.values())))
    for export, run_id in zip(cell_exports(cells), cells["run_id"].astype(str)):
        run = existing.get(export.key)
        if CUT_TAG in export.tags:
            out.cut.append(export.name)
        if run is not None and run.info.status != "RUNNING":
            _complete(client, run, export, spans[run_id])
            out.already.append(run.info.run_id)
            continue
        cell = _Cell(export, spans[run_id], plan.get(run_id, []), out.parent_run_id, commit.get(run_id))
        out.created.append(_child(client, exp_id, cell, root, run))
    return out
