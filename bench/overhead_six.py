"""neuronexp's overhead over a hand-written script doing the same measurement work (issue 35): the six-cell RMSNorm
sweep (naive and fused `torch.rms_norm` over three shapes, bfloat16), whole processes, start-up included.

The script (`hand` below, run as `python bench/overhead_six.py --hand OUT`) does what neuronexp's defaults do per cell,
with no neuronexp: the same thread count (torch's less one where it takes every CPU), build, first call, 10 warm-up
calls, 100 timed samples in 20 rounds with at least 0.5 s of timing (5 s at most), then torch.profiler with five
one-step cycles (schedule 1/1/1 x 5), key_averages() and a Chrome trace per cycle; and glibc's malloc with the same
two thresholds (set in its environment, read at start-up) as neuronexp's default `allocator=stable`. Without them
a call can fault its output tensor in again each time, in some processes and not others (docs/methodology.md, "Host
allocation"), and the script's time would say how its process drew, not what neuronexp adds. It does not pair,
relocate inputs, check outputs, count bytes or write tables: that is neuronexp's own work, and part of what is
measured.

    python bench/overhead_six.py [--rounds 3]      # alternates neuronexp and the script, prints the ratios
    python bench/overhead_six.py --before DIR/src  # and another checkout's src/ (first on PYTHONPATH) in each round,
                                                   # before or after this one by turns: the change, paired
    python bench/overhead_six.py --set timing.precision=null --method paired   # issue 47's check

`--now DIR/src` times that checkout as "neuronexp" (by default the installed one, PYTHONPATH dropped); `--set` adds an
override to its runs, not to --before's, which may not know the key (issue 47 asks for the fixed count,
`timing.precision=null`: the same timing work every run). `--method paired` makes the script do neuronexp's timing
method as well (issue 47: "a hand-written script doing the same timing work"): each shape's two cells timed together,
call by call in a fresh random order, 100 pairs in 20 rounds (at least 0.5 s a cell), each round after moving the
inputs to fresh storage behind a random spacer and one warm call of each, and ending with the host reference's two
workloads (25 adds of 16 floats, 3 multiplies over 16 MiB, one warm call each). What is then left between the two is
neuronexp's own: its start, the fork, the output check, the tables and files, the aggregation. The default (`--method
plain`) is the script of issue 35.
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

SHAPES = ["[1,128,1024]", "[1,512,2048]", "[1,1024,4096]"]


def hand(out: Path, paired: bool = False) -> None:
    import torch

    cpus = len(os.sched_getaffinity(0))
    if cpus > 1 and torch.get_num_threads() >= cpus:
        torch.set_num_threads(cpus - 1)

    class Naive(torch.nn.Module):
        def __init__(self, hidden: int) -> None:
            super().__init__()
            self.eps, self.weight = 1e-6, torch.nn.Parameter(torch.ones(hidden))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight

    class Fused(Naive):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.rms_norm(x, (x.shape[-1],), self.weight, self.eps)

    out.mkdir(parents=True, exist_ok=True)
    medians = {}
    for shape in (json.loads(s) for s in SHAPES):
        pair = [cls(shape[-1]).to(torch.bfloat16).eval() for cls in (Naive, Fused)]
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
        with torch.inference_mode():
            times = _paired(pair, x) if paired else [_timed(module, x) for module in pair]
            medians.update(zip((f"naive {shape}", f"fused {shape}"), times))
            for name, module in zip(("naive", "fused"), pair):
                _profiled(module, x, out / f"{name}_{'x'.join(map(str, shape))}")
    print(json.dumps(medians))


def _profiled(module, x, traces: Path) -> None:
    """Five one-step profile cycles, key_averages() and a Chrome trace each (neuronexp's default profile)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    def ready(prof: profile) -> None:
        prof.key_averages()
        prof.export_chrome_trace(f"{traces}_{prof.step_num}.json")

    sched = schedule(wait=1, warmup=1, active=1, repeat=5)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=ready) as prof:
        for _ in range(15):
            module(x)
            prof.step()


def _timed(module, x, warmup: int = 10, iters: int = 100, rounds: int = 20) -> float:
    module(x)
    for _ in range(warmup):
        module(x)
    per_round, samples, start = iters // rounds, [], time.perf_counter()
    while len(samples) < iters or time.perf_counter() - start < 0.5:
        for _ in range(per_round):
            t = time.perf_counter_ns()
            module(x)
            samples.append((time.perf_counter_ns() - t) / 1e3)
        if time.perf_counter() - start > 5.0:
            break
    return statistics.median(samples)


