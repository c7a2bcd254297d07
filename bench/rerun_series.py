"""Do a study's speedups survive reruns, and where they do not, did the host move? (docs/history.md,
"Measured: paired timing"). Reads N sweeps of the same study, run back to back in fresh processes:

    for i in 1 2 3 4 5 6 7 8 9; do neuronexp +experiment=rmsnorm_sweep hydra.sweep.dir=DIR/run$i; done
    python bench/rerun_series.py DIR/run1 ... DIR/run9 [--out bench/results/paired]

Per cell with a paired speedup (its baseline ≥ 50 µs, as the issue's goal reads): the speedup in every run, max/min
over every window of three consecutive runs and over all; how often one run's 95% interval holds another run's
figure; and a least-squares fit of the log speedup on the log host reference figures of the cell's process
(host_dispatch_us, host_memory_us: how fast the host was), with the spread the fit leaves.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd


def speedups(sweeps: list[Path]) -> pd.DataFrame:
    rows = []
    for i, sweep in enumerate(sweeps):
        cells = pd.read_parquet(sweep / "results" / "cells.parquet")
        base = cells.set_index("run_id")["latency_median_us"]
        paired = cells[cells["speedup_method"] == "paired"]
        for _, r in paired.iterrows():
            rows.append(
                {
                    "run": i,
                    "cell": f"{r['module']} {r['input_shape']}",
                    "baseline_us": float(base[r["baseline_run_id"]]),
                    "speedup": r["speedup_vs_baseline"],
                    "ci_low": r["speedup_ci_low"],
                    "ci_high": r["speedup_ci_high"],
                    "host_dispatch_us": r["host_dispatch_us"],
                    "host_memory_us": r["host_memory_us"],
                }
            )
    return pd.DataFrame(rows)


def per_cell(g: pd.DataFrame) -> dict:
    s = g["speedup"].to_numpy()
    windows = [float(s[i : i + 3].max() / s[i : i + 3].min()) for i in range(len(s) - 2)]
    inside = [g["ci_low"].iloc[i] <= s[j] <= g["ci_high"].iloc[i] for i, j in itertools.permutations(range(len(s)), 2)]
    x = np.c_[np.ones(len(g)), np.log(g[["host_dispatch_us", "host_memory_us"]].to_numpy())]
    y = np.log(s)
    beta, *_ = np.linalg.lstsq(x - np.r_[0, x[:, 1:].mean(0)], y, rcond=None)
    left = y - (x - np.r_[0, x[:, 1:].mean(0)]) @ beta
    return {
        "speedups": [round(float(v), 4) for v in s],
        "max_over_min": float(s.max() / s.min()),
        "windows_of_3": [round(w, 4) for w in windows],
        "next_run_in_interval": f"{sum(inside)}/{len(inside)}",
        "log_sd_between_runs": float(y.std(ddof=1)),
        "slope_on_log_dispatch": float(beta[1]),
        "slope_on_log_memory": float(beta[2]),
        "log_sd_left_by_the_host_fit": float(left.std(ddof=3)) if len(y) > 3 else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "paired")
    args = parser.parse_args()
    if len(args.sweeps) < 3:
        raise SystemExit("rerun_series needs three or more sweeps of the same study")
    table = speedups(args.sweeps)
    table = table[table["baseline_us"] >= 50]
    cells = {cell: per_cell(g.sort_values("run")) for cell, g in table.groupby("cell", sort=False)}
    worst = np.array([c["windows_of_3"] for c in cells.values()]).max(axis=0)
    report = {
        "sweeps": [str(s) for s in args.sweeps],
        "cells": cells,
        "worst_cell_per_window": [round(float(w), 4) for w in worst],
        "windows_met_1_10": f"{int((worst <= 1.10).sum())}/{len(worst)}",
    }
    for name, c in cells.items():
        print(f"{name:32s} {c['speedups']} max/min {c['max_over_min']:.3f} in-CI {c['next_run_in_interval']}")
    print("worst cell per window of 3:", report["worst_cell_per_window"], "met ≤ 1.10:", report["windows_met_1_10"])
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"series-{time.strftime('%Y-%m-%dT%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=1))
    print(path)


if __name__ == "__main__":
    main()
