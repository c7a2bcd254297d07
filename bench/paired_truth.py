"""Does a study's answer survive a rerun? The checks of paired timing (issue 22, point 7), each through the console
scripts as a user runs them, in fresh processes, with the machine's load recorded. One JSON file per check in --out.

    python bench/paired_truth.py study [--runs 3]   # the main study N times: each cell's speedup max/min, wall time
    python bench/paired_truth.py same               # naive vs the same code under another name: ×1 ± 7%, CI holds 1
    python bench/paired_truth.py extra              # naive vs one extra elementwise pass: called slower in every shape
    python bench/paired_truth.py order              # five variants that cost the same, in one sweep: no order bias

neuronexp against torch.utils.benchmark in alternating fresh processes is bench/truth_checks.py timer; compare's
A/A and ×2 with one run a side is bench/compare_truth.py. Every check first waits (up to --wait-s) for the 1-minute
load average to fall below --max-load; --set KEY=VALUE (repeatable) adds an override to every neuronexp command.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from truth_checks import common_args, load, run_check, wait_quiet  # bench/ is this script's directory

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LAYERS = REPO / "bench" / "layers"
SHAPES = "input.shape=[1,128,1024],[1,512,2048],[1,1024,4096],[1,2048,4096]"
NAIVE = "neuronexp.modules.NaiveRMSNorm"


def sweep(args: list[str], out: Path, cwd: Path) -> tuple[float, pd.DataFrame]:
    start = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "neuronexp"), *args, f"hydra.sweep.dir={out}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(LAYERS)},
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"neuronexp {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, pd.read_parquet(out / "results" / "cells.parquet")


def _rows(cells: pd.DataFrame, name_col: str = "module") -> list[dict]:
    keep = cells[cells["speedup_method"].notna()]
    return [
        {
            "variant": str(r[name_col]),
            "shape": r["input_shape"],
            "speedup": r["speedup_vs_baseline"],
            "ci_low": r["speedup_ci_low"],
            "ci_high": r["speedup_ci_high"],
            "method": r["speedup_method"],
            "baseline_us": float(cells.set_index("run_id").loc[r["baseline_run_id"], "latency_median_us"]),
            "noisy": bool(r["noisy"]),
        }
        for _, r in keep.iterrows()
    ]


def study(args, work: Path) -> dict:
    runs = []
    for i in range(args.runs):
        before = wait_quiet(args.max_load, args.wait_s)
        wall, cells = sweep(["+experiment=rmsnorm_sweep", *args.set], work / f"study{i}", work)
        runs.append({"wall_s": round(wall, 1), "load_before": before, "load_after": load(), "cells": _rows(cells)})
        print({k: v for k, v in runs[-1].items() if k != "cells"}, flush=True)
    table = pd.DataFrame([{**c, "run": i} for i, r in enumerate(runs) for c in r["cells"]])
    spread = (
        table.groupby(["variant", "shape"])
        .agg(
            min=("speedup", "min"),
            max=("speedup", "max"),
            baseline_us=("baseline_us", "median"),
            methods=("method", lambda m: ",".join(sorted(set(m)))),
        )
        .reset_index()
    )
    spread["max_over_min"] = spread["max"] / spread["min"]
    return {
        "runs": runs,
        "spread": spread.to_dict("records"),
        "worst_max_over_min_50us": float(spread.loc[spread["baseline_us"] >= 50, "max_over_min"].max()),
    }


def _pair_sweep(args, work: Path, target: str) -> dict:
    before = wait_quiet(args.max_load, args.wait_s)
    wall, cells = sweep(
        [
            "-m",
            f"module._target_={NAIVE},{target}",
            SHAPES,
            f"baseline='module=NaiveRMSNorm,module._target_={NAIVE}'",
            *args.set,
        ],
        work / "sweep",
        LAYERS,
    )
    cells["variant"] = cells["overrides"].str.extract(r"module\._target_=([\w.]+)")[0]
    rows = _rows(cells, "variant")
    if len(rows) != 4:  # one paired speedup per shape, or the check says nothing
        raise SystemExit(f"expected 4 speedups over the naive module, got {len(rows)}: {cells['warnings'].tolist()}")
    return {"load_before": before, "wall_s": round(wall, 1), "load_after": load(), "cells": rows}


def same(args, work: Path) -> dict:
    out = _pair_sweep(args, work, "twin.TwinRMSNorm")
    out["within_7pct"] = all(abs(c["speedup"] - 1) <= 0.07 for c in out["cells"])
    out["intervals_hold_1"] = all(c["ci_low"] <= 1 <= c["ci_high"] for c in out["cells"])
    return out


def extra(args, work: Path) -> dict:
    out = _pair_sweep(args, work, "extra_pass.ExtraPassRMSNorm")
    out["called_slower_everywhere"] = all(c["ci_high"] < 1 for c in out["cells"])
    return out


def order(args, work: Path) -> dict:
    """Five variants that cost the same (the twin layer under five scale keys that do not change the work)."""
    before = wait_quiet(args.max_load, args.wait_s)
    wall, cells = sweep(
        [
            "-m",
            "module._target_=twin.TwinRMSNorm",
            "module.eps=1e-6,2e-6,3e-6,4e-6,5e-6",
            "input.shape=[1,8,64]",
            "baseline='module.eps=1e-6'",
            *args.set,
        ],
        work / "sweep",
        LAYERS,
    )
    cells["variant"] = cells["overrides"].str.extract(r"module\.eps=([\w.+-]+)")[0]
    rows = _rows(cells, "variant")
    return {
        "load_before": before,
        "wall_s": round(wall, 1),
        "load_after": load(),
        "cells": rows,
        "speedup_range": [min(c["speedup"] for c in rows), max(c["speedup"] for c in rows)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=["study", "same", "extra", "order"])
    parser.add_argument("--runs", type=int, default=3)
    common_args(parser, REPO / "bench" / "results" / "paired")
    args = parser.parse_args()
    run_check(args, globals()[args.check], ("runs",))


if __name__ == "__main__":
    main()
