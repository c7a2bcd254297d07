"""B: the profiling API as neuronexp detects it; C: device time, the capture layout, where the NEFFs are."""

from __future__ import annotations

import inspect
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neuron_smoke_checks import Context, check, tree


@check("B1", "torch_neuronx.profiling is the documented 2.31+ API (or the April-2026 one), as neuronexp detects it")
def b1_api(ctx: Context) -> tuple[str, str]:
    import torch_neuronx as tnx

    from neuronexp.backends.neuron import sdk as neuron_sdk

    mod = __import__("torch_neuronx.profiling", fromlist=["x"])
    members = sorted(n for n in dir(mod) if not n.startswith("_"))
    api = neuron_sdk.detect(tnx)
    return (
        "PASS" if api.kind == neuron_sdk.DOCUMENTED else "INFO"
    ), f"detected: {api.kind} ({api.version})\nmembers: {members}"


@check(
    "B2",
    "signatures: NeuronConfig keywords (is correlate_device_time one?), ProfileMode members, "
    "NeuronProfiler(config).export_trace",
)
def b2_signatures(ctx: Context) -> tuple[str, str]:
    from torch._C._profiler import _ExperimentalConfig

    prof = __import__("torch_neuronx.profiling", fromlist=["x"])
    lines = []
    for name in ("NeuronConfig", "NeuronProfiler"):
        obj = getattr(prof, name, None)
        try:
            sig = str(inspect.signature(obj)) if obj is not None else "absent"
        except (TypeError, ValueError) as exc:
            sig = f"hidden ({exc})"
        public = [m for m in dir(obj) if not m.startswith("_")] if obj is not None else []
        lines.append(f"{name}{sig}\n  public: {public}")
    modes = getattr(prof, "ProfileMode", None)
    lines.append(f"ProfileMode: {[(m.name, getattr(m, 'value', None)) for m in modes] if modes else 'absent'}")
    ok = modes is not None and all(hasattr(modes, m) for m in ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY"))
    if hasattr(prof, "NeuronConfig"):
        cfg = prof.NeuronConfig(modes=[modes.RUNTIME], profile_output_dir=tempfile.mkdtemp())
        lines.append(f"NeuronConfig(...) is an _ExperimentalConfig: {isinstance(cfg, _ExperimentalConfig)}")
    return ("PASS" if ok else "FAIL"), "\n".join(lines)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def profile_once(model: Callable[[], Any], out: Path, correlate: bool | None) -> dict[str, Any]:
    """The documented skeleton with neuronexp's NeuronConfig arguments (the NEFF cache pinned by main()), and
    `on_trace_ready=NeuronProfiler(config).export_trace`; which capture files exist before and after export_trace
    and after the profiler's exit."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from neuronexp.backends.neuron import sdk as neuron_sdk
    from neuronexp.config import NeuronProfilerConfig

    api = neuron_sdk.detect(__import__("torch_neuronx"))
    cache = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
    kwargs = neuron_sdk.neuron_config_kwargs(
        api, NeuronProfilerConfig(correlate_device_time=correlate), str(out), cache
    )
    cfg = api.module.NeuronConfig(**kwargs)
    exporter = api.module.NeuronProfiler(cfg)
    seen: dict[str, Any] = {"NeuronConfig kwargs": {k: str(v) for k, v in kwargs.items()}}

    def ready(p: Any) -> None:
        seen["files before export_trace"] = _files(out)
        exporter.export_trace(p)
        seen["files after export_trace"] = _files(out)

    for _ in range(3):
        model()
    torch.neuron.synchronize()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], experimental_config=cfg, on_trace_ready=ready
    ) as p:
        model()
        torch.neuron.synchronize()
    seen["files after the profiler's exit"] = _files(out)
    rows = p.key_averages()
    seen["device_types"] = sorted({str(e.device_type) for e in rows})
    seen["any_self_device_time"] = any(e.self_device_time_total > 0 for e in rows)
    seen["table_head"] = "\n".join(rows.table(sort_by="self_cpu_time_total", row_limit=8).splitlines()[:14])
    return seen


@check("C1", "device time reaches key_averages() (with correlate_device_time=True where accepted; with False)")
def c1_device_time(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron import sdk as neuron_sdk

    api = neuron_sdk.detect(__import__("torch_neuronx"))
    if api.kind != neuron_sdk.DOCUMENTED:
        return "SKIP", f"{api.kind}: no NeuronConfig"
    runs = {
        "neuronexp's default (correlate_device_time=True where accepted)": profile_once(
            ctx.model, ctx.work / "c1-default", None
        )
    }
    if api.correlate_supported is not False:
        runs["correlate_device_time=False"] = profile_once(ctx.model, ctx.work / "c1-false", False)
    detail = "\n\n".join(
        f"## {k}\n{json.dumps({x: y for x, y in v.items() if x != 'table_head' and not x.startswith('files')})}\n"
        f"{v['table_head']}"
        for k, v in runs.items()
    )
    return ("PASS" if any(r["any_self_device_time"] for r in runs.values()) else "INFO"), detail


@check(
    "C2",
    "capture layout <dir>/<instance>_pid_<pid>/<timestamp>/ with export_trace as on_trace_ready: where the framework "
    "trace lands; whether the runtime writes its files inside export_trace or at the profiler's exit",
)
def c2_layout(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron import sdk as neuron_sdk
    from neuronexp.backends.neuron.capture import index_capture

    if neuron_sdk.detect(__import__("torch_neuronx")).kind != neuron_sdk.DOCUMENTED:
        return "SKIP", "not the documented API"
    out = ctx.work / "c2"
    seen = profile_once(ctx.model, out, None)
    index = index_capture(out, ["DEVICE", "RUNTIME"])
    before, after = seen["files before export_trace"], seen["files after export_trace"]
    written = (
        "before on_trace_ready"
        if any(f.endswith("ntrace.pb") for f in before)
        else "inside export_trace"
        if any(f.endswith("ntrace.pb") for f in after)
        else "at the profiler's exit"
    )
    sessions = [
        {"dir": s.dir, "pid": s.pid, "files": s.files, "neffs": len(s.neffs), "unrecognized": s.unrecognized}
        for s in index.sessions
    ]
    ok = len(index.sessions) == 1 and index.sessions[0].has_framework_trace and sessions[0]["pid"] is not None
    detail = (
        f"runtime files written {written}\nfiles after export_trace: {after}\n"
        f"sessions: {json.dumps(sessions, indent=1)}\nwarnings: {index.warnings}\ntree:\n{tree(out)}"
    )
    return ("PASS" if ok else "FAIL"), detail


@check(
    "C3",
    "the NEFFs of a compile land in the TORCH_NEURONX_NEFF_CACHE_DIR neuronexp pinned before it (not /tmp/neff_cache "
    "or $TORCH_NEURONX_DEBUG_DIR), and neff_cache_dir brings them into the capture",
)
def c3_neffs(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron.capture import index_capture

    pinned = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
    folders = [pinned, "/tmp/neff_cache", os.environ.get("TORCH_NEURONX_DEBUG_DIR") or "/tmp/neuron_backend"]
    counts = {f: sum(1 for _ in Path(f).rglob("*.neff")) if f and Path(f).is_dir() else None for f in folders if f}
    captured = len(index_capture(ctx.work / "c2", ["DEVICE", "RUNTIME"]).neffs)
    detail = f"pinned: {pinned}\nNEFFs per folder: {json.dumps(counts)}\n.neff files in the C2 capture: {captured}"
    return ("PASS" if captured and pinned and counts.get(pinned) else "FAIL"), detail
