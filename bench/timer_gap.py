"""Where neuronexp's median and torch.utils.benchmark.Timer's part (issue 47): the same call, in one process and in
alternating fresh processes, each figure also recomputed the other method's way.

    python bench/timer_gap.py inproc [--reps 8]   # one process, alternating: what differs is the method alone
    python bench/timer_gap.py procs [--runs 5]     # fresh processes, alternating: neuronexp's CLI and a Timer script
    python bench/timer_gap.py parts [--reps 8]     # one process: neuronexp's pass with each of its parts switched off

The cells: naive and fused RMSNorm, float32 [1,1024,2048], one thread (this VM's default: docs/methodology.md,
"Threads"), stable malloc in both. `Timer.blocked_autorange` times blocks of `number` back-to-back calls (10 for a
millisecond call) and reports the median of the block means; neuronexp times each call and reports the median of its
round medians. A block mean is a mean: every slow call of the block is in it, so on a right-skewed distribution of
call times it sits above the median call. So each of neuronexp's runs is also summarised as Timer would: its samples,
in order, cut into blocks of Timer's `number` consecutive calls, the median of their means (`as_blocks`). In
`inproc` a third method times plain back-to-back calls with no rounds, no input moves and no warm call per round
(`plain`), summarised both ways, to separate neuronexp's rounds from the statistic. Ratios are taken within each
repetition (the host moves between them) and their median reported. One JSON file in --out.

`parts` finds which part of neuronexp's pass makes the gap: in each repetition, in a fresh random order, Timer, plain
calls, neuronexp's pass as it is, and the pass with one part switched off each time — the host reference workloads
(`no_reference`), the garbage collector kept on (`gc_on`), one round instead of 20 (`one_round`: no warm call between
rounds), and all three (`bare`: back-to-back calls through time_calls). Then placement: neuronexp's pass with the
input moved each round as the CLI does (`relocated`: timing.relocate, cell.build.Built.relocate), and Timer at
PLACEMENTS placements of the input, each behind a random spacer as relocate makes them (`timer_placed`: the median
over placements; `timer_placed_low`/`_high`: the fastest and slowest placement's figure).
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

import numpy as np

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
CELLS = {"naive": "rmsnorm_naive", "fused": "rmsnorm_fused"}
SHAPE = [1, 1024, 2048]


def as_blocks(samples: list[float], number: int) -> float:
    """Timer's statistic over per-call samples: blocks of `number` consecutive calls, the median of the block means
    (a tail shorter than a block is left out, as Timer never times a part block)."""
    arr = np.asarray(samples, dtype=float)
    whole = len(arr) // number * number
    return float(np.median(arr[:whole].reshape(-1, number).mean(axis=1))) if whole else float("nan")


def _module(name: str):
    import torch

    from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm

    torch.manual_seed(0)
    module = (NaiveRMSNorm if name == "naive" else FusedRMSNorm)(SHAPE[-1]).eval()
    return module, torch.randn(*SHAPE)


def _timer(module, x, min_run_time: float) -> tuple[float, int]:
    from torch.utils import benchmark

    t = benchmark.Timer(stmt="m(x)", globals={"m": module, "x": x}, num_threads=1)
    m = t.blocked_autorange(min_run_time=min_run_time)
    return m.median * 1e6, m.number_per_run


def _plain(module, x, seconds: float) -> list[float]:
    samples, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter_ns()
        module(x)
        samples.append((time.perf_counter_ns() - start) / 1e3)
    return samples


def inproc(args: argparse.Namespace) -> dict:
    import torch

    from neuronexp.backends.cpu.cpu_backend import CpuBackend
    from neuronexp.cell.timing import time_calls
    from neuronexp.config import TimingConfig
    from neuronexp.host import allocator

    allocator.apply("stable")
    torch.set_num_threads(1)
    out = {}
    for name in CELLS:
        module, x = _module(name)
        reps = []
        call = module.__call__
        with torch.inference_mode():
            for _ in range(args.reps):
                (stats,) = time_calls([lambda m=call, x=x: m(x)], CpuBackend(), TimingConfig(precision=None))
                timer_us, number = _timer(module, x, 0.5)
                plain = _plain(module, x, 0.5)
                reps.append(
                    {
                        "timer_us": timer_us,
                        "number": number,
                        "neuronexp_us": stats.median_us,
                        "neuronexp_as_blocks_us": as_blocks(stats.samples_us, number),
                        "neuronexp_mean_us": float(np.mean(stats.samples_us)),
                        "plain_median_us": float(np.median(plain)),
                        "plain_as_blocks_us": as_blocks(plain, number),
                    }
                )
        out[name] = {"reps": reps, **_ratios(reps)}
        print(json.dumps({name: _ratios(reps)}), flush=True)
    return out


def _pass(module, x, part: str) -> float:
    """neuronexp's median for one call with `part` of its pass switched off (`parts`)."""
    import contextlib
    from unittest import mock

    from neuronexp.backends.cpu.cpu_backend import CpuBackend
    from neuronexp.cell import timing
    from neuronexp.config import TimingConfig
    from neuronexp.host.reference import HostReference

    if part == "relocated":
        return _relocated(module, x)
    off = {"no_reference", "bare"} & {part}, {"gc_on", "bare"} & {part}, {"one_round", "bare"} & {part}
    patches = contextlib.ExitStack()
    if off[0]:
        patches.enter_context(mock.patch.object(HostReference, "measure", lambda self: None))
    if off[1]:
        patches.enter_context(mock.patch.object(timing, "_collector_off", contextlib.nullcontext))
    cfg = TimingConfig(precision=None, rounds=1 if off[2] else 20)
    with patches:
        (stats,) = timing.time_calls([lambda: module(x)], CpuBackend(), cfg)
    return stats.median_us


