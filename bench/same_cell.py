"""The same cell in N fresh processes: how far apart are their medians? (issue 9, point 7)

Runs `neuronexp` (the console script, a fresh process each time) N times on one cell, waiting before each
run for a quiet machine (1-minute load average below --max-load, up to --wait-s), and prints each run's
median, round spread, noise flag and the machine's activity, then max/min of the medians. One JSON line
per run is appended to --out.

    python bench/same_cell.py --runs 5 -- module=rmsnorm_naive 'input.shape=[1,1024,2048]' input.dtype=float32
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def wait_quiet(max_load: float, wait_s: float) -> float:
    """Wait until the 1-minute load average is below max_load (or wait_s passed); return the load seen."""
    deadline = time.monotonic() + wait_s
    load = os.getloadavg()[0]
    while load >= max_load and time.monotonic() < deadline:
        time.sleep(5)
        load = os.getloadavg()[0]
    return load


def run_once(overrides: list[str], out_dir: Path, env: dict[str, str]) -> dict:
    neuronexp = str(Path(sys.executable).parent / "neuronexp")
    proc = subprocess.run([neuronexp, *overrides, f"hydra.run.dir={out_dir}"], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"neuronexp failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cells = pd.read_parquet(out_dir / "cells.parquet")
    samples = pd.read_parquet(out_dir / "samples.parquet")
    row = cells.iloc[0]
    return {
        "median_us": float(row["latency_median_us"]),
        "pooled_median_us": float(samples["latency_us"].median()),
        "round_medians_us": [float(x) for x in samples.groupby("round")["latency_us"].median()],
        "round_spread": float(row["round_spread"]),
        "p90_p10": float(row["p90_p10"]),
        "noisy": bool(row["noisy"]),
        "noise": row["noise"],
        "threads": int(row["threads"]),
        "allocator": row["allocator"],
        "malloc": row["malloc"],
        "load_avg_1m": float(row["load_avg_1m"]),
        "other_cpu": float(row["other_cpu"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-load", type=float, default=1.0)
    parser.add_argument("--wait-s", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--tag", default="")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    env = dict(os.environ)
    records = []
    with tempfile.TemporaryDirectory(prefix="nx-same-cell-") as work:
        for i in range(args.runs):
            load_before = wait_quiet(args.max_load, args.wait_s)
            rec = {
                "tag": args.tag,
                "run": i,
                "overrides": args.overrides,
                "load_before": load_before,
                **run_once(args.overrides, Path(work) / f"run{i}", env),
            }
            records.append(rec)
            print(
                f"run {i}: median {rec['median_us']:9.1f} us (pooled {rec['pooled_median_us']:9.1f})  rounds "
                + " ".join(f"{m:.0f}" for m in rec["round_medians_us"])
                + f"  spread {rec['round_spread']:.0%}  load {load_before:.2f}  other {rec['other_cpu']:.2f}"
                + ("  NOISY: " + str(rec["noise"]) if rec["noisy"] else ""),
                flush=True,
            )
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")
    meds = [r["median_us"] for r in records]
    pooled = [r["pooled_median_us"] for r in records]
    print(
        f"max/min of medians: {max(meds) / min(meds):.3f} (median of round medians); "
        f"{max(pooled) / min(pooled):.3f} (pooled samples)"
    )


if __name__ == "__main__":
    main()
