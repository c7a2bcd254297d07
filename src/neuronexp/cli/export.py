"""`neuronexp-export DIR`: a run or sweep directory's results into MLflow (--mlflow) and the PyTorch benchmark JSON
(--pytorch-benchmark).

Exit status: 0 exported; 2 bad input (no results there, no usable tracking store, an unwritable file), said in one
line. Everything that can fail without side effects (reading the results, reaching the tracking store) is checked
before anything is written.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pyarrow as pa

from neuronexp.cli.common import add_version, quiet_on_closed_stdout
from neuronexp.export.cells import ExportError
from neuronexp.results import DamagedResults, Found, read_any


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="neuronexp-export", description=__doc__.splitlines()[0].split(": ", 1)[1])
    p.add_argument("dir", type=Path, metavar="DIR", help="a run directory (cells.parquet) or a sweep directory")
    p.add_argument(
        "--mlflow",
        nargs="?",
        const="",
        metavar="URI",
        help="log to this MLflow tracking URI (sqlite:///mlflow.db, http://host:5000); "
        "without a value: $MLFLOW_TRACKING_URI",
    )
    p.add_argument("--experiment", metavar="NAME", help="the MLflow experiment (default: the cells' experiment label)")
    p.add_argument("--no-traces", action="store_true", help="leave the profiler traces out of the MLflow artifacts")
    p.add_argument(
        "--pytorch-benchmark",
        type=Path,
        metavar="FILE",
        help="write the PyTorch OSS benchmark JSON records (one per cell and metric) to FILE",
    )
    add_version(p)
    return p


def _tracking_uri(flag: str | None) -> str | None:
    if flag is None:
        return None
    uri = flag or os.environ.get("MLFLOW_TRACKING_URI", "")
    if not uri:
        raise ExportError(
            "--mlflow without a URI needs MLFLOW_TRACKING_URI set; give one, e.g. --mlflow sqlite:///mlflow.db"
        )
    return uri


def _export(args: argparse.Namespace, uri: str | None, found: Found) -> None:
    """Check everything that can be checked without writing (the benchmark file may be replaced, no file to upload is
    a link, the tracking store answers), then write."""
    client, plan = None, None
    if args.pytorch_benchmark is not None:
        from neuronexp.export.benchmark import check_target

        check_target(args.pytorch_benchmark)
    if uri is not None:
        from neuronexp.export.artifacts import artifact_plan
        from neuronexp.export.tracking import connect, experiment_name

        experiment_name(found.results.cells, args.experiment)  # a name MLflow refuses: one line, nothing written
        plan = artifact_plan(found, args.dir, traces=not args.no_traces)
        client = connect(uri)  # a bad URI or a server that does not answer fails here, before any write
    if args.pytorch_benchmark is not None:
        from neuronexp.export.benchmark import write_benchmark_json

        n, left_out = write_benchmark_json(found.results.cells, args.pytorch_benchmark)
        print(f"pytorch benchmark: {n} records in {args.pytorch_benchmark}")
        if left_out:  # JSON has no inf or NaN: a record without its number would be no record
            print(f"  left out, not finite numbers: {', '.join(left_out)}")
    if client is not None:
        from neuronexp.export.tracking import export_mlflow

        done = export_mlflow(client, found, args.dir, experiment=args.experiment, traces=not args.no_traces, plan=plan)
        parent = f" · parent run {done.parent_run_id}" if done.parent_run_id else ""
        print(
            f"mlflow: experiment {done.experiment} (id {done.experiment_id}){parent} · {len(done.created)} cell "
            f"run(s) logged, {len(done.already)} already there · {uri}"
        )
        if done.cut:
            print(f"  cut to fit MLflow's limits (each run's tag neuronexp.cut names what): {', '.join(done.cut)}")


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.mlflow is None and args.pytorch_benchmark is None:
        parser.error("nothing to export: give --mlflow [URI] and/or --pytorch-benchmark FILE")
    try:
        uri = _tracking_uri(args.mlflow)
        found = read_any(args.dir)
        if found.results.cells.empty:
            raise ExportError(f"{args.dir}: the results hold no cells")
        _export(args, uri, found)
    except (ExportError, DamagedResults, OSError, pa.ArrowException) as exc:  # OSError: FileNotFoundError included
        print(f"neuronexp-export: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
