"""Wall time of `neuronexp +experiment=rmsnorm_sweep` vs bench/bare_sweep.py on the same cells (issue 3).

Each round runs both, back to back, as whole processes (start-up included: that is what a user waits
for), and records the ratio; the report is the median over rounds. The first, untimed run warms the
Inductor on-disk cache so both sides pay the same compile cost.

Then the overhead is split into a fixed part and a part per cell, from sweeps of cells with almost no
work (tiny shapes, 5 samples): the wall time of 2 and of 24 such cells, for both runners.

    python bench/sweep_overhead.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]


def experiment_shapes() -> list[str]:
    cfg = OmegaConf.load(REPO / "conf" / "experiment" / "rmsnorm_sweep.yaml")
    text = str(cfg.hydra.sweeper.params["input.shape"])
    return ["[" + part.strip("[] ") + "]" for part in text.split("],")]


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    neuronexp = str(Path(sys.executable).parent / "neuronexp")
    shapes = experiment_shapes()
    work = Path(tempfile.mkdtemp(prefix="nx-overhead-"))
    nx_cmd = lambda i: [neuronexp, "+experiment=rmsnorm_sweep", f"hydra.sweep.dir={work / f'nx{i}'}"]  # noqa: E731
    bare_cmd = lambda i: [sys.executable, str(REPO / "bench" / "bare_sweep.py"), str(work / f"bare{i}"), *shapes]  # noqa: E731
    timed(nx_cmd("warm"), work)
    rows = []
    for i in range(args.rounds):
        nx, bare = timed(nx_cmd(i), work), timed(bare_cmd(i), work)
        rows.append((nx, bare, nx / bare))
        print(f"round {i}: neuronexp {nx:.1f} s, bare {bare:.1f} s, ratio {nx / bare:.3f}", flush=True)
    ratios = [r[2] for r in rows]
    print(
        f"median ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
        f"median wall neuronexp {statistics.median(r[0] for r in rows):.1f} s, "
        f"bare {statistics.median(r[1] for r in rows):.1f} s"
    )
    print(
        f"cells: 3 variants x {shapes}; torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    decompose(neuronexp, work, args.rounds)
    shutil.rmtree(work, ignore_errors=True)


def decompose(neuronexp: str, work: Path, rounds: int) -> None:
    """Fixed and per-cell cost of each runner, from 2- and 24-cell sweeps of near-empty cells."""

    def tiny(n: int) -> list[str]:
        return [f"[1,8,{64 + i}]" for i in range(n // 2)]

    def nx(n: int, i: int) -> list[str]:
        return [
            neuronexp,
            "-m",
            "module=rmsnorm_naive,rmsnorm_fused",
            "input.shape=" + ",".join(tiny(n)),
            "timing.iters=5",
            "timing.warmup=1",
            f"hydra.sweep.dir={work / f'tiny{n}_{i}'}",
        ]

    def bare(n: int, i: int) -> list[str]:
        return [
            sys.executable,
            str(REPO / "bench" / "bare_sweep.py"),
            str(work / f"baretiny{n}_{i}"),
            *tiny(n),
            "--variants",
            "naive,fused",
            "--iters",
            "5",
            "--warmup",
            "1",
        ]

    for name, cmd in (("neuronexp", nx), ("bare", bare)):
        t2 = statistics.median(timed(cmd(2, i), work) for i in range(rounds))
        t24 = statistics.median(timed(cmd(24, i), work) for i in range(rounds))
        per_cell = (t24 - t2) / 22
        print(
            f"{name}: 2 cells {t2:.2f} s, 24 cells {t24:.2f} s -> {per_cell * 1000:.0f} ms per cell, "
            f"{t2 - 2 * per_cell:.2f} s fixed"
        )


if __name__ == "__main__":
    main()
