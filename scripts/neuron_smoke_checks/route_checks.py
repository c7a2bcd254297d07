"""Issue 42's questions: the Python, the NeuronCores the runtime reserved, which route device time took through the
profiler and the activity types it saw, TorchNeuron's compile metrics, and the NKI recipe's kernel on the device."""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

from neuron_smoke_checks import Context, check


@check("A6", "the Python is one TorchNeuron ships for (3.12, 3.13 or 3.14)")
def a6_python(ctx: Context) -> tuple[str, str]:
    version = sys.version_info[:2]
    detail = f"{sys.version.split()[0]} ({sys.executable})"
    return ("PASS" if (3, 12) <= version <= (3, 14) else "SKIP"), detail


@check("A7", "the runtime reserved one NeuronCore (neuronexp's default, NEURON_RT_NUM_CORES=1 set before it started)")
def a7_cores(ctx: Context) -> tuple[str, str]:
    import torch

    count = torch.neuron.device_count()
    env = {k: v for k, v in os.environ.items() if k.startswith("NEURON_RT_") and "CORES" in k}
    return ("PASS" if count == 1 else "INFO"), f"torch.neuron.device_count() = {count}\nenvironment: {env}"


def _route(prof: Any) -> dict[str, Any]:
    """Which route device time took in one profile: PrivateUse1 rows, the host rows' stub time, or neither; and every
    (device type, Kineto activity type) pair the profile's events carry."""
    from neuronexp.backends.kineto import host_device_time

    events, rows = prof.events(), prof.key_averages()
    device = sum(e.self_device_time_total for e in rows if e.device_type.name == "PrivateUse1")
    host = host_device_time(events, ("privateuse1_runtime", "privateuse1_driver")).total_us
    pairs = sorted({f"{e.device_type.name}:{getattr(e, 'activity_type', None)}" for e in events})
    route = "profiler_device_events" if device > 0 else "profiler_host_rows" if host > 0 else "none"
    return {"route": route, "device_rows_us": device, "host_rows_us": host, "device_type:activity_type": pairs}


def _capture_once(ctx: Context, fn: Any, out: Any) -> Any:
    """One call of `fn` under torch.profiler with neuronexp's NeuronConfig arguments (the capture in `out`); None
    where the installed API has no NeuronConfig."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from neuronexp.backends.neuron import sdk as neuron_sdk
    from neuronexp.config import NeuronProfilerConfig

    api = neuron_sdk.detect(__import__("torch_neuronx"))
    if api.kind != neuron_sdk.DOCUMENTED:
        return None
    cache = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
    cfg = api.module.NeuronConfig(**neuron_sdk.neuron_config_kwargs(api, NeuronProfilerConfig(), str(out), cache))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], experimental_config=cfg) as prof:
        fn()
        torch.neuron.synchronize()
    return prof


@check("C4", "device time's route through the profiler (device rows, or the host rows' stub time); activity types")
def c4_route(ctx: Context) -> tuple[str, str]:
    prof = _capture_once(ctx, ctx.model, ctx.work / "c4")
    if prof is None:
        return "SKIP", "not the documented API: no NeuronConfig"
    found = _route(prof)
    return ("PASS" if found["route"] != "none" else "INFO"), json.dumps(found, indent=1)


@check("E3", "TorchNeuron's compilation-cache counters (torch_neuronx.metrics) count a new shape's compiles or hits")
def e3_compile_counters(ctx: Context) -> tuple[str, str]:
    import torch
    import torch_neuronx

    from neuronexp.backends.neuron.compile_metrics import CompileMetrics

    metrics = CompileMetrics(torch_neuronx)
    metrics.start()
    x = torch.randn(3, 40, dtype=torch.bfloat16).to(ctx.args.device)  # a shape nothing ran yet: it compiles
    if _capture_once(ctx, lambda: (x * x + x).sum(), ctx.work / "e3") is None:
        (x * x + x).sum().item()
    cols = metrics.columns(compiled=False)
    looked_up = cols["neuron_compilations"] + cols["neuron_compile_cache_hits"]
    return ("PASS" if not math.isnan(looked_up) and looked_up >= 1 else "INFO"), json.dumps(cols)


@check("E4", "torch.neuron.get_dynamo_metrics() gives a compiled graph's compile seconds")
def e4_compile_seconds(ctx: Context) -> tuple[str, str]:
    if ctx.args.skip_compile:
        return "SKIP", "--skip-compile"
    import torch
    import torch_neuronx

    from neuronexp.backends.neuron.compile_metrics import CompileMetrics

    metrics = CompileMetrics(torch_neuronx)
    metrics.start()
    compiled = torch.compile(ctx.make_model(), backend="neuron", fullgraph=True)
    with torch.no_grad():
        compiled(ctx.x)
    cols = metrics.columns(compiled=True)
    return ("PASS" if cols["neuron_compile_s"] > 0 else "INFO"), json.dumps(cols)


@check("N1", "the NKI recipe's kernel (neuronexp.modules.nki_kernels.tensor_add) runs on a NeuronCore and gives x + y")
def n1_nki(ctx: Context) -> tuple[str, str]:
    import importlib.util

    if importlib.util.find_spec("nki") is None:
        return "SKIP", "no `nki` package here"
    import torch

    from neuronexp.modules import NkiKernel

    x, y = (torch.randn(128, 512, dtype=torch.bfloat16).to(ctx.args.device) for _ in range(2))
    with torch.no_grad():
        got = NkiKernel()(x, y).cpu()
    error = float((got.float() - (x + y).cpu().float()).abs().max())
    return ("PASS" if error == 0 else "FAIL"), f"max |kernel - (x + y)| = {error:g} over {tuple(x.shape)} bfloat16"
