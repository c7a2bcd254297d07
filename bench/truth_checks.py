"""The checks behind "numbers you can trust" (issue 9, point 7), each through the console scripts as a user runs
them, with the machine's load recorded before and after. Results: one JSON file per check in --out.

    python bench/truth_checks.py walltime [--src PATH] [--runs 2]  # the main study's wall time (PATH: another tree)
    python bench/truth_checks.py aa                 # the main study twice, back to back, compared: 0 faster/slower?
    python bench/truth_checks.py ab                 # naive vs a known-slower variant (bench/layers): slower everywhere?
    python bench/truth_checks.py timer [--runs 5]   # neuronexp's median vs torch.utils.benchmark, same op and allocator

Every check waits first (up to --wait-s) for the 1-minute load average to fall below --max-load. --set KEY=VALUE
(repeatable) adds an override to every neuronexp command of the check, e.g. --set threads=1.
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

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STUDY = ["+experiment=rmsnorm_sweep"]
SHAPES = "input.shape=[1,128,1024],[1,512,2048],[1,1024,4096],[1,2048,4096]"
TIMER_CELL = ["module=rmsnorm_naive", "input.shape=[1,1024,2048]", "input.dtype=float32", "backend=cpu"]


def load() -> float:
    return round(os.getloadavg()[0], 2)


def wait_quiet(max_load: float, wait_s: float) -> float:
    deadline = time.monotonic() + wait_s
    while load() >= max_load and time.monotonic() < deadline:
        time.sleep(10)
    return load()


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, proc.stdout


def compare_counts(a: Path, b: Path, work: Path, *extra: str) -> dict:
    csv = work / f"cmp-{a.name}-{b.name}.csv"
    _, out = run([str(BIN / "neuronexp-compare"), str(a), str(b), "--csv", str(csv), *extra], cwd=work)
    cells = pd.read_csv(csv)
    return {
        "verdicts": cells["verdict"].value_counts().to_dict(),
        "output": out,
        "cells": cells[
            [
                "cell",
                "median_a_us",
                "median_b_us",
                "ratio",
                "ci_low",
                "ci_high",
                "q_value",
                "verdict",
                "rounds_a",
                "rounds_b",
                "noisy",
            ]
        ].to_dict("records"),
    }


def noisy_cells(sweep: Path) -> list[str]:
    cells = pd.read_parquet(sweep / "results" / "cells.parquet")
    return [f"{r.module} {r.input_shape}: {r.noise}" for r in cells.itertuples() if r.noisy]


def walltime(args, work: Path) -> dict:
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = str(Path(args.src) / "src")
    runs = []
    for i in range(args.runs):
        before = wait_quiet(args.max_load, args.wait_s)
        wall, _ = run(
            [str(BIN / "neuronexp"), *STUDY, *args.set, f"hydra.sweep.dir={work / f'study{i}'}"], cwd=work, env=env
        )
        runs.append({"wall_s": round(wall, 1), "load_before": before, "load_after": load()})
        print(runs[-1], flush=True)
    return {"src": args.src or str(REPO), "runs": runs, "median_wall_s": statistics.median(r["wall_s"] for r in runs)}


def aa(args, work: Path) -> dict:
    before = wait_quiet(args.max_load, args.wait_s)
    sweeps = []
    for name in ("A", "A2"):
        wall, _ = run([str(BIN / "neuronexp"), *STUDY, *args.set, f"hydra.sweep.dir={work / name}"], cwd=work)
        sweeps.append({"name": name, "wall_s": round(wall, 1), "load_after": load(), "noisy": noisy_cells(work / name)})
    out = {"load_before": before, "sweeps": sweeps, **compare_counts(work / "A", work / "A2", work)}
    if args.keep:
        md = Path(args.keep)
        run([str(BIN / "neuronexp-compare"), str(work / "A"), str(work / "A2"), "--markdown", str(md)], cwd=work)
    return out


def ab(args, work: Path) -> dict:
    before = wait_quiet(args.max_load, args.wait_s)
    layer = ["module._target_=extra_pass.ExtraPassRMSNorm"]
    sweeps = []
    for name, module in (("A", ["module=rmsnorm_naive"]), ("B", layer)):
        cmd = [str(BIN / "neuronexp"), "-m", *module, SHAPES, *args.set, f"hydra.sweep.dir={work / name}"]
        wall, _ = run(cmd, cwd=REPO / "bench" / "layers")
        sweeps.append({"name": name, "wall_s": round(wall, 1), "load_after": load(), "noisy": noisy_cells(work / name)})
    return {
        "load_before": before,
        "sweeps": sweeps,
        **compare_counts(work / "A", work / "B", work, "--ignore", "module,module._target_"),
    }


TIMER_SCRIPT = """
import json, sys
from neuronexp.host import allocator
allocator.apply("stable")
import torch
from torch.utils import benchmark
from neuronexp.modules import NaiveRMSNorm
threads = int(sys.argv[1])
torch.set_num_threads(threads)
torch.manual_seed(0)
m, x = NaiveRMSNorm(2048).eval(), torch.randn(1, 1024, 2048)
with torch.inference_mode():
    t = benchmark.Timer(stmt="m(x)", globals={"m": m, "x": x}, num_threads=threads)
    meas = t.blocked_autorange(min_run_time=2.0)
