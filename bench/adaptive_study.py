"""The main study with a fixed count against sampling to a precision (issue 47), side by side in one run: each mode in
fresh processes, interleaved round by round (the order turned each round), with the load before and after each.

    python bench/adaptive_study.py [--runs 3] [--adaptive 0.05:10 [0.03:15 ...]] [--hog N] [--set KEY=VALUE] [--compare]

Per mode (`fixed` is timing.precision=null; `p=X,r=Y` is timing.precision=X timing.min_rounds=Y, from --adaptive
X:Y): each run's wall time, its findings (per
input the fastest cell, and per cell faster / slower / the tie in the findings' own words, report.why.verdict_words),
whether every run's findings are the fixed runs', each cell's paired speedup max/min over the runs (the worst cell:
the issue's ×1.10), and the rounds each group took and why it stopped. `--hog N` runs N busy processes beside the
study for the whole benchmark (the "under load" check: adaptive must take longer, not guess); `--compare` then runs
neuronexp-compare on two runs of each mode (an A/A: nothing may be called) and on a run against a copy of itself
with every sample ×2 (bench/compare_truth.py's `double`: every cell must be called slower, noisy or not).
One JSON file in --out; the commands to record are in docs/performance.md ("Sampling to a precision").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from neuronexp.report.why import verdict_words

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
THRESHOLD = 0.02  # the findings' tie threshold (report.findings.TIE)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def study(mode: str, out: Path, sets: list[str]) -> dict:
    """One fresh `neuronexp +experiment=rmsnorm_sweep` with the mode's precision; its wall time and cells."""
    keys = ["timing.precision=null"] if mode == "fixed" else mode.replace("p=", "timing.precision=").split(",")
    keys = [k.replace("r=", "timing.min_rounds=") for k in keys]
    cmd = [str(BIN / "neuronexp"), "+experiment=rmsnorm_sweep", *keys, *sets]
    before, start = load(), time.perf_counter()
    proc = subprocess.run([*cmd, f"hydra.sweep.dir={out}"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    cells = pd.read_parquet(out / "results" / "cells.parquet")
    return {"mode": mode, "dir": str(out), "wall_s": round(wall, 2), "load_before": before, "load_after": load(),
            **findings(cells), "groups": groups(cells)}  # fmt: skip


def findings(cells: pd.DataFrame) -> dict:
    """Per input the fastest cell by paired speedup (the baseline ×1), per cell its words against the baseline."""
    cells = cells[cells["status"] == "ok"]
    fastest, words, speedups = {}, {}, {}
    for shape, g in cells.groupby("input_shape", sort=False):
        speed = g["speedup_vs_baseline"].fillna(1.0)
        fastest[shape] = str(g.loc[speed.idxmax(), "module"])
        for _, r in g[g["run_id"] != g["baseline_run_id"]].iterrows():
            key = f"{r['module']} {shape}"
            words[key] = verdict_words(float(r["speedup_ci_low"]), float(r["speedup_ci_high"]), THRESHOLD)
            speedups[key] = float(r["speedup_vs_baseline"])
    return {"fastest": fastest, "words": words, "speedups": speedups}


def groups(cells: pd.DataFrame) -> dict:
    """Per input: rounds taken, why sampling stopped, the precision reached (one rule per group: the same each cell)."""
    out = {}
    for shape, g in cells.groupby("input_shape", sort=False):
        r = g.iloc[0]
        rounds, why = r.get("latency_rounds"), r.get("timing_stop")
        out[shape] = {"latency_rounds": None if pd.isna(rounds) else int(rounds), "timing_stop": why}
        out[shape]["precision_reached"] = (
            None if pd.isna(r.get("precision_reached")) else round(float(r["precision_reached"]), 4)
        )
    return out


def side(words: str) -> str:
    """faster / slower / tie, whatever the wording of a small difference."""
    return "faster" if words == "faster" else "slower" if words == "slower" else "tie"


def summarize(runs: list[dict]) -> dict:
    modes = list(dict.fromkeys(r["mode"] for r in runs))
    fixed = [r for r in runs if r["mode"] == "fixed"]
    reference = (fixed or runs)[0]
    out = {}
    for mode in modes:
        mine = [r for r in runs if r["mode"] == mode]
        cells = mine[0]["speedups"].keys()
        spread = {c: max(r["speedups"][c] for r in mine) / min(r["speedups"][c] for r in mine) for c in cells}
        worst = max(spread, key=spread.get)  # type: ignore[arg-type]
        out[mode] = {
            "walls_s": [r["wall_s"] for r in mine],
            "median_wall_s": statistics.median(r["wall_s"] for r in mine),
            "same_fastest_as_fixed": all(r["fastest"] == reference["fastest"] for r in mine),
            "same_words_as_fixed": all(r["words"] == reference["words"] for r in mine),
            "same_sides_as_fixed": all(
                {k: side(v) for k, v in r["words"].items()} == {k: side(v) for k, v in reference["words"].items()}
                for r in mine
            ),
            "worst_cell": worst,
            "worst_max_over_min": round(spread[worst], 4),
            "cells_within_1_10": sum(v <= 1.10 for v in spread.values()),
            "cells": len(spread),
        }
        if fixed and mode != "fixed":
            out[mode]["wall_vs_fixed"] = round(out[mode]["median_wall_s"] / out["fixed"]["median_wall_s"], 3)
    return out


def compare_checks(runs: list[dict], work: Path) -> dict:
    """neuronexp-compare on the first two runs of each mode (A/A) and on a run against its copy ×2."""
    sys.path.insert(0, str(REPO / "bench"))
    from compare_truth import doubled_copy  # bench/ is this script's directory

    out = {}
    for mode in dict.fromkeys(r["mode"] for r in runs):
        mine = [Path(r["dir"]) for r in runs if r["mode"] == mode]
        checks = {"aa": (mine[0], mine[1])} if len(mine) > 1 else {}
        checks["double"] = (mine[0], doubled_copy(mine[0], work / f"{mine[0].name}-x2"))
        for name, (a, b) in checks.items():
            csv = work / f"{mode}-{name}.csv"
            cmd = [str(BIN / "neuronexp-compare"), str(a), str(b), "--csv", str(csv)]
            subprocess.run(cmd, capture_output=True, text=True)
            verdicts = pd.read_csv(csv)["verdict"].value_counts().to_dict()
            out[f"{mode} {name}"] = {k: int(v) for k, v in verdicts.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--adaptive", nargs="*", default=["0.05:10"], help="PRECISION:MIN_ROUNDS modes beside fixed")
    parser.add_argument("--hog", type=int, default=0, help="busy processes beside the study (under load)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--compare", action="store_true", help="A/A and ×2 compares of each mode's runs")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "adaptive")
    args = parser.parse_args()
    modes = ["fixed", *(f"p={p},r={r}" for p, r in (m.split(":") for m in args.adaptive))]
    work = Path(tempfile.mkdtemp(prefix="nx-adaptive-"))
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    started, runs = time.strftime("%Y-%m-%dT%H:%M:%S"), []
    try:
        for i in range(args.runs):
            for mode in modes[i % len(modes) :] + modes[: i % len(modes)]:
                runs.append(study(mode, work / f"{mode.replace('=', '').replace(',', '_')}-{i}", args.set))
                print(json.dumps({k: runs[-1][k] for k in ("mode", "wall_s", "load_before", "groups")}, default=str))
        checks = compare_checks(runs, work) if args.compare else {}
    finally:
        for hog in hogs:  # only the processes this script started
            hog.kill()
            hog.wait()
    report = {"started": started, "hogs": args.hog, "sets": args.set, "summary": summarize(runs), "compare": checks,
              "runs": [{k: v for k, v in r.items() if k != "dir"} for r in runs], "work": str(work)}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"study-{started.replace(':', '')}{'-hog' if args.hog else ''}.json"
    path.write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({"summary": report["summary"], "compare": checks, "file": str(path)}, indent=1, default=str))


if __name__ == "__main__":
    main()
