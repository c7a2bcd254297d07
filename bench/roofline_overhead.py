"""What "how far from the limit" adds to each cell of the RMSNorm study (issue 11): the time of
cell.limits.measure_limits (one call for peak memory and the output, the output saved, the work counted, the
roofs looked up or probed) beside the whole cell, for the study's 12 cells, in one process, interleaved so that
a change of machine load hits both figures alike.

The first cell runs against an empty probe cache (it pays for the host probe), the rest against the filled one.

    python bench/roofline_overhead.py [--rounds 2] [--out bench/results/roofline/overhead.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

import neuronexp.cell.run as cell_run
from neuronexp.config import BackendName, CellSpec, CompileConfig, DType, InputConfig, RunConfig
from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm

SHAPES = [[1, 128, 1024], [1, 512, 2048], [1, 1024, 4096], [1, 2048, 4096]]
VARIANTS = {
    "rmsnorm_naive": (NaiveRMSNorm, False),
    "rmsnorm_fused": (FusedRMSNorm, False),
    "rmsnorm_compiled": (NaiveRMSNorm, True),
}


def spec(module: str, shape: list[int]) -> CellSpec:
    layer, compiled = VARIANTS[module]
    cfg = RunConfig(
        module={"_target_": f"neuronexp.modules.{layer.__name__}", "hidden_size": shape[-1]},
        input=InputConfig(shape=shape, dtype=DType.bfloat16),
        backend=BackendName.cpu,
        compile=CompileConfig(enabled=compiled),
    )
    return CellSpec(config=cfg, run_id=f"{module}-{shape}", experiment="bench", module_name=module)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/roofline/overhead.json"))
    args = parser.parse_args()
    os.environ["NEURONEXP_CACHE_DIR"] = tempfile.mkdtemp(prefix="nx-probe-")  # empty: the first cell probes
    real = cell_run.measure_limits
    spent: list[float] = []

    def timed(*a, **k):
        start = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            spent.append(time.perf_counter() - start)

    cell_run.measure_limits = timed
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for shape in SHAPES:
                for module in VARIANTS:
                    out = Path(tmp) / f"{r}-{module}-{'x'.join(map(str, shape))}"
                    out.mkdir()
                    start = time.perf_counter()
                    cell = cell_run.run_cell(spec(module, shape), out).cells.iloc[0]
                    total = time.perf_counter() - start
                    rows.append(
                        {
                            "round": r,
                            "module": module,
                            "shape": shape,
                            "cell_s": round(total, 3),
                            "limits_s": round(spent[-1], 3),
                            "status": cell["status"],
                            "load_1m": round(os.getloadavg()[0], 2),
                        }
                    )
                    print(json.dumps(rows[-1]), flush=True)
    later = [row for row in rows[1:]]
    summary = {
        "first_cell_with_probe_s": rows[0]["limits_s"],
        "median_limits_s_after_first": statistics.median(r["limits_s"] for r in later),
        "median_share_after_first": statistics.median(r["limits_s"] / r["cell_s"] for r in later),
        "total_limits_s_per_round_after_first": sum(r["limits_s"] for r in later) / args.rounds,
        "total_cell_s_per_round": sum(r["cell_s"] for r in rows) / args.rounds,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(summary, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "cells": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