print(json.dumps({"median_us": meas.median * 1e6, "iqr_us": meas.iqr * 1e6, "blocks": len(meas.raw_times)}))
"""


def timer(args, work: Path) -> dict:
    """Interleaved fresh processes: neuronexp's cell, then a torch.utils.benchmark script, --runs times."""
    pairs = []
    for i in range(args.runs):
        before = wait_quiet(args.max_load, args.wait_s)
        out = work / f"nx{i}"
        run(
            [str(BIN / "neuronexp"), *TIMER_CELL, f"threads={args.threads}", *args.set, f"hydra.run.dir={out}"],
            cwd=work,
        )
        cell = pd.read_parquet(out / "cells.parquet").iloc[0]
        _, text = run([sys.executable, "-c", TIMER_SCRIPT, str(args.threads)], cwd=work)
        t = json.loads(text.strip().splitlines()[-1])
        pairs.append(
            {
                "load_before": before,
                "neuronexp_us": float(cell["latency_median_us"]),
                "timer_us": t["median_us"],
                "neuronexp_noisy": bool(cell["noisy"]),
                "round_spread": float(cell["round_spread"]),
            }
        )
        print(pairs[-1], flush=True)
    nx, tm = statistics.median(p["neuronexp_us"] for p in pairs), statistics.median(p["timer_us"] for p in pairs)
    spread = {k: max(p[k] for p in pairs) / min(p[k] for p in pairs) for k in ("neuronexp_us", "timer_us")}
    return {
        "cell": TIMER_CELL,
        "threads": args.threads,
        "pairs": pairs,
        "neuronexp_median_us": nx,
        "timer_median_us": tm,
        "ratio": nx / tm,
        # The host drifts ±25% over tens of seconds here, alike for both processes of a pair: each pair's ratio
        # cancels it, and their median is the bias of one method against the other.
        "pair_ratio_median": statistics.median(p["neuronexp_us"] / p["timer_us"] for p in pairs),
        "neuronexp_max_min": spread["neuronexp_us"],
        "timer_max_min": spread["timer_us"],
    }


def common_args(parser: argparse.ArgumentParser, out: Path) -> None:
    """The flags every check script shares (this one and bench/paired_truth.py)."""
    parser.add_argument("--max-load", type=float, default=0.5)
    parser.add_argument("--wait-s", type=float, default=600)
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--tag", default="")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override for every neuronexp run"
    )


def run_check(args: argparse.Namespace, check, hidden: tuple[str, ...]) -> dict:
    """Run `check(args, workdir)` in a temporary directory, write its JSON to --out, print it less `hidden`."""
    with tempfile.TemporaryDirectory(prefix=f"nx-{args.check}-") as tmp:
        started = time.strftime("%Y-%m-%dT%H:%M:%S")
        result = {
            "check": args.check,
            "started": started,
            "load_start": load(),
            "overrides": args.set,
            **check(args, Path(tmp)),
            "load_end": load(),
        }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{args.check}{'-' + args.tag if args.tag else ''}-{started.replace(':', '')}.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: v for k, v in result.items() if k not in hidden}, indent=1, default=str))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=["walltime", "aa", "ab", "timer"])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--src", help="walltime: run this source tree's neuronexp instead (PYTHONPATH)")
    parser.add_argument("--keep", help="aa: also write the comparison as Markdown here")
    common_args(parser, REPO / "bench" / "results" / "truth")
    args = parser.parse_args()
    result = run_check(args, globals()[args.check], ("cells", "output", "pairs"))
    print(result.get("output", ""))


if __name__ == "__main__":
    main()
