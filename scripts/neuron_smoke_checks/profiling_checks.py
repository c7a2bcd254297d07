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

    from neuronexp.backends.neuron import api as neuron_api

    mod = __import__("torch_neuronx.profiling", fromlist=["x"])
    members = sorted(n for n in dir(mod) if not n.startswith("_"))
    api = neuron_api.detect(tnx)
    return (
        "PASS" if api.kind == neuron_api.DOCUMENTED else "INFO"
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


def profile_once(model: Callable[[], Any], out: Path, correlate: bool | None, export_first: bool) -> dict[str, Any]:
    """The documented skeleton with neuronexp's NeuronConfig arguments; optionally neuronexp's own export first."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from neuronexp.backends.neuron import api as neuron_api
    from neuronexp.backends.neuron.checks import SavedTraceProxy
    from neuronexp.config import NeuronProfilerConfig

    api = neuron_api.detect(__import__("torch_neuronx"))
    kwargs = neuron_api.neuron_config_kwargs(api, NeuronProfilerConfig(correlate_device_time=correlate), str(out))
    cfg = api.module.NeuronConfig(**kwargs)
    exporter = api.module.NeuronProfiler(cfg)
    seen: dict[str, Any] = {"NeuronConfig kwargs": {k: str(v) for k, v in kwargs.items()}}

    def ready(p: Any) -> None:
        if not export_first:
            exporter.export_trace(p)
            return
        own = out.parent / f"{out.name}-own"
        own.mkdir(parents=True, exist_ok=True)
        p.export_chrome_trace(str(own / "trace.json"))
        try:
            exporter.export_trace(p)
            seen["plain_export_after_own"] = "ok"
        except Exception as exc:
            seen["plain_export_after_own"] = f"{type(exc).__name__}: {exc}"
            exporter.export_trace(SavedTraceProxy(p, own))
            seen["proxy_export"] = "ok"

    for _ in range(3):
        model()
    torch.neuron.synchronize()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], experimental_config=cfg, on_trace_ready=ready
    ) as p:
        model()
        torch.neuron.synchronize()
    rows = p.key_averages()
    seen["device_types"] = sorted({str(e.device_type) for e in rows})
    seen["any_self_device_time"] = any(e.self_device_time_total > 0 for e in rows)
    seen["table_head"] = "\n".join(rows.table(sort_by="self_cpu_time_total", row_limit=8).splitlines()[:14])
    return seen


@check("C1", "device time reaches key_averages() (with correlate_device_time=True where accepted; without it)")
def c1_device_time(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron import api as neuron_api

    api = neuron_api.detect(__import__("torch_neuronx"))
    if api.kind != neuron_api.DOCUMENTED:
        return "SKIP", f"{api.kind}: no NeuronConfig"
    runs = {"correlate_device_time not passed": profile_once(ctx.model, ctx.work / "c1-without", None, False)}
    if api.correlate_supported is not False:
        runs["correlate_device_time=True"] = profile_once(ctx.model, ctx.work / "c1-correlate", True, False)
    detail = "\n\n".join(
        f"## {k}\n{json.dumps({x: y for x, y in v.items() if x != 'table_head'})}\n{v['table_head']}"
        for k, v in runs.items()
    )
    return ("PASS" if any(r["any_self_device_time"] for r in runs.values()) else "INFO"), detail


@check(
    "C2",
    "capture layout <dir>/<instance>_pid_<pid>/<timestamp>/: framework trace name, .pb, .neff/.ntff, memory "
    "snapshot; export_trace after neuronexp's own save",
)
def c2_layout(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron import api as neuron_api
    from neuronexp.backends.neuron.capture import index_capture

    if neuron_api.detect(__import__("torch_neuronx")).kind != neuron_api.DOCUMENTED:
        return "SKIP", "not the documented API"
    out = ctx.work / "c2"
    seen = profile_once(ctx.model, out, None, True)
    index = index_capture(out, ["DEVICE", "RUNTIME"])
    sessions = [
        {
            "dir": s.dir,
            "pid": s.pid,
            "timestamp": s.timestamp,
            "files": s.files,
            "unrecognized": s.unrecognized,
            "memory_snapshots": s.memory_snapshots,
            "ntff_schemes": sorted({n["scheme"] for n in s.ntffs}),
            "neffs": len(s.neffs),
        }
        for s in index.sessions
    ]
    ok = len(index.sessions) == 1 and index.sessions[0].has_framework_trace and sessions[0]["pid"] is not None
    detail = (
        f"export_trace after neuronexp's own export: {seen.get('plain_export_after_own')}; "
        f"via proxy: {seen.get('proxy_export')}\n"
        f"NeuronConfig kwargs: {seen['NeuronConfig kwargs']}\n"
        f"sessions: {json.dumps(sessions, indent=1)}\nwarnings: {index.warnings}\ntree:\n{tree(out)}"
    )
    return ("PASS" if ok else "FAIL"), detail


@check(
    "C3",
    "where NEFFs are after a compile ($TORCH_NEURONX_NEFF_CACHE_DIR, /tmp/neff_cache, $TORCH_NEURONX_DEBUG_DIR), "
    "and that neff_cache_dir brought them into the capture",
)
def c3_neffs(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron import api as neuron_api
    from neuronexp.backends.neuron.capture import index_capture
    from neuronexp.config import NeuronProfilerConfig

    folders = [os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR"), *neuron_api.neff_search_dirs()]
    counts = {f: sum(1 for _ in Path(f).rglob("*.neff")) if f and Path(f).is_dir() else None for f in folders if f}
    chosen = neuron_api.neff_cache_dir(NeuronProfilerConfig())
    captured = len(index_capture(ctx.work / "c2", ["DEVICE", "RUNTIME"]).neffs)
    detail = (
        f"NEFFs per folder: {json.dumps(counts)}\nneuronexp would pass: {chosen}\n"
        f".neff files in the C2 capture: {captured}"
    )
    return ("PASS" if captured else "FAIL"), detail
