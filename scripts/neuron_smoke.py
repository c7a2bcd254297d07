#!/usr/bin/env python
"""Check, once, on a Trainium instance, every assumption neuronexp's Neuron backend makes that the docs leave open.

    pip install -e .[neuron]          # on a Trn2/Trn3 instance, torch-neuronx from the Neuron repository
    python scripts/neuron_smoke.py --out neuron_smoke_report.md

Prints a Markdown report (and writes it to --out) to paste into a neuronexp issue. Each check names the
assumption it tests and says PASS, FAIL, INFO (a fact to record) or SKIP. Nothing here changes neuronexp;
a FAIL means the backend is wrong for this torch-neuronx and the report says where. Takes a few minutes
(Neuron compilation); --skip-compile leaves out the torch.compile check.
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

REPORT: list[tuple[str, str, str, str]] = []  # (id, assumption, result, detail)


def check(cid: str, assumption: str) -> Callable[[Callable[..., tuple[str, str]]], Callable[..., None]]:
    """Run the check, record (result, detail); an exception is a FAIL with its traceback tail, never a crash."""

    def wrap(fn: Callable[..., tuple[str, str]]) -> Callable[..., None]:
        def run(*args: Any) -> None:
            try:
                result, detail = fn(*args)
            except Exception as exc:  # the report must always come out
                result, detail = "FAIL", f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc().splitlines(True)[-6:])
            REPORT.append((cid, assumption, result, detail))
            print(f"[{result}] {cid}: {assumption}", file=sys.stderr)

        return run

    return wrap


def sh(cmd: list[str], timeout: float = 120, env: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, f"{type(exc).__name__}: {exc}"
    return p.returncode, (p.stdout + p.stderr).strip()


def tree(root: Path, limit: int = 60) -> str:
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    lines = [f"{p.relative_to(root)}  ({p.stat().st_size} B)" for p in files[:limit]]
    return "\n".join(lines + ([f"... {len(files) - limit} more"] if len(files) > limit else [])) or "(empty)"


# --- A: environment, autoload, runtime start, core selection ---------------------------------------------

@check("A1", "versions and instance (facts to record)")
def a1_versions(args: argparse.Namespace) -> tuple[str, str]:
    import importlib.metadata as md

    def ver(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "not installed"

    product = Path("/sys/devices/virtual/dmi/id/product_name")
    info = {
        "python": sys.version.split()[0], "platform": platform.platform(),
        "instance": product.read_text().strip() if product.exists() else "unknown",
        **{p: ver(p) for p in ("torch", "torch-neuronx", "neuronx-cc", "libneuronxla", "neuronexp")},
        "neuron-explorer --version": sh(["neuron-explorer", "--version"], 30)[1][:200] if shutil.which("neuron-explorer") else "not on PATH",
        "env": {k: v for k, v in os.environ.items() if k.startswith(("NEURON_RT_", "TORCH_NEURONX_", "TORCH_DEVICE_BACKEND"))},
    }
    return "INFO", json.dumps(info, indent=2)


@check("A2", "`import torch` alone loads torch_neuronx (torch.backends entry point) and registers torch.neuron")
def a2_autoload(args: argparse.Namespace) -> tuple[str, str]:
    rc, out = sh([sys.executable, "-c", "import sys, torch; print('torch_neuronx' in sys.modules, hasattr(torch, 'neuron'))"])
    return ("PASS" if out.endswith("True True") else "INFO"), f"rc={rc}: (torch_neuronx loaded, torch.neuron) = {out[-200:]}"


_PROBE = r"""
import json, os, sys, torch
tnx = sys.modules.get("torch_neuronx") or __import__("torch_neuronx")
started = getattr(tnx, "is_neuron_runtime_initialized", None)
state = lambda: started() if started else None
out = {"has_is_neuron_runtime_initialized": started is not None, "after_import": state()}
if os.environ.get("PROBE_NUM_CORES"):
    os.environ["NEURON_RT_NUM_CORES"] = os.environ["PROBE_NUM_CORES"]  # set after import torch, as neuronexp does
