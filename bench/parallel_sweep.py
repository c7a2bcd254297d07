"""Wall time of parallel sweeps (issues 6, 15): 1 vs 2 device slots on compile-heavy cells, and per-cell launcher
overhead.

    python bench/parallel_sweep.py [--reps 3] [--caches fresh|off] [--only speedup|overhead] [--measure-s S]
                                   [--launchers NAME ...] [--before SRC] [--out FILE.json]

Every run is the `neuronexp` console script as a user types it, in a fresh working directory, timed end to end
(process start to exit), with an empty TorchInductor cache directory: each compiled cell pays its compile as on
a first run on a new machine. `--caches off` also turns Inductor's caches off within the run
(TORCHINDUCTOR_FORCE_DISABLE_CACHES=1), so that no process profits from another's on-disk artefacts.

1. speedup: the same sweep of `rmsnorm_compiled` over 6 shapes through the basic launcher and
   `hydra/launcher=parallel launcher.devices=1|2` (a process of its own per cell, on its slot); median of --reps
   runs, and the 1 -> 2 slot ratio of each repetition (its two runs are back to back). `--measure-s S` gives
   every cell an S-second timing pass on top of its compile (cells with real work of their own).
2. overhead: a trivial cell (`rmsnorm_naive` [1,8,64], profiler=quick, 5 timed calls) swept over 1 and over 6
   shapes through basic, parallel (1 slot) and submitit_local (1 slot); fixed cost = wall(1 cell), per-cell
   cost = (wall(6 cells) - wall(1 cell)) / 5; median of --reps runs.

`--before SRC` (src/ of an older checkout, e.g. from `git archive`) runs every row with that code too
(PYTHONPATH=SRC), alternating before and after within each repetition so that both see the same load;
`--after SRC` measures another checkout than the installed one the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import pandas as pd

COMPILED_SHAPES = ["[1,128,1024]", "[1,256,1024]", "[1,512,1024]", "[1,128,2048]", "[1,256,2048]", "[1,512,2048]"]
TRIVIAL_SHAPES = [f"[1,8,{w}]" for w in (64, 72, 80, 88, 96, 104)]
QUICK = ["profiler=quick", "timing.warmup=1", "timing.iters=5", "timing.min_iters=3"]
LAUNCHERS = {
    "basic": [],
    "parallel, 1 slot": ["hydra/launcher=parallel", "launcher.devices=1"],
    "parallel, 2 slots": ["hydra/launcher=parallel", "launcher.devices=2"],
    "submitit_local, 1 slot": ["hydra/launcher=submitit_local", "launcher.devices=1"],
}


def neuronexp() -> str:
    return (
        str(Path(sys.executable).parent / "neuronexp")
        if (Path(sys.executable).parent / "neuronexp").exists()
        else "neuronexp"
    )


CACHES = "fresh"


def run(args: list[str], src: str | None = None) -> dict:
    """One sweep in a fresh directory (with the code in `src` when given); wall seconds and what its table says."""
    work = Path(tempfile.mkdtemp(prefix="nx-par-"))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(work / "inductor"))
    if src:
        env["PYTHONPATH"] = src
    if CACHES == "off":
        env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
    env.pop("HYDRA_FULL_ERROR", None)
    cmd = [neuronexp(), "-m", *args, f"hydra.sweep.dir={work / 'sweep'}", f"launcher.lock_dir={work / 'locks'}"]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    cells = pd.read_parquet(work / "sweep" / "results" / "cells.parquet")
    shutil.rmtree(work, ignore_errors=True)
    return {
        "wall_s": wall,
        "load_1min_before": load,
        "cells": len(cells),
        "ok": int((cells["status"] == "ok").sum()),
        "placements": sorted(set(cells["placement"])),
        "first_call_s_median": float(cells["first_call_s"].median()),
    }


def alternated(rows: dict[str, list[str]], reps: int, codes: dict[str, str | None]) -> dict[str, dict]:
    """Every row with every code, `reps` times, in the order rep > code > row; medians per (code, row)."""
    runs: dict[str, list[dict]] = {}
    for _ in range(reps):
        for code, src in codes.items():
            for name, args in rows.items():
                r = run(args, src)
                runs.setdefault(f"{code} | {name}", []).append(r)
                print(f"{code} | {name}: {r['wall_s']:.1f} s (load {r['load_1min_before']:.1f})", flush=True)
    return {k: {"wall_s_median": statistics.median(r["wall_s"] for r in v), "runs": v} for k, v in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--caches", choices=["fresh", "off"], default="fresh")
    parser.add_argument("--only", choices=["speedup", "overhead"])
    parser.add_argument("--launchers", nargs="*", choices=list(LAUNCHERS), help="a subset of the rows")
    parser.add_argument(
        "--measure-s",
        type=float,
        default=0.0,
        help="give each compiled cell a timing pass of this many seconds (timing.max_seconds)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "parallel_sweep.json")
    parser.add_argument("--before", help="src/ of an older checkout: every row runs with it too, alternated")
    parser.add_argument("--after", help="src/ of the checkout to measure (default: the installed neuronexp)")
    opts = parser.parse_args()
    global CACHES
    CACHES = opts.caches
    codes = {"before": opts.before, "after": opts.after} if opts.before else {"after": opts.after}
    report: dict = {
        "machine": {
            "cpu": _cpu(),
            "cores": len(os.sched_getaffinity(0)),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "versions": {
            p: version(p)
            for p in ("torch", "hydra-core", "hydra-joblib-launcher", "hydra-submitit-launcher", "joblib", "submitit")
        },
        "caches": opts.caches,
        "reps": opts.reps,
        "codes": codes,
        "speedup": {},
        "overhead": {},
    }
    compiled = ["module=rmsnorm_compiled", f"input.shape={','.join(COMPILED_SHAPES)}", *QUICK]
    if opts.measure_s:
        compiled += ["timing.iters=1000000", f"timing.max_seconds={opts.measure_s}"]
    report["measure_s"] = opts.measure_s
    keep = set(opts.launchers or LAUNCHERS)
    if opts.only != "overhead":
        rows = {n: compiled + LAUNCHERS[n] for n in ("basic", "parallel, 1 slot", "parallel, 2 slots") if n in keep}
        report["speedup"] = alternated(rows, opts.reps, codes)
        for code in codes:
            one, two = (report["speedup"].get(f"{code} | parallel, {n}") for n in ("1 slot", "2 slots"))
            if one and two:
                pairs = [a["wall_s"] / b["wall_s"] for a, b in zip(one["runs"], two["runs"])]
                report["speedup"][f"{code} | 1 -> 2 slots"] = {
                    "ratio_of_medians": one["wall_s_median"] / two["wall_s_median"],
                    "ratio_per_rep": pairs,
                }
                print(
                    f"{code}: 1 -> 2 slots {one['wall_s_median'] / two['wall_s_median']:.2f}x (per rep: "
                    f"{', '.join(f'{p:.2f}' for p in pairs)})",
                    flush=True,
                )
    if opts.only != "speedup":
        for name in [n for n in ("basic", "parallel, 1 slot", "submitit_local, 1 slot") if n in keep]:
            trivial = ["module=rmsnorm_naive", *QUICK] + LAUNCHERS[name]
            sweeps = alternated(
                {
                    "1 cell": trivial + [f"input.shape={TRIVIAL_SHAPES[0]}"],
                    "6 cells": trivial + [f"input.shape={','.join(TRIVIAL_SHAPES)}"],
                },
                opts.reps,
                codes,
            )
            for code in codes:
                one, six = sweeps[f"{code} | 1 cell"], sweeps[f"{code} | 6 cells"]
                report["overhead"][f"{code} | {name}"] = {
                    "one_cell": one,
                    "six_cells": six,
                    "per_cell_s": (six["wall_s_median"] - one["wall_s_median"]) / 5,
                }
                print(
                    code,
                    name,
                    "1 cell",
                    round(one["wall_s_median"], 1),
                    "s; per extra cell",
                    round(report["overhead"][f"{code} | {name}"]["per_cell_s"], 2),
                    "s",
                    flush=True,
                )
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written {opts.out}")


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
