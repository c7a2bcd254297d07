"""The rmsnorm_sweep cells done by hand, with no neuronexp: the baseline for its overhead.

Same work per cell as neuronexp's defaults: build, first call, 10 warm-up calls, up to 100 timed calls
(5 s cap), then torch.profiler with schedule(2, 1, 1, 1), key_averages() and a Chrome trace.

    python bench/bare_sweep.py OUT_DIR "[1,128,1024]" "[1,512,2048]" ... [--variants naive,fused,compiled]
                               [--iters 100] [--warmup 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule


class Naive(torch.nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.eps, self.weight = 1e-6, torch.nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class Fused(Naive):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def run_cell(variant: str, shape: list[int], out: Path, iters: int = 100, warmup: int = 10) -> float:
    module = (Fused if variant == "fused" else Naive)(shape[-1]).to(torch.bfloat16).eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    if variant == "compiled":
        torch._dynamo.reset()
        module = torch.compile(module, backend="inductor", dynamic=False)
    with torch.inference_mode():
        module(x)
        for _ in range(warmup):
            module(x)
        samples, deadline = [], time.perf_counter() + 5.0
        while len(samples) < iters:
            t = time.perf_counter_ns()
            module(x)
            samples.append((time.perf_counter_ns() - t) / 1e3)
            if len(samples) >= min(5, iters) and time.perf_counter() > deadline:
                break
        tables = []

        def ready(prof: profile) -> None:
            tables.append(prof.key_averages())
            prof.export_chrome_trace(str(out / f"{variant}_{'x'.join(map(str, shape))}.json"))

        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=2, warmup=1, active=1, repeat=1),
            on_trace_ready=ready,
        ) as prof:
            for _ in range(4):
                module(x)
                prof.step()
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("shapes", nargs="+", type=json.loads)
    p.add_argument("--variants", default="naive,fused,compiled")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    variants = args.variants.split(",")
    results = {f"{v} {s}": run_cell(v, s, args.out, args.iters, args.warmup) for v in variants for s in args.shapes}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