out["is_available"] = torch.neuron.is_available(); out["after_is_available"] = state()
out["device_count"] = torch.neuron.device_count()
x = torch.ones(4, device=os.environ.get("PROBE_DEVICE", "neuron")); torch.neuron.synchronize()
out["after_first_tensor"] = state()
print(json.dumps(out))
"""


@check("A3", "the runtime starts lazily, so NEURON_RT_NUM_CORES set after `import torch` still applies")
def a3_runtime(args: argparse.Namespace) -> tuple[str, str]:
    env = dict(os.environ, PROBE_DEVICE=args.device)
    env.pop("NEURON_RT_NUM_CORES", None)
    env.pop("NEURON_RT_VISIBLE_CORES", None)
    _, base = sh([sys.executable, "-c", _PROBE], env=env)
    _, one = sh([sys.executable, "-c", _PROBE], env=dict(env, PROBE_NUM_CORES="1"))
    try:
        b, o = json.loads(base.splitlines()[-1]), json.loads(one.splitlines()[-1])
    except (ValueError, IndexError):
        return "FAIL", f"probe failed:\n{base[-800:]}\n---\n{one[-800:]}"
    applied = o["device_count"] == 1 and b["device_count"] >= 1
    verdict = "PASS" if applied and b["device_count"] > 1 else "INFO" if applied else "FAIL"
    return verdict, f"without: {json.dumps(b)}\nNEURON_RT_NUM_CORES=1 after import: {json.dumps(o)}"


@check("A4", "torch.neuron / torch_neuronx have the functions the backend calls")
def a4_surface(args: argparse.Namespace) -> tuple[str, str]:
    import torch
    import torch_neuronx as tnx

    names = {"torch.neuron": ["is_available", "device_count", "synchronize", "current_device", "get_device_properties",
                              "max_memory_reserved"],
             "torch_neuronx": ["get_fallback_ops", "clear_op_tracking", "is_neuron_runtime_initialized",
                               "max_memory_reserved", "synchronize", "__version__"]}
    have = {mod: {n: hasattr(torch.neuron if mod == "torch.neuron" else tnx, n) for n in ns} for mod, ns in names.items()}
    props = torch.neuron.get_device_properties(0)
    detail = json.dumps(have, indent=1) + f"\nget_device_properties(0): name={getattr(props, 'name', '?')!r} " \
        f"total_memory={getattr(props, 'total_memory', '?')}"
    core = ["is_available", "device_count", "synchronize"]
    return ("PASS" if all(have["torch.neuron"][n] for n in core) else "FAIL"), detail


# --- B: the profiling API ------------------------------------------------------------------------------

@check("B1", "torch_neuronx.profiling is the documented 2.31+ API (or the April-2026 one), as neuronexp detects it")
def b1_api(args: argparse.Namespace) -> tuple[str, str]:
    import torch_neuronx as tnx

    from neuronexp.backends.neuron import api as neuron_api

    mod = __import__("torch_neuronx.profiling", fromlist=["x"])
    members = sorted(n for n in dir(mod) if not n.startswith("_"))
    api = neuron_api.detect(tnx)
    return ("PASS" if api.kind == neuron_api.DOCUMENTED else "INFO"), f"detected: {api.kind} ({api.version})\nmembers: {members}"


@check("B2", "signatures: NeuronConfig keywords (correlate_device_time?), ProfileMode members, NeuronProfiler(config).export_trace")
def b2_signatures(args: argparse.Namespace) -> tuple[str, str]:
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


def _profile_once(model: Callable[[], Any], out: Path, correlate: bool | None, export_first: bool) -> dict[str, Any]:
    """The documented skeleton, plus (export_first) neuronexp's own trace export before NeuronProfiler's."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from neuronexp.backends.neuron.checks import SavedTraceProxy

    from neuronexp.backends.neuron import api as neuron_api
    from neuronexp.config import NeuronProfilerConfig

    # The arguments neuronexp builds (modes DEVICE+RUNTIME, neff_cache_dir, ...), correlate as asked.
    api = neuron_api.detect(__import__("torch_neuronx"))
    prof_mod = api.module
    kwargs = neuron_api.neuron_config_kwargs(api, NeuronProfilerConfig(correlate_device_time=correlate), str(out))
    seen_kwargs = {k: str(v) for k, v in kwargs.items()}
    cfg = prof_mod.NeuronConfig(**kwargs)
    exporter = prof_mod.NeuronProfiler(cfg)
    seen: dict[str, Any] = {"NeuronConfig kwargs": seen_kwargs}

    def ready(p: Any) -> None:
        if export_first:  # what neuronexp does: its own trace.json first, then NeuronProfiler's
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
        else:
            exporter.export_trace(p)

    for _ in range(3):
        model()
    torch.neuron.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], experimental_config=cfg, on_trace_ready=ready) as p:
        model()
        torch.neuron.synchronize()
    rows = p.key_averages()
    seen["device_types"] = sorted({str(e.device_type) for e in rows})
    seen["any_self_device_time"] = any(e.self_device_time_total > 0 for e in rows)
    seen["table_head"] = "\n".join(rows.table(sort_by="self_cpu_time_total", row_limit=8).splitlines()[:14])
    return seen


