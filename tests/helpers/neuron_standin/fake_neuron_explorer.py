"""STAND-IN for the `neuron-explorer` CLI (tests only): `view -d DIR --output-format parquet --output-file OUT`.

Writes a `Summary.parquet` whose fields and units follow the Neuron Explorer profile schema reference
(schema 7.4.0: seconds, percent, bytes), plus a `Warning.parquet`, and logs its argv as JSON lines to
$FAKE_EXPLORER_LOG. $FAKE_EXPLORER_MODE picks a behaviour: ok (default), dropped (also prints the
documented dropped-events warning), fail (exits 3), empty (no Summary table).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# One device profile's Summary row; the tests check the join against these numbers.
SUMMARY = {
    "total_time": 0.000403, "total_exec_time": 0.000390, "total_active_time": 0.000350, "total_active_time_percent": 86.8,
    "neuroncore_cycle_count": 483600, "model_flops": 0, "hardware_flops": 1048576,
    "mfu_estimated_percent": 0.0, "hfu_estimated_percent": 1.5, "mbu_estimated_percent": 42.25,
    "mm_arithmetic_intensity": 0.5, "hbm_read_bytes": 8388608, "hbm_write_bytes": 8388608,
    "sbuf_read_bytes": 16777216, "sbuf_write_bytes": 16777216, "spill_save_bytes": 0, "spill_reload_bytes": 0,
    "dma_active_time": 0.000300, "dma_active_time_percent": 74.4, "dma_transfer_count": 256,
    "dma_transfer_total_bytes": 16777216, "matmul_instruction_count": 0,
    "vector_engine_active_time": 0.000120, "vector_engine_active_time_percent": 29.8, "vector_engine_instruction_count": 96,
    "scalar_engine_active_time": 0.000080, "scalar_engine_active_time_percent": 19.9, "scalar_engine_instruction_count": 32,
    # Fields outside neuronexp's pinned list, as the real table has many more.
    "trace_count": 12345, "event_count": 678,
}


def main(argv: list[str]) -> int:
    log = os.environ.get("FAKE_EXPLORER_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(argv) + "\n")
    parser = argparse.ArgumentParser(prog="neuron-explorer")
    sub = parser.add_subparsers(dest="cmd", required=True)
    view = sub.add_parser("view")
    view.add_argument("-d", dest="dir", required=True)
    view.add_argument("--output-format", required=True, choices=["parquet", "summary-text", "summary-json", "json", "perfetto"])
    view.add_argument("--output-file", required=True)
    args = parser.parse_args(argv)
    mode = os.environ.get("FAKE_EXPLORER_MODE", "ok")
    if not (Path(args.dir) / "trace_info.pb").is_file() and not list(Path(args.dir).rglob("*.ntff")):
        print(f"No metadata found for system profile: {args.dir}", file=sys.stderr)
        return 2
    if mode == "fail":
        print("ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch", file=sys.stderr)
        return 3
    if mode == "dropped":
        print("Warning: 1,500 trace events were dropped", file=sys.stderr)
    out = Path(args.output_file)
    out.mkdir(parents=True, exist_ok=True)
    if mode != "empty":
        pq.write_table(pa.Table.from_pylist([SUMMARY]), out / "Summary.parquet")
    pq.write_table(pa.Table.from_pylist([{"message": "Current NEFF is missing compiler metrics.", "category": "Missing Data"}]),
                   out / "Warning.parquet")
    print(f"processed {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
