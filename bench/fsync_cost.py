"""What fsync in results.files.atomic_path costs: the files one job writes (its three tables as Parquet and Arrow,
env.json, config.yaml, cell.json), written again and again with the sync and without it, in turn. (issue 46)

    python bench/fsync_cost.py JOB_DIR [--rounds 30] [--where DIR]

JOB_DIR is a finished job (or run) directory whose tables are written; DIR (default: a temporary directory beside
the current one, on the disk results go to) is where. Prints the median time a job's files take each way, the
difference per job and per file, and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from neuronexp.results import files, read_job


def write_job(out: Path, tables: dict, env: dict, config: str) -> None:
    """What a cell writes atomically: cell.json first, config.yaml, env.json, then the tables (cells last)."""
    files.write_json(out / "cell.json", {"run_id": "bench"})
    files.atomic_write_text(out / "config.yaml", config)
    files.write_json(out / "env.json", env)
    files.write_job_tables(out, tables)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("job", type=Path)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--where", type=Path, default=Path.cwd())
    args = p.parse_args()
    found = read_job(args.job)
    tables = {"cells": found.cells, "ops": found.ops, "samples": found.samples}
    env, config = json.loads((args.job / "env.json").read_text()), (args.job / "config.yaml").read_text()
    synced = 0

    def counted(path: Path, *flags: int) -> None:
        nonlocal synced
        synced += 1
        real(path, *flags)

    real = files._synced
    times: dict[str, list[float]] = {"fsync": [], "no fsync": []}
    load_before = Path("/proc/loadavg").read_text().split()[0]
    with tempfile.TemporaryDirectory(dir=args.where, prefix=".fsync-bench-") as tmp:
        for i in range(args.rounds):
            for kind in ("fsync", "no fsync") if i % 2 == 0 else ("no fsync", "fsync"):
                out = Path(tmp) / f"{kind.replace(' ', '_')}-{i}"
                out.mkdir()
                stub = counted if kind == "fsync" else (lambda path, *flags: None)
                with mock.patch.object(files, "_synced", stub):
                    start = time.perf_counter()
                    write_job(out, tables, env, config)
                    times[kind].append(time.perf_counter() - start)
    per_job = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    syncs = synced / args.rounds
    extra = per_job["fsync"] - per_job["no fsync"]
    print(f"job files written {args.rounds} times each way, {syncs:.0f} fsyncs a job (a file and its directory each)")
    print(f"median per job: {per_job['fsync']:.1f} ms with fsync, {per_job['no fsync']:.1f} ms without")
    print(f"fsync adds {extra:.1f} ms a job, {extra / (syncs / 2):.2f} ms a file written")
    print(f"load average {load_before} → {Path('/proc/loadavg').read_text().split()[0]}; where: {args.where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