@check("C1", "device time reaches key_averages() (with correlate_device_time=True where accepted; without it)")
def c1_device_time(args: argparse.Namespace, model: Callable[[], Any], work: Path) -> tuple[str, str]:
    from neuronexp.backends.neuron import api as neuron_api

    api = neuron_api.detect(__import__("torch_neuronx"))
    if api.kind != neuron_api.DOCUMENTED:
        return "SKIP", f"{api.kind}: no NeuronConfig"
    runs = {"correlate_device_time=False": _profile_once(model, work / "c1-without", False, False)}
    if api.correlate_supported is not False:
        runs["correlate_device_time=True"] = _profile_once(model, work / "c1-correlate", True, False)
    detail = "\n\n".join(f"## {k}\n{json.dumps({x: y for x, y in v.items() if x != 'table_head'})}\n{v['table_head']}" for k, v in runs.items())
    return ("PASS" if any(r["any_self_device_time"] for r in runs.values()) else "INFO"), detail


@check("C2", "the capture layout is <dir>/<instance>_pid_<pid>/<timestamp>/ with trace.json, .pb, .neff/.ntff; export after a first save")
def c2_layout(args: argparse.Namespace, model: Callable[[], Any], work: Path) -> tuple[str, str]:
    from neuronexp.backends.neuron import api as neuron_api
    from neuronexp.backends.neuron.capture import index_capture

    if neuron_api.detect(__import__("torch_neuronx")).kind != neuron_api.DOCUMENTED:
        return "SKIP", "not the documented API"
    out = work / "c2"
    seen = _profile_once(model, out, None, True)
    index = index_capture(out, ["DEVICE", "RUNTIME"])
    sessions = [{"dir": s.dir, "pid": s.pid, "timestamp": s.timestamp, "files": s.files, "unrecognized": s.unrecognized,
                 "ntff_schemes": sorted({n["scheme"] for n in s.ntffs}), "neffs": len(s.neffs)} for s in index.sessions]
    ok = len(index.sessions) == 1 and "trace.json" in index.sessions[0].files and sessions[0]["pid"] is not None
    detail = (f"export_trace after neuronexp's own export: {seen.get('plain_export_after_own')}; via proxy: {seen.get('proxy_export')}\n"
              f"sessions: {json.dumps(sessions, indent=1)}\nwarnings: {index.warnings}\ntree:\n{tree(out)}")
    return ("PASS" if ok else "FAIL"), detail


