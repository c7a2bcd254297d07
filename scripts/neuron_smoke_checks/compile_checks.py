"""E: torch.compile(backend="neuron") as the TorchNeuron reference describes it; F: whole neuronexp cells."""

from __future__ import annotations

import json
import time
import warnings

from neuron_smoke_checks import Context, check


@check("E1", "torch.compile(backend='neuron') compiles and its region shows in key_averages()")
def e1_compile(ctx: Context) -> tuple[str, str]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    if ctx.args.skip_compile:
        return "SKIP", "--skip-compile"
    compiled = torch.compile(ctx.make_model(), backend="neuron", fullgraph=True)
    start = time.time()
    with torch.no_grad():
        compiled(ctx.x)
        torch.neuron.synchronize()
        first = time.time() - start
        for _ in range(3):
            compiled(ctx.x)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as p:
            compiled(ctx.x)
            torch.neuron.synchronize()
    keys = [e.key for e in p.key_averages()]
    region = [k for k in keys if "Compiled" in k]
    return (
        "PASS" if region else "INFO"
    ), f"first call {first:.1f} s; compiled-region rows: {region}; all rows: {keys[:25]}"


@check(
    "E2",
    "torch.compile(backend='neuron') rejects dynamic=True and falls back, with a warning, from mode='max-autotune'",
)
def e2_compile_options(ctx: Context) -> tuple[str, str]:
    import torch

    if ctx.args.skip_compile:
        return "SKIP", "--skip-compile"
    out = {}
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            torch.compile(ctx.make_model(), backend="neuron", dynamic=True)(ctx.x)
        out["dynamic=True"] = "ran (not rejected)"
    except Exception as exc:
        out["dynamic=True"] = f"rejected: {type(exc).__name__}: {str(exc).strip()[:200]}"
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            torch.compile(ctx.make_model(), backend="neuron", mode="max-autotune")(ctx.x)
    out["mode=max-autotune warnings"] = [str(w.message)[:200] for w in caught][:5]
    ok = out["dynamic=True"].startswith("rejected")
    return ("PASS" if ok else "FAIL"), json.dumps(out, indent=1)


@check("F1", "neuronexp's run_cell on backend=neuron: the row's neuron_* columns and warnings")
def f1_run_cell(ctx: Context) -> tuple[str, str]:
    from neuronexp.cell.group import run_cell
    from neuronexp.config import (
        BackendName,
        CellSpec,
        DType,
        InputConfig,
        ProfilerConfig,
        RunConfig,
        ScheduleConfig,
        TimingConfig,
    )
    from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm

    shape = [int(d) for d in ctx.args.shape.split(",")]
    out_lines, ok = [], True
    for name, cls in (("rmsnorm_naive", NaiveRMSNorm), ("rmsnorm_fused", FusedRMSNorm)):
        cfg = RunConfig(
            module={"_target_": f"neuronexp.modules.{cls.__name__}", "hidden_size": shape[-1]},
            input=InputConfig(shape=shape, dtype=DType.bfloat16),
            backend=BackendName.neuron,
            profiler=ProfilerConfig(schedule=ScheduleConfig(wait=1, warmup=1, active=1, repeat=1)),
            timing=TimingConfig(warmup=3, iters=20, max_seconds=10),
        )
        job = ctx.work / f"f1-{name}"
        job.mkdir(parents=True, exist_ok=True)
        # The module is built from cfg.module's _target_ (CellSpec is plain data: no builder travels with it).
        spec = CellSpec(config=cfg, run_id=f"smoke-{name}", experiment="smoke", module_name=name)
        cell = run_cell(spec, job).cells.iloc[0].to_dict()
        ok = ok and cell["status"] == "ok"
        keep = {
            k: v
            for k, v in cell.items()
            if (k.startswith("neuron_") and v == v)
            or k
            in (
                "status",
                "error",
                "device",
                "device_name",
                "latency_median_us",
                "first_call_s",
                "device_time_us",
                "device_time_source",
                "device_ops",
                "top_op",
                "warnings",
            )
        }
        empty = [k for k, v in cell.items() if k.startswith("neuron_") and v != v]  # NaN
        out_lines.append(f"## {name}\n{json.dumps(keep, indent=1, default=str)}\nNaN neuron_* columns: {empty}")
    return ("PASS" if ok else "FAIL"), "\n".join(out_lines)
