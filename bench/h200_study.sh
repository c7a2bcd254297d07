#!/usr/bin/env bash
# The RMSNorm study on a CUDA GPU (issues 3 and 11), as one prepared script for a lent H200.
#
# Not yet run: the session that wrote it was not lent a GPU. Two steps:
#   1. here (with network):   bash bench/h200_study.sh fetch      # wheels for Python 3.12 into shared/wheelhouse
#   2. on the GPU machine:     bash bench/h200_study.sh run        # installs offline, runs, writes $OUT
# The GPU machine has torch 2.11 on Python 3.12 and no hydra-core; torch is kept as it is there.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=shared/wheelhouse

case "${1:-}" in
fetch)
    mkdir -p "$WHEELS"
    pip download -q --dest "$WHEELS" --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --implementation cp \
        'hydra-core>=1.3,<1.4' 'omegaconf>=2.3,<2.4' antlr4-python3-runtime==4.9.3 PyYAML rich pandas pyarrow matplotlib
    pip wheel -q --no-deps --wheel-dir "$WHEELS" .
    ;;
run)
    OUT=${OUT:-/tmp/h200-out}
    mkdir -p "$OUT"
    python3 -m venv --system-site-packages /tmp/nx-venv      # keeps the machine's torch 2.11 + CUDA
    . /tmp/nx-venv/bin/activate
    pip install -q --no-index --find-links "$WHEELS" neuronexp
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/gpu.csv"
    for dtype in bfloat16 float32; do
        neuronexp -m +experiment=rmsnorm_sweep backend=cuda input.dtype=$dtype \
            'input.shape=[1,1024,4096],[1,4096,4096],[1,8192,8192]' profiler.schedule.repeat=3 \
            "hydra.sweep.dir=$OUT/rmsnorm_$dtype" 2>&1 | tee "$OUT/rmsnorm_$dtype.log"
    done
    # % of HBM bandwidth per cell (issue 11): bytes_min / median latency against the peaks.yaml row it matched.
    python3 - "$OUT" <<'PY' | tee "$OUT/pct_of_hbm.txt"
import sys
import neuronexp
for dtype in ("bfloat16", "float32"):
    cells = neuronexp.load(f"{sys.argv[1]}/rmsnorm_{dtype}").cells
    print(cells["peak_source"].iloc[0])
    cols = ["module", "dtype", "shape", "latency_median_us", "bytes_min", "achieved_gbs", "pct_peak_bw", "peak_memory_bytes",
            "output_check", "max_rel_err"]
    print(cells[cols].to_string(index=False))
PY
    ;;
*)
    echo "usage: bash bench/h200_study.sh fetch|run" >&2
    exit 2
    ;;
esac