@check("D1", "`neuron-explorer view -d DIR --output-format parquet --output-file OUT` writes Summary.parquet with the pinned fields")
def d1_explorer(args: argparse.Namespace, work: Path) -> tuple[str, str]:
    import pandas as pd

    from neuronexp.backends.neuron.capture import index_capture
    from neuronexp.backends.neuron.explorer import SUMMARY_FIELDS, explorer_command, find_explorer

    exe = find_explorer()
    if exe is None:
        return "SKIP", "neuron-explorer not found (PATH, /opt/aws/neuron/bin)"
    index = index_capture(work / "c2", ["DEVICE", "RUNTIME"])
    if not index.sessions:
        return "SKIP", "no capture from C2"
    lines, ok = [], False
    for label, target in (("session folder", index.upload_dir()), ("capture root", index.root)):
        out = work / f"d1-{label.split()[1]}"
        start = time.time()
        rc, text = sh(explorer_command(exe, target, out), timeout=args.explorer_timeout)
        summaries = sorted(out.rglob("Summary*.parquet"))
        lines.append(f"## -d {label}: rc={rc} in {time.time() - start:.0f} s; Summary files: {[str(p.relative_to(out)) for p in summaries]}")
        lines.append(text[-600:])
        if summaries:
            df = pd.read_parquet(summaries[0])
            missing = [f for f in SUMMARY_FIELDS if f not in df.columns]
            lines.append(f"rows={len(df)} columns={list(df.columns)}\nmissing pinned fields: {missing}")
            lines.append(f"total_time={df['total_time'].tolist() if 'total_time' in df else 'absent'}")
            ok = ok or not missing or len(missing) < len(SUMMARY_FIELDS) // 2
            meta = sorted(out.rglob("Metadata*.parquet"))
            if meta:
                lines.append(f"Metadata: {pd.read_parquet(meta[0]).to_dict('records')[:1]}")
        lines.append(f"tree:\n{tree(out, 30)}")
    return ("PASS" if ok else "FAIL"), "\n".join(lines)


@check("E1", "torch.compile(backend='neuron') compiles and its region shows in key_averages()")
def e1_compile(args: argparse.Namespace, model_factory: Callable[[], Any], x: Any) -> tuple[str, str]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    if args.skip_compile:
        return "SKIP", "--skip-compile"
    compiled = torch.compile(model_factory(), backend="neuron")
    start = time.time()
    with torch.no_grad():
        compiled(x)
        torch.neuron.synchronize()
        first = time.time() - start
        for _ in range(3):
            compiled(x)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as p:
            compiled(x)
            torch.neuron.synchronize()
    keys = [e.key for e in p.key_averages()]
    region = [k for k in keys if "Compiled" in k]
    return ("PASS" if region else "INFO"), f"first call {first:.1f} s; compiled-region rows: {region}; all rows: {keys[:25]}"


