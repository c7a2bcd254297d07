"""D: Neuron Explorer: the schema print command, the 12.x tables and units, which folder and filters it takes,
and the per-op device time from FrameworkInstruction with neuron.debug_info (in fresh processes)."""

from __future__ import annotations

import json
import sys
import time

from neuron_smoke_checks import Context, check, sh, tree


@check(
    "D1",
    "the schema prints with `neuron-explorer view --show-profile-schema` (2.33), "
    "else `neuron-explorer --show-profile-schema`",
)
def d1_schema_print(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron.explorer import find_explorer

    exe = find_explorer()
    if exe is None:
        return "SKIP", "neuron-explorer not found (PATH, /opt/aws/neuron/bin)"
    lines = []
    for cmd in ([exe, "view", "--show-profile-schema"], [exe, "--show-profile-schema"]):
        rc, text = sh(cmd, timeout=120)
        lines.append(f"{' '.join(cmd[1:])}: rc={rc}, {len(text)} characters")
        if rc == 0 and text:
            (ctx.work / "profile-schema.yaml").write_text(text)
            lines.append(
                f"saved to {ctx.work / 'profile-schema.yaml'}; first lines:\n" + "\n".join(text.splitlines()[:8])
            )
            return ("PASS" if cmd[1] == "view" else "INFO"), "\n".join(lines)
    return "FAIL", "\n".join(lines)


@check(
    "D2",
    "`view -d <capture root> --output-format parquet --output-file OUT` writes Summary, Metadata and SchemaFields; "
    "units come from SchemaFields; the filters are accepted",
)
def d2_explorer(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron.capture import index_capture
    from neuronexp.backends.neuron.explorer import explorer_command, find_explorer, read_output
    from neuronexp.backends.neuron.explorer_summary import DOCUMENTED_UNIT, SUMMARY_FIELDS
    from neuronexp.backends.neuron.explorer_tables import find_profiles, read_units

    exe = find_explorer()
    if exe is None:
        return "SKIP", "neuron-explorer not found (PATH, /opt/aws/neuron/bin)"
    index = index_capture(ctx.work / "c2", ["DEVICE", "RUNTIME"])
    if not index.sessions:
        return "SKIP", "no capture from C2"
    plans = [
        ("root", index.root, []),
        ("root + core filter", index.root, ["--system-trace-filter-neuron-core", "0"]),
        ("session folder", index.root / index.sessions[0].dir, []),
    ]
    lines, ok = [], False
    for i, (label, target, flags) in enumerate(plans):
        out = ctx.work / f"d2-{i}"
        start = time.time()
        rc, text = sh(explorer_command(exe, target, out, flags), timeout=ctx.args.explorer_timeout)
        lines.append(f"## -d {label}: rc={rc} in {time.time() - start:.0f} s\n{text[-400:]}")
        profiles = find_profiles(out)
        if rc != 0 or not profiles:
            continue
        cols, warnings, schema, ops, files = read_output(out)
        units = read_units(profiles[0])
        changed = {
            f: units.unit("Summary", f)
            for f in SUMMARY_FIELDS
            if units.unit("Summary", f) not in (None, DOCUMENTED_UNIT[SUMMARY_FIELDS[f]])
        }
        lines.append(
            f"schema {cols['neuron_profile_schema_version']}, units from {cols['neuron_units_source']}; "
            f"Summary files {files}\n"
            f"units differing from 7.4.0: {changed}\nmissing pinned fields: {schema.get('missing_fields')}\n"
            f"fields not read: {schema.get('unread_fields')}\nunit problems: {schema.get('unit_problems')}\n"
            f"warnings: {warnings}\ntotal_time_us={cols['neuron_total_time_us']} insights={cols['neuron_insights']!r} "
            f"checked={cols['neuron_insights_checked']}\nper-op breakdown: {json.dumps(ops.to_json())[:600]}"
        )
        for p in profiles[:1]:
            lines.append(f"all tables: {sorted(p.files)}")
            lines.append(
                "columns: "
                + ", ".join(
                    f"{t}({','.join(p.columns(t)[:40])})"
                    for t in sorted(p.files)
                    if t
                    in (
                        "Metadata",
                        "FrameworkInstruction",
                        "HloInstruction",
                        "OpcodeSummary",
                        "ThrottleSummary",
                        "Instruction",
                    )
                )
            )
        lines.append(f"tree:\n{tree(out, 40)}")
        ok = ok or (i == 0 and bool(files) and not schema.get("unit_problems"))
    return ("PASS" if ok else "FAIL"), "\n".join(lines)


_D3 = r"""
import json, sys
from pathlib import Path
from neuronexp.backends.neuron.neuron_backend import NeuronBackend
from neuronexp.cell.group import run_cell
from neuronexp.config import (BackendName, CellSpec, DType, InputConfig, NeuronDeviceConfig, ProfilerConfig, RunConfig,
                              ScheduleConfig, TimingConfig)
work, device, shape, active = Path(sys.argv[1]), sys.argv[2], [int(d) for d in sys.argv[3].split(",")], int(sys.argv[4])
if device != "neuron":
    NeuronBackend.device_type = device  # the stand-in test only
cfg = RunConfig(module={"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": shape[-1]},
                input=InputConfig(shape=shape, dtype=DType.bfloat16), backend=BackendName.neuron,
                profiler=ProfilerConfig(schedule=ScheduleConfig(wait=0, warmup=1, active=active, repeat=1)),
                timing=TimingConfig(warmup=3, iters=5, max_seconds=10), neuron=NeuronDeviceConfig(debug_info=True))
job = work / f"d3-active{active}"
job.mkdir(parents=True, exist_ok=True)
cell = run_cell(CellSpec(config=cfg, run_id=f"d3-{active}", experiment="smoke",
                         module_name="rmsnorm_naive"), job).cells.iloc[0].to_dict()
manifest_path = job / "neuron_profile" / "manifest.json"
manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
keep = ("status", "error", "device_time_source", "device_time_us", "device_ops", "top_op", "neuron_explorer_status",
        "neuron_device_time_explorer_us", "neuron_explorer_ops_matched", "neuron_explorer_ops_unmatched_us",
        "neuron_explorer_unnamed_us", "neuron_capture_window", "neuron_capture_steps", "neuron_debug_info",
        "neuron_neff_cache_dir", "neuron_neff_files", "warnings")
result = {"cell": {k: cell.get(k) for k in keep}, "device_ops": manifest.get("explorer", {}).get("device_ops")}
print("D3-RESULT", json.dumps(result, default=str))
"""


@check(
    "D3",
    "with neuron.debug_info, Explorer's FrameworkInstruction names match key_averages() ops, and its per-step "
    "figure (totals over the steps the capture covered) agrees for active=1 and active=2 (fresh processes)",
)
def d3_per_op(ctx: Context) -> tuple[str, str]:
    from neuronexp.backends.neuron.explorer import find_explorer

    if find_explorer() is None:
        return "SKIP", "neuron-explorer not found"
    runs = {}
    for active in (1, 2):
        rc, text = sh(
            [sys.executable, "-c", _D3, str(ctx.work), ctx.args.device, ctx.args.shape, str(active)],
            timeout=2 * ctx.args.explorer_timeout + 900,
        )
        found = [ln.split(" ", 1)[1] for ln in text.splitlines() if ln.startswith("D3-RESULT ")]
        if rc != 0 or not found:
            return "FAIL", f"active={active}: rc={rc}: {text.splitlines()[-1][:300] if text else ''}"
        runs[active] = json.loads(found[0])
    one, two = runs[1]["cell"], runs[2]["cell"]
    detail = json.dumps(runs, indent=1, default=str)
    if not (one.get("neuron_explorer_ops_matched") or 0) > 0:
        return "FAIL", "no FrameworkInstruction op matched a key_averages() op\n" + detail
    a, b = float(one["neuron_device_time_explorer_us"]), float(two["neuron_device_time_explorer_us"])
    agree = abs(a - b) <= 0.25 * max(a, b)
    return (
        "PASS" if agree else "FAIL"
    ), f"Explorer's device time per step: active=1 {a:.1f} us, active=2 {b:.1f} us\n{detail}"
