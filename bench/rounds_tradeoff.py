"""How should a paired timing pass split its samples: few long rounds or many short ones? (docs/timing.md,
"Rounds"). Each round is another placement of the inputs, and the paired ratio moves with the placement, so this
replays what a study could afford from long runs of the same comparison groups in fresh processes.

    neuronexp +experiment=rmsnorm_sweep 'input.shape=[1,512,2048],[1,1024,4096]' timing.rounds=40 \\
        timing.iters=800 timing.max_seconds=40 profiler=quick roofline.probe=off hydra.sweep.dir=DIR_k  # k = 1..3
    python bench/rounds_tradeoff.py DIR_1 DIR_2 DIR_3 [--draws 300] [--out bench/results/paired]

For each (rounds, pairs a round) it draws that many rounds of each process, that many pairs of each, computes the
speedup both ways (median of round medians; median of all pairs), and reports, per cell, the chance that three
processes' figures lie more than ×1.10 apart (one draw from each of three processes) and the sd within a process.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

CONFIGS = [(5, 20), (10, 10), (20, 5), (10, 20), (20, 10), (40, 5)]


def log_ratios(sweep: Path) -> dict[str, list[np.ndarray]]:
    """cell → the log per-pair ratios of each of its rounds (baseline ÷ cell)."""
    cells = pd.read_parquet(sweep / "results" / "cells.parquet")
    samples = pd.read_parquet(sweep / "results" / "samples.parquet")
    out = {}
    for _, row in cells[cells["run_id"] != cells["baseline_run_id"]].iterrows():
        cell, base = (samples[samples["run_id"] == r] for r in (row["run_id"], row["baseline_run_id"]))
        both = cell.merge(base, on="pair", suffixes=("", "_base"))
        both["log_ratio"] = np.log(both["latency_us_base"] / both["latency_us"])
        out[f"{row['module']} {row['input_shape']}"] = [g["log_ratio"].to_numpy() for _, g in both.groupby("round")]
    return out


def estimate(rounds: list[np.ndarray], kind: str) -> float:
    if kind == "median_of_round_medians":
        return float(np.median([np.median(r) for r in rounds]))
    return float(np.median(np.concatenate(rounds)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", type=Path)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "paired")
    args = parser.parse_args()
    if len(args.sweeps) < 3:
        raise SystemExit("rounds_tradeoff needs three or more sweeps of the same groups")
    processes = [log_ratios(s) for s in args.sweeps]
    rng = np.random.default_rng(1)
    report: dict = {"sweeps": [str(s) for s in args.sweeps], "draws": args.draws, "configs": []}
    for rounds, pairs in CONFIGS:
        entry: dict = {"rounds": rounds, "pairs_a_round": pairs}
        for kind in ("median_of_round_medians", "median_of_all_pairs"):
            per_cell = {}
            for cell in processes[0]:
                draws = np.array(
                    [
                        [
                            estimate(
                                [
                                    rng.choice(p[cell][i], pairs)
                                    for i in rng.choice(len(p[cell]), rounds, replace=False)
                                ],
                                kind,
                            )
                            for _ in range(args.draws)
                        ]
                        for p in processes
                    ]
                )
                beyond = [
                    float(np.mean(draws[list(trio)].max(0) - draws[list(trio)].min(0) > np.log(1.10)))
                    for trio in itertools.combinations(range(len(processes)), 3)
                ]
                per_cell[cell] = {"p_beyond_1_10": float(np.mean(beyond)), "sd_in_process": float(draws.std(1).mean())}
            entry[kind] = {"worst_p_beyond_1_10": max(c["p_beyond_1_10"] for c in per_cell.values()), "cells": per_cell}
        report["configs"].append(entry)
        print(
            f"{rounds:2d} rounds × {pairs:2d} pairs: P(three runs > ×1.10 apart), worst cell: "
            f"median of round medians {entry['median_of_round_medians']['worst_p_beyond_1_10']:.3f}, "
            f"median of all pairs {entry['median_of_all_pairs']['worst_p_beyond_1_10']:.3f}",
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"rounds-{time.strftime('%Y-%m-%dT%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=1))
    print(path)


if __name__ == "__main__":
    main()
