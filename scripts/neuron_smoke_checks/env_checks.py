"""A: versions, the package family, autoload, the lazy runtime start, the device surface, core lists."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from pathlib import Path

from neuron_smoke_checks import Context, check, sh


@check("A1", "versions, instance, and the torch-neuronx family matches torch (TorchNeuron <torch major.minor>.x)")
def a1_versions(ctx: Context) -> tuple[str, str]:
    import importlib.metadata as md

    import torch
    import torch_neuronx

    from neuronexp.backends.neuron import sdk as neuron_sdk

    def ver(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "not installed"

    product = Path("/sys/devices/virtual/dmi/id/product_name")
    version = neuron_sdk.installed_version(torch_neuronx)
    problem = neuron_sdk.family_problem(torch_neuronx, version, torch.__version__)
    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "instance": product.read_text().strip() if product.exists() else "unknown",
        **{p: ver(p) for p in ("torch", "torch-neuronx", "neuronx-cc", "libneuronxla", "neuronexp")},
        "torch_neuronx version used": version,
        "family problem": problem,
        "neuron-explorer --version": sh(["neuron-explorer", "--version"], 30)[1][:200]
        if shutil.which("neuron-explorer")
        else "not on PATH",
        "env": {
            k: v
            for k, v in os.environ.items()
            if k.startswith(("NEURON_RT_", "TORCH_NEURONX_", "TORCH_DEVICE_BACKEND"))
        },
    }
    return ("FAIL" if problem else "INFO"), json.dumps(info, indent=2)


@check("A2", "`import torch` alone loads torch_neuronx (torch.backends entry point) and registers torch.neuron")
def a2_autoload(ctx: Context) -> tuple[str, str]:
    rc, out = sh(
        [sys.executable, "-c", "import sys, torch; print('torch_neuronx' in sys.modules, hasattr(torch, 'neuron'))"]
    )
    return (
        "PASS" if out.endswith("True True") else "INFO"
    ), f"rc={rc}: (torch_neuronx loaded, torch.neuron) = {out[-200:]}"


_PROBE = r"""
import json, os, sys, torch
tnx = sys.modules.get("torch_neuronx") or __import__("torch_neuronx")
started = getattr(tnx, "is_neuron_runtime_initialized", None)
state = lambda: started() if started else None
out = {"has_is_neuron_runtime_initialized": started is not None, "after_import": state()}
for k in ("NUM_CORES", "VISIBLE_CORES"):
    if os.environ.get("PROBE_" + k):
        os.environ["NEURON_RT_" + k] = os.environ["PROBE_" + k]  # set after import torch, as neuronexp does
out["is_available"] = torch.neuron.is_available(); out["after_is_available"] = state()
out["device_count"] = torch.neuron.device_count()
x = torch.ones(4, device=os.environ.get("PROBE_DEVICE", "neuron")); torch.neuron.synchronize()
out["after_first_tensor"] = state()
print(json.dumps(out))
"""


def _probe(ctx: Context, **env: str) -> dict | str:
    full = dict(os.environ, PROBE_DEVICE=ctx.args.device, **env)
    full.pop("NEURON_RT_NUM_CORES", None)
    full.pop("NEURON_RT_VISIBLE_CORES", None)
    rc, out = sh([sys.executable, "-c", _PROBE], env=full)
    try:
        return json.loads(out.splitlines()[-1])
    except (ValueError, IndexError):
        return f"rc={rc}: {out.splitlines()[-1][:300] if out else ''}"


@check("A3", "the runtime starts lazily, so NEURON_RT_NUM_CORES set after `import torch` still applies")
def a3_runtime(ctx: Context) -> tuple[str, str]:
    base, one = _probe(ctx), _probe(ctx, PROBE_NUM_CORES="1")
    if isinstance(base, str) or isinstance(one, str):
        return "FAIL", f"probe failed: {base} / {one}"
    applied = one["device_count"] == 1 and base["device_count"] >= 1
    verdict = "PASS" if applied and base["device_count"] > 1 else "INFO" if applied else "FAIL"
    return verdict, f"without: {json.dumps(base)}\nNEURON_RT_NUM_CORES=1 after import: {json.dumps(one)}"


@check(
    "A4",
    'NEURON_RT_VISIBLE_CORES takes a contiguous comma list ("0,1"), not a gapped one ("0,2"), per the developer guide',
)
def a4_visible_cores(ctx: Context) -> tuple[str, str]:
    base = _probe(ctx)
    if isinstance(base, str) or base["device_count"] < 3:
        return "SKIP", f"needs 3+ NeuronCores: {base}"
    listed, ranged, gapped = (_probe(ctx, PROBE_VISIBLE_CORES=v) for v in ("0,1", "0-1", "0,2"))
    ok = isinstance(listed, dict) and listed["device_count"] == 2
    return ("PASS" if ok else "FAIL"), f'"0,1": {listed}\n"0-1": {ranged}\n"0,2" (neuronexp refuses it): {gapped}'


@check("A5", "torch.neuron / torch_neuronx have the functions the backend calls (device, fallbacks, memory)")
def a5_surface(ctx: Context) -> tuple[str, str]:
    import torch
    import torch_neuronx as tnx

    memory = ["max_memory_allocated", "max_memory_reserved", "reset_peak_memory_stats", "memory_stats"]
    names = {
        "torch.neuron": [
            "is_available",
            "device_count",
            "synchronize",
            "current_device",
            "get_device_properties",
            *memory,
        ],
        "torch_neuronx": [
            "get_fallback_ops",
            "clear_op_tracking",
            "is_neuron_runtime_initialized",
            "synchronize",
            "__version__",
            *memory,
        ],
    }
    have = {
        mod: {n: hasattr(torch.neuron if mod == "torch.neuron" else tnx, n) for n in ns} for mod, ns in names.items()
    }
    props = torch.neuron.get_device_properties(0)
    detail = (
        json.dumps(have, indent=1) + f"\nget_device_properties(0): name={getattr(props, 'name', '?')!r} "
        f"total_memory={getattr(props, 'total_memory', '?')}"
    )
    core = ["is_available", "device_count", "synchronize"]
    return ("PASS" if all(have["torch.neuron"][n] for n in core) else "FAIL"), detail
