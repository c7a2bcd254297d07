"""STAND-IN for the `neuron-explorer` CLI (tests only):
`view -d DIR --output-format parquet --output-file OUT [filters]` and `view --show-profile-schema`.

Writes Summary, Metadata, SchemaFields, Warning, FrameworkInstruction, HloInstruction, OpcodeSummary, ThrottleSummary
(device profile) and SystemProfileEvents (system profile) tables (fake_explorer_tables.py; schema
$FAKE_EXPLORER_SCHEMA: 7.4.0 as documented, 12.0.1 HYPOTHETICAL, 7.4.0-noschemafields) and logs its argv as JSON
lines to $FAKE_EXPLORER_LOG. SystemProfileEvents come from the stand-in runtime's ntrace.pb and the framework trace
in the capture; FrameworkInstruction from the NTFF's executions, named by each NEFF's debug info (planted.NEFF_NAMES),
never from the framework trace.

FrameworkInstruction stands for NEFFs compiled with debug info: written when $FAKE_EXPLORER_FRAMEWORK is "on",
or is "auto" (the default) and XLA_HLO_DEBUG=1 is in the environment (neuron.debug_info sets it, and it is
still set while neuronexp runs this tool). $FAKE_EXPLORER_MODE picks a behaviour: ok (default), dropped (also
prints the documented dropped-events warning), fail (exits 3), empty (no Summary table), insights (a profile
on which Summary Viewer rules fire), insights_idle_throttle (the same, throttled only while the tensor engine
idles), noflags (rejects the processing filters, as an older tool might), rootfail (refuses a -d folder that holds
no trace_info.pb itself), hang (sleeps a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_explorer_tables import (  # noqa: E402
    INSIGHTS_US,
    SUMMARY_US,
    framework_rows,
    other_tables,
    summary_row,
    system_rows,
)


def _parser(mode: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="neuron-explorer")
    sub = parser.add_subparsers(dest="cmd", required=True)
    view = sub.add_parser("view")
    view.add_argument("-d", dest="dir")
    view.add_argument("--output-format", choices=["parquet", "summary-text", "summary-json", "json", "perfetto"])
    view.add_argument("--output-file")
    view.add_argument("--show-profile-schema", action="store_true")
    if mode != "noflags":
        view.add_argument("--ignore-device-profile", action="store_true")
        view.add_argument("--ignore-system-profile", action="store_true")
        view.add_argument("--system-trace-filter-neuron-core")
    return parser


def _write(out: Path, table: str, rows: list[dict]) -> None:
    if rows:
        pq.write_table(pa.Table.from_pylist(rows), out / f"{table}.parquet")


def main(argv: list[str]) -> int:
    log = os.environ.get("FAKE_EXPLORER_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(argv) + "\n")
    mode = os.environ.get("FAKE_EXPLORER_MODE", "ok")
    version = os.environ.get("FAKE_EXPLORER_SCHEMA", "7.4.0")
    args = _parser(mode).parse_args(argv)
    if args.show_profile_schema:
        print(f"# STAND-IN neuron-explorer: a placeholder, not the real OpenAPI schema\nversion: {version}")
        return 0
    capture = Path(args.dir)
    if not list(capture.rglob("trace_info.pb")) and not list(capture.rglob("*.ntff")):
        print(f"No metadata found for system profile: {args.dir}", file=sys.stderr)
        return 2
    if mode == "fail" or (mode == "rootfail" and not (capture / "trace_info.pb").is_file()):
        print("ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch", file=sys.stderr)
        return 3
    if mode == "hang":
        time.sleep(60)
    if mode == "dropped":
        print("Warning: 1,500 trace events were dropped", file=sys.stderr)
    out = Path(args.output_file)
    out.mkdir(parents=True, exist_ok=True)
    warnings = [{"message": "Current NEFF is missing compiler metrics.", "category": "Missing Data"}]
    if not getattr(args, "ignore_system_profile", False):
        _write(out, "SystemProfileEvents", system_rows(capture))
    if mode != "empty" and not getattr(args, "ignore_device_profile", False):
        row, fields = summary_row(
            version.replace("-noschemafields", ""), INSIGHTS_US if mode.startswith("insights") else SUMMARY_US
        )
        _write(out, "Summary", [row])
        _write(out, "Metadata", [{"profile_schema_version": version.replace("-noschemafields", ""), "ntff_version": 2}])
        framework = os.environ.get("FAKE_EXPLORER_FRAMEWORK", "auto")
        if framework == "on" or (framework == "auto" and os.environ.get("XLA_HLO_DEBUG") == "1"):
            rows, missing = framework_rows(capture)
            _write(out, "FrameworkInstruction", rows)
            warnings += missing
        for table, rows in other_tables(mode).items():
            _write(out, table, rows)
        timeline = [
            {"table_name": t, "field_name": "start_ts", "field_unit": "nanoseconds", "field_maximum": None}
            for t in ("FrameworkInstruction", "HloInstruction")
        ]
        if not version.endswith("-noschemafields"):
            _write(out, "SchemaFields", fields + timeline)
    _write(out, "Warning", warnings)
    print(f"processed {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