@check("F1", "neuronexp's run_cell on backend=neuron: the row's neuron_* columns and warnings")
def f1_run_cell(args: argparse.Namespace, work: Path) -> tuple[str, str]:
    from neuronexp.config import BackendName, DType, InputConfig, ProfilerConfig, RunConfig, ScheduleConfig, TimingConfig
    from neuronexp.modules import FusedRMSNorm, NaiveRMSNorm
    from neuronexp.config import CellSpec
    from neuronexp.cell.run import run_cell

    shape = [int(d) for d in args.shape.split(",")]
    out_lines, ok = [], True
    for name, cls in (("rmsnorm_naive", NaiveRMSNorm), ("rmsnorm_fused", FusedRMSNorm)):
        cfg = RunConfig(module={"_target_": f"neuronexp.modules.{cls.__name__}", "hidden_size": shape[-1]},
                        input=InputConfig(shape=shape, dtype=DType.bfloat16), backend=BackendName.neuron,
                        profiler=ProfilerConfig(schedule=ScheduleConfig(wait=1, warmup=1, active=1, repeat=1)),
                        timing=TimingConfig(warmup=3, iters=20, max_seconds=10))
        job = work / f"f1-{name}"
        job.mkdir(parents=True, exist_ok=True)
        spec = CellSpec(cfg, lambda cls=cls: cls(shape[-1]), run_id=f"smoke-{name}", experiment="smoke", module_name=name)
        cell = run_cell(spec, job).cells.iloc[0].to_dict()
        ok = ok and cell["status"] == "ok"
        keep = {k: v for k, v in cell.items() if (k.startswith("neuron_") and v == v) or k in (
            "status", "error", "device", "device_name", "latency_median_us", "first_call_s", "device_time_us",
            "device_time_source", "device_ops", "top_op", "warnings")}
        empty = [k for k, v in cell.items() if k.startswith("neuron_") and v != v]  # NaN
        out_lines.append(f"## {name}\n{json.dumps(keep, indent=1, default=str)}\nNaN neuron_* columns: {empty}")
    return ("PASS" if ok else "FAIL"), "\n".join(out_lines)


def render(args: argparse.Namespace, standin: bool) -> str:
    head = ["# neuronexp Neuron smoke report", "", f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
            f"- command: `{' '.join(sys.argv)}`"]
    if standin:
        head += ["", "**STAND-IN torch_neuronx (tests/helpers/neuron_standin): this report says nothing about Trainium.**"]
    table = ["", "| id | assumption | result |", "|---|---|---|"] + [f"| {c} | {a} | {r} |" for c, a, r, _ in REPORT]
    details = [f"\n### {c} — {r}\n\n{a}\n\n```\n{d.strip()}\n```" for c, a, r, d in REPORT]
    return "\n".join(head + table + details) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="neuron_smoke_report.md", help="where to write the Markdown report")
    parser.add_argument("--workdir", default=None, help="captures and Explorer output go here (default: a temp dir, kept)")
    parser.add_argument("--shape", default="1,128,4096", help="input shape for the RMSNorm checks")
    parser.add_argument("--skip-compile", action="store_true", help="leave out the torch.compile(backend='neuron') check")
    parser.add_argument("--explorer-timeout", type=float, default=900)
    parser.add_argument("--device", default="neuron", help=argparse.SUPPRESS)  # "cpu": only to test this script on the stand-in
    args = parser.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="neuron-smoke-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    a1_versions(args)
    a2_autoload(args)
    a3_runtime(args)
    try:
        import torch
        import torch_neuronx
    except ImportError as exc:
        REPORT.append(("A0", "torch-neuronx imports", "FAIL", str(exc)))
        return _finish(args, False)
    standin = bool(getattr(torch_neuronx, "__standin__", False))
    if args.device != "neuron":
        from neuronexp.backends.neuron import NeuronBackend

        NeuronBackend.device_type = args.device
    from neuronexp.modules import NaiveRMSNorm

    shape = [int(d) for d in args.shape.split(",")]
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=torch.bfloat16).to(args.device)
    model = NaiveRMSNorm(shape[-1]).to(device=args.device, dtype=torch.bfloat16)
    a4_surface(args)
    b1_api(args)
    b2_signatures(args)
    with torch.no_grad():
        c1_device_time(args, lambda: model(x), work)
        c2_layout(args, lambda: model(x), work)
    d1_explorer(args, work)
    e1_compile(args, lambda: NaiveRMSNorm(shape[-1]).to(device=args.device, dtype=torch.bfloat16), x)
    f1_run_cell(args, work)
    return _finish(args, standin, work)


def _finish(args: argparse.Namespace, standin: bool, work: Path | None = None) -> int:
    text = render(args, standin) + (f"\nArtifacts kept in `{work}`.\n" if work else "")
    Path(args.out).write_text(text)
    print(text)
    print(f"report written to {args.out}; paste it into a neuronexp issue", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