def _relocated(module, x) -> float:
    """neuronexp's pass as the CLI times a host cell: each round, the input copied behind a fresh random spacer."""
    import torch

    from neuronexp.backends.cpu.cpu_backend import CpuBackend
    from neuronexp.cell import timing
    from neuronexp.config import TimingConfig

    held = {"x": x, "spacer": None}

    def move(spacer_bytes: int) -> None:
        held["spacer"] = None
        held["spacer"] = torch.empty(spacer_bytes, dtype=torch.uint8)
        held["x"] = x.clone()

    cfg = TimingConfig(precision=None)
    (stats,) = timing.time_calls([lambda: module(held["x"])], CpuBackend(), cfg, relocate=[move])
    return stats.median_us


PLACEMENTS = 8


def _timer_placed(module, x, rng: np.random.Generator) -> list[float]:
    """Timer's figure at PLACEMENTS placements of the input, each behind a spacer of 0-2 MiB in 64-byte steps."""
    import torch

    figures = []
    for _ in range(PLACEMENTS):
        spacer = torch.empty(int(rng.integers(2**15)) * 64, dtype=torch.uint8)
        moved = x.clone()
        figures.append(_timer(module, moved, 0.1)[0])
        del moved, spacer
    return figures


PARTS = ["neuronexp", "no_reference", "gc_on", "one_round", "bare", "relocated"]


def parts(args: argparse.Namespace) -> dict:
    import random

    import torch

    from neuronexp.host import allocator

    allocator.apply("stable")
    torch.set_num_threads(1)
    out, rng = {}, np.random.default_rng(0)
    for name in CELLS:
        module, x = _module(name)
        reps = []
        with torch.inference_mode():
            for _ in range(args.reps):
                order, rep = ["timer", "timer_placed", "plain", *PARTS], {}
                random.shuffle(order)
                for method in order:
                    if method == "timer":
                        rep["timer_us"] = _timer(module, x, 0.5)[0]
                    elif method == "timer_placed":
                        placed = _timer_placed(module, x, rng)
                        rep["timer_placed_us"] = float(np.median(placed))
                        rep["timer_placed_low_us"], rep["timer_placed_high_us"] = min(placed), max(placed)
                    elif method == "plain":
                        rep["plain_us"] = float(np.median(_plain(module, x, 0.5)))
                    else:
                        rep[f"{method}_us"] = _pass(module, x, method)
                reps.append(rep)
        out[name] = {"reps": reps, **_ratios(reps)}
        print(json.dumps({name: _ratios(reps)}), flush=True)
    return out


def _ratios(reps: list[dict]) -> dict:
    keys = [k for k in reps[0] if k.endswith("_us") and k != "timer_us"]
    return {f"{k.removesuffix('_us')}_over_timer": round(statistics.median(r[k] / r["timer_us"] for r in reps), 4)
            for k in keys}  # fmt: skip


TIMER_SCRIPT = """
import json, sys
from neuronexp.host import allocator
allocator.apply("stable")
import torch
sys.path.insert(0, sys.argv[2])
from timer_gap import _module, _timer
torch.set_num_threads(1)
module, x = _module(sys.argv[1])
with torch.inference_mode():
    median, number = _timer(module, x, 2.0)
print(json.dumps({"timer_us": median, "number": number}))
"""


def procs(args: argparse.Namespace) -> dict:
    import pandas as pd

    work, out = Path(tempfile.mkdtemp(prefix="nx-timergap-")), {}
    for name, module in CELLS.items():
        pairs = []
        for i in range(args.runs):
            run_dir = work / f"{name}{i}"
            cmd = [str(BIN / "neuronexp"), f"module={module}", f"input.shape=[{','.join(map(str, SHAPE))}]",
                   "input.dtype=float32", "backend=cpu", "threads=1", "roofline.probe=off",
                   f"hydra.run.dir={run_dir}"]  # fmt: skip
            load = round(os.getloadavg()[0], 2)
            subprocess.run(cmd, check=True, capture_output=True, cwd=work)
            cell = pd.read_parquet(run_dir / "cells.parquet").iloc[0]
            samples = pd.read_parquet(run_dir / "samples.parquet")
            text = subprocess.run([sys.executable, "-c", TIMER_SCRIPT, name, str(REPO / "bench")], check=True,
                                  capture_output=True, text=True, cwd=work).stdout  # fmt: skip
            timer = json.loads(text.strip().splitlines()[-1])
            blocks = as_blocks(samples["latency_us"].tolist(), timer["number"])
            pairs.append({"load_before": load, "neuronexp_us": float(cell["latency_median_us"]),
                          "neuronexp_as_blocks_us": blocks, **timer})  # fmt: skip
            print(json.dumps({name: pairs[-1]}), flush=True)
        out[name] = {"pairs": pairs, **_ratios(pairs)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["inproc", "procs", "parts"])
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "timer_gap")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    load = round(os.getloadavg()[0], 2)
    result = {"mode": args.mode, "started": started, "load_start": load, **globals()[args.mode](args)}
    result["load_end"] = round(os.getloadavg()[0], 2)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.mode}-{started.replace(':', '')}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: ({kk: vv for kk, vv in v.items() if kk not in ("reps", "pairs")} if isinstance(v, dict) else v)
                      for k, v in result.items()}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
