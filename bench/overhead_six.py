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


def hand(out: Path) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

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
        for name, cls in (("naive", Naive), ("fused", Fused)):
            module = cls(shape[-1]).to(torch.bfloat16).eval()
            x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
            with torch.inference_mode():
                medians[f"{name} {shape}"] = _timed(module, x)
                traces = out / f"{name}_{'x'.join(map(str, shape))}"

                def ready(prof: profile, where: Path = traces) -> None:
                    prof.key_averages()
                    prof.export_chrome_trace(f"{where}_{prof.step_num}.json")

                sched = schedule(wait=1, warmup=1, active=1, repeat=5)
                with profile(activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=ready) as prof:
                    for _ in range(15):
                        module(x)
                        prof.step()
    print(json.dumps(medians))


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


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hand", type=Path, help="run the hand-written script into this directory, and stop")
    parser.add_argument("--before", type=Path, help="src/ of another checkout, timed in the same rounds")
    args = parser.parse_args()
    if args.hand:
        hand(args.hand)
        return
    from neuronexp.host.allocator import STABLE_ENV  # the thresholds only: the script itself imports no neuronexp

    work = Path(tempfile.mkdtemp(prefix="nx-six-"))
    nx = str(Path(sys.executable).parent / "neuronexp")
    sweep = ["-m", "module=rmsnorm_naive,rmsnorm_fused", f"input.shape={','.join(SHAPES)}", "baseline=rmsnorm_naive"]
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    checkouts = {"neuronexp": plain}
    if args.before:
        checkouts["before"] = {**plain, "PYTHONPATH": str(args.before.resolve())}
    rows = []
    for i in range(args.rounds):
        row = {}
        for name in list(checkouts)[:: 1 if i % 2 == 0 else -1]:
            row[f"{name}_s"] = round(
                timed([nx, *sweep, f"hydra.sweep.dir={work / f'{name}{i}'}"], work, checkouts[name]), 2
            )
        row["hand_s"] = round(
            timed([sys.executable, __file__, "--hand", str(work / f"hand{i}")], work, {**plain, **STABLE_ENV}), 2
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
    print(json.dumps({"median_ratio": medians["ratio"], "medians": medians, "rounds": rows, "load": os.getloadavg()}))


if __name__ == "__main__":
    main()
