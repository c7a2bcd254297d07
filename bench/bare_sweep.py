"""The rmsnorm_sweep cells done by hand, with no neuronexp: the baseline for its overhead.

Same work per cell as neuronexp's defaults: build, first call, 10 warm-up calls, up to 100 timed calls
(5 s cap), then torch.profiler with schedule(2, 1, 1, 1), key_averages() and a Chrome trace.

    python bench/bare_sweep.py OUT_DIR "[1,128,1024]" "[1,512,2048]" ...
"""

from __future__ import annotations

import json
import statistics
import sys
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


def run_cell(variant: str, shape: list[int], out: Path) -> float:
    module = (Fused if variant == "fused" else Naive)(shape[-1]).to(torch.bfloat16).eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    if variant == "compiled":
        torch._dynamo.reset()
        module = torch.compile(module, backend="inductor", dynamic=False)
    with torch.inference_mode():
        module(x)
        for _ in range(10):
            module(x)
        samples, deadline = [], time.perf_counter() + 5.0
        while len(samples) < 100:
            t = time.perf_counter_ns()
            module(x)
            samples.append((time.perf_counter_ns() - t) / 1e3)
            if len(samples) >= 5 and time.perf_counter() > deadline:
                break
        tables = []

        def ready(prof: profile) -> None:
            tables.append(prof.key_averages())
            prof.export_chrome_trace(str(out / f"{variant}_{'x'.join(map(str, shape))}.json"))

        with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=2, warmup=1, active=1, repeat=1), on_trace_ready=ready) as prof:
            for _ in range(4):
                module(x)
                prof.step()
    return statistics.median(samples)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    shapes = [json.loads(s) for s in sys.argv[2:]]
    results = {f"{v} {s}": run_cell(v, s, out) for v in ("naive", "fused", "compiled") for s in shapes}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