def _paired(modules, x, warmup: int = 10, iters: int = 100, rounds: int = 20) -> list[float]:
    """neuronexp's timing method by hand (cell.timing, docs/timing.md "Paired timing" and "Rounds")."""
    import random

    import torch

    for m in modules:
        m(x)
    for _ in range(warmup):
        for m in modules:
            m(x)
    small, small_out = torch.ones(16), torch.empty(16)
    large, large_out = torch.ones(4 * 1024 * 1024), torch.empty(4 * 1024 * 1024)
    samples: list[list[float]] = [[] for _ in modules]
    per_round, share = iters // rounds, 0.5 * len(modules) / rounds
    for _ in range(rounds):
        spacer = torch.empty(random.randrange(2**15) * 16)  # 0-2 MiB of float32: the inputs land elsewhere
        x = x.clone()
        del spacer
        for m in modules:  # one warm call after the move
            m(x)
        start, taken = time.perf_counter(), 0
        while taken < per_round or time.perf_counter() - start < share:
            for j in random.sample(range(len(modules)), len(modules)):
                t = time.perf_counter_ns()
                modules[j](x)
                samples[j].append((time.perf_counter_ns() - t) / 1e3)
            taken += 1
        for fn, calls in (
            (lambda: torch.add(small, 1.0, out=small_out), 25),
            (lambda: torch.mul(large, 1.0001, out=large_out), 3),
        ):
            for _ in range(calls + 1):
                t = time.perf_counter_ns()
                fn()
                _ = time.perf_counter_ns() - t
    return [statistics.median(s) for s in samples]


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hand", type=Path, help="run the hand-written script into this directory, and stop")
    parser.add_argument("--before", type=Path, help="src/ of another checkout, timed in the same rounds")
    parser.add_argument("--now", type=Path, help="src/ of the checkout to time as neuronexp (default: the installed)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override for neuronexp")
    parser.add_argument("--method", choices=["plain", "paired"], default="plain", help="the script's timing")
    args = parser.parse_args()
    if args.hand:
        hand(args.hand, args.method == "paired")
        return
    from neuronexp.host.allocator import STABLE_ENV  # the thresholds only: the script itself imports no neuronexp

    work = Path(tempfile.mkdtemp(prefix="nx-six-"))
    nx = str(Path(sys.executable).parent / "neuronexp")
    sweep = ["-m", "module=rmsnorm_naive,rmsnorm_fused", f"input.shape={','.join(SHAPES)}", "baseline=rmsnorm_naive"]
    extra = {"neuronexp": args.set}  # --before's checkout may not know the keys: it runs as it is
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    checkouts = {"neuronexp": {**plain, "PYTHONPATH": str(args.now.resolve())} if args.now else plain}
    if args.before:
        checkouts["before"] = {**plain, "PYTHONPATH": str(args.before.resolve())}
    rows = []
    for i in range(args.rounds):
        row = {}
        for name in list(checkouts)[:: 1 if i % 2 == 0 else -1]:
            row[f"{name}_s"] = round(
                timed(
                    [nx, *sweep, *extra.get(name, []), f"hydra.sweep.dir={work / f'{name}{i}'}"], work, checkouts[name]
                ),
                2,
            )
        row["hand_s"] = round(
            timed(
                [sys.executable, __file__, "--hand", str(work / f"hand{i}"), "--method", args.method],
                work,
                {**plain, **STABLE_ENV},
            ),
            2,
        )
        row.update(
            {
                f"ratio_{name}" if name != "neuronexp" else "ratio": round(row[f"{name}_s"] / row["hand_s"], 3)
                for name in checkouts
            }
        )
        rows.append(row)
        print(json.dumps(rows[-1]), flush=True)
    medians = {key: statistics.median(r[key] for r in rows) for key in rows[0] if key.startswith("ratio")}
    report = {"median_ratio": medians["ratio"], "medians": medians, "rounds": rows, "load": os.getloadavg()}
    print(json.dumps({**report, "set": args.set, "method": args.method}))


if __name__ == "__main__":
    main()
