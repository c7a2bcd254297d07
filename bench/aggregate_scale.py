"""Time and peak memory of aggregating a synthetic sweep: 10,000 cells x 30 ops (issue 3 target: < 5 s, < 1 GB).

    python bench/aggregate_scale.py [--cells 10000] [--ops 30] [--samples 100] [--dir /tmp/nx-agg]

The job directories are made once (real job files: the same schemas a sweep writes, from
neuronexp.results.files), then `aggregate()` runs in a fresh process, timed end to end with its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from neuronexp.results import frame
from neuronexp.results.files import write_job_tables


def make_sweep(root: Path, n_cells: int, n_ops: int, n_samples: int) -> None:
    if (root / "jobs.json").exists():
        return
    rng = np.random.default_rng(0)
    modules = ["rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"]
    jobs = []
    for i in range(n_cells):
        module, shape = modules[i % 3], f"[1,{(i // 3) + 1},4096]"
        labels = dict(
            run_id=f"{i:016x}",
            experiment="synthetic",
            module=module,
            compiled=module.endswith("compiled"),
            backend="cpu",
            device="cpu",
            dtype="bfloat16",
            shape=shape,
        )
        lat = rng.lognormal(7, 0.1, n_samples)
        cells = frame(
            "cells",
            [
                dict(
                    labels,
                    device_name="cpu",
                    numel=4096 * ((i // 3) + 1),
                    status="ok",
                    overrides=f"input.shape={shape},module={module}",
                    latency_median_us=float(np.median(lat)),
                    latency_p10_us=float(np.percentile(lat, 10)),
                    latency_p90_us=float(np.percentile(lat, 90)),
                    latency_samples=n_samples,
                    timing_method="wallclock",
                    first_call_s=0.01,
                    device_time_us=900.0,
                    cpu_time_us=900.0,
                    device_ops=6.0,
                    device_time_source="cpu_self_time",
                    top_op="aten::mul",
                    top_op_share=0.5,
                    torch_version="2.13.0",
                    started_at="2026-11-29T00:00:00+00:00",
                )
            ],
        )
        ops = frame(
            "ops",
            [
                dict(
                    labels,
                    cycle=0,
                    op=f"aten::op{j}",
                    device_type="CPU",
                    calls=1.0,
                    self_cpu_us=30.0,
                    cpu_total_us=30.0,
                    self_device_us=30.0,
                    device_total_us=30.0,
                    device_share=1 / n_ops,
                )
                for j in range(n_ops)
            ],
        )
        samples = frame(
            "samples", [{"run_id": labels["run_id"], "sample": k, "latency_us": float(v)} for k, v in enumerate(lat)]
        )
        job = root / str(i)
        job.mkdir(parents=True, exist_ok=True)
        write_job_tables(job, {"cells": cells, "ops": ops, "samples": samples})
        jobs.append({"num": i, "dir": str(i), "overrides": [f"module={module}", f"input.shape={shape}"]})
    (root / "jobs.json").write_text(json.dumps(jobs))


CHILD = """
import resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from neuronexp.analysis.baseline import parse_baseline
from neuronexp.engine.aggregate import aggregate
t1 = time.perf_counter()
out = aggregate(Path(sys.argv[1]), parse_baseline("rmsnorm_naive"))
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, len(out.cells), out.op_rows)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=10_000)
    p.add_argument("--ops", type=int, default=30)
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dir", type=Path, default=Path("/tmp/nx-agg-bench"))
    args = p.parse_args()
    root = args.dir / f"{args.cells}x{args.ops}"
    t = time.perf_counter()
    make_sweep(root, args.cells, args.ops, args.samples)
    print(f"synthetic sweep ready in {time.perf_counter() - t:.1f} s: {root}")
    runs = []
    for _ in range(args.repeats):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(root)], capture_output=True, text=True, check=True
        ).stdout.split()
        imp, agg, rss, n_cells, n_ops = float(out[0]), float(out[1]), float(out[2]), int(out[3]), int(out[4])
        runs.append((agg, rss))
        print(
            f"aggregate: {agg:.2f} s (+{imp:.2f} s imports), peak RSS {rss:.0f} MiB, {n_cells} cells, {n_ops} op rows"
        )
    aggs = sorted(r[0] for r in runs)
    print(
        f"median {aggs[len(aggs) // 2]:.2f} s, max peak RSS {max(r[1] for r in runs):.0f} MiB "
        f"({platform.processor() or platform.machine()}, {resource.getpagesize()} B pages, "
        f"Python {platform.python_version()})"
    )
    pd.set_option("display.width", 120)


if __name__ == "__main__":
    main()
