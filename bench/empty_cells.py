"""What a cell that does nothing costs (issue 47, item 4): sweeps of 2 and of 24 near-empty cells (naive and fused
RMSNorm over [1,8,k], 5 samples, profiler=quick), whole processes, start-up included, alternating; the cost of a cell is
(wall of 24 - wall of 2) / 22, paired within each round.

Each cell is its own process (no baseline: no comparison group), as a sweep of a thousand shapes would run them, and
asks for 5 samples and no minimum time (timing.min_seconds=0): what is left is neuronexp's own per-cell work, the
fork and the method around the samples (the host reference each round, the profile, the limits, the files). With
--min-seconds 0.5 (the default's minimum sampling time) each cell also samples for half a second.

    python bench/empty_cells.py [--rounds 3] [--before DIR/src] [--min-seconds 0]

--before times another checkout's src/ (first on PYTHONPATH) in the same rounds, before or after this one by turns.
This checkout is the neuronexp on PATH with this process's PYTHONPATH (set it to a worktree's src/ to time that one).
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

BIN = Path(sys.executable).parent


def sweep(n: int, out: Path, env: dict[str, str], min_seconds: float) -> float:
    shapes = ",".join(f"[1,8,{64 + i}]" for i in range(n // 2))
    cmd = [
        str(BIN / "neuronexp"),
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        f"input.shape={shapes}",
        "timing.iters=5",
        "timing.warmup=1",
        f"timing.min_seconds={min_seconds}",
        "profiler=quick",
        f"hydra.sweep.dir={out}",
    ]
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out.parent)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="src/ of another checkout, timed in the same rounds")
    parser.add_argument("--min-seconds", type=float, default=0.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nx-empty-"))
    checkouts = {"now": dict(os.environ)}
    if args.before:
        checkouts["before"] = {**os.environ, "PYTHONPATH": str(args.before.resolve())}
    rows = []
    for i in range(args.rounds):
        row: dict = {"load": round(os.getloadavg()[0], 2)}
        for name in list(checkouts)[:: 1 if i % 2 == 0 else -1]:
            two = sweep(2, work / f"{name}{i}_2", checkouts[name], args.min_seconds)
            many = sweep(24, work / f"{name}{i}_24", checkouts[name], args.min_seconds)
            per_cell = round((many - two) / 22, 3)
            row[name] = {"2_cells_s": round(two, 2), "24_cells_s": round(many, 2), "per_cell_s": per_cell}
        rows.append(row)
        print(json.dumps(row), flush=True)
    medians = {name: statistics.median(r[name]["per_cell_s"] for r in rows) for name in checkouts}
    print(json.dumps({"median_per_cell_s": medians, "min_seconds": args.min_seconds, "rounds": rows}))


if __name__ == "__main__":
    main()
