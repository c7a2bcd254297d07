"""neuronexp-compare on a cell with many samples (issue 15: 223k samples, goal <= 2 s).

A real one-cell sweep gives the result files; its samples are then replaced by N constructed ones in 5 rounds
(lognormal around 100 µs), and B is A x 1.03. Each round times `neuronexp-compare A B` in a fresh process and,
with `--before DIR` (the `src/` of another checkout, e.g. `git archive <commit> src conf | tar -x -C DIR`), the
same command with that code first on PYTHONPATH, alternated (paired). Peak RSS of each compare by /usr/bin/time.

    python bench/compare_scale.py [--samples 223000] [--rounds 3] [--before /tmp/nx_before/src] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from neuronexp.results import load, to_arrow
from neuronexp.results.files import write_table

BIN = Path(sys.executable).parent


def _results(root: Path, samples: int) -> tuple[Path, Path]:
    a = root / "a"
    subprocess.run(
        [
            str(BIN / "neuronexp"),
            "-m",
            "module=rmsnorm_naive",
            "input.shape=[1,8,64]",
            "backend=cpu",
            "timing.iters=20",
            f"hydra.sweep.dir={a}",
        ],
        check=True,
        capture_output=True,
        cwd=root,
    )
    b = root / "b"
    shutil.copytree(a, b, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    rng = np.random.default_rng(0)
    latency = 100 * rng.lognormal(0, 0.05, samples)
    for side, factor in ((a, 1.0), (b, 1.03)):
        res = load(side)
        run_id = str(res.cells["run_id"].iloc[0])
        table = {
            "run_id": [run_id] * samples,
            "sample": np.arange(samples),
            "latency_us": latency * factor,
            "round": np.arange(samples) * 5 // samples,
        }
        import pandas as pd

        write_table(side / "results" / "samples.parquet", to_arrow("samples", pd.DataFrame(table)))
        write_table(side / "results" / "cells.parquet", to_arrow("cells", res.cells.assign(noisy=False)))
    return a, b


def _timed(a: Path, b: Path, pythonpath: str | None) -> tuple[float, float, str]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    rss_file = a.parent / "rss.txt"
    start = time.perf_counter()
    proc = subprocess.run(
        [
            "/usr/bin/time",
            "-f",
            "%M",
            "-o",
            str(rss_file),
            sys.executable,
            "-m",
            "neuronexp.cli.compare",
            str(a),
            str(b),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0 or "slower" not in proc.stdout:
        raise SystemExit(f"compare failed ({proc.returncode}): {proc.stderr[-500:]}{proc.stdout[-500:]}")
    return wall, int(rss_file.read_text().split()[-1]) / 1024, proc.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=223_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before")
    parser.add_argument("--json")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        a, b = _results(Path(tmp), args.samples)
        runs: dict[str, list[float]] = {"now": [], **({"before": []} if args.before else {})}
        verdict = ""
        peaks: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name in runs:
                wall, rss, verdict = _timed(a, b, args.before if name == "before" else None)
                runs[name].append(wall)
                peaks[name].append(rss)
                print(f"{name}: {wall:.2f} s, peak RSS {rss:.0f} MiB")
    out = {
        "samples": args.samples,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "verdict": verdict,
        **{f"{k}_s": v for k, v in runs.items()},
        **{f"{k}_median_s": statistics.median(v) for k, v in runs.items()},
        **{f"{k}_peak_rss_mib": max(v) for k, v in peaks.items()},
    }
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
