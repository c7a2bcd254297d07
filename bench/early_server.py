"""The fork server started before Hydra for a command that sweeps through its experiment's file, with no -m (issue 45:
the README's first command, `neuronexp +experiment=rmsnorm_sweep`, was taken for a single run there and started its
server only once Hydra had composed).

    python bench/early_server.py [--rounds 7] [--out FILE.json]

A tiny experiment of the same form (its own config directory: two modules, one small input, hydra.sweeper.params, no
-m) is run by the console script's `main` in a fresh interpreter, A: as it is; B: with `cli.main._runs_as_sweep`
answering as before (-m only), so that the sweep starts its server after Hydra. A and B alternate; per round, the
command's wall time, measured from outside. Reports the medians, and the median over rounds of B - A.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPERIMENT = """# @package _global_
baseline: {module: rmsnorm_naive}
hydra:
  mode: MULTIRUN
  sweeper:
    params:
      module: rmsnorm_naive,rmsnorm_fused
      input.shape: "[1,8,64]"
"""
MAIN = "import sys, neuronexp.cli.main as m\n{patch}sys.argv[0] = 'neuronexp'\nm.main()\n"
QUICK = ["profiler=quick", "timing.iters=20", "roofline.probe=off"]
BEFORE = "m._runs_as_sweep = lambda routed: any(a in ('-m', '--multirun') for a in routed)\n"


def one(root: Path, before: bool, n: int) -> dict[str, float]:
    """One command's wall time, timed from outside."""
    out = root / f"sweep{n}"
    args = ["--config-dir", str(root / "conf"), "+experiment=tiny", *QUICK, f"hydra.sweep.dir={out}"]
    code = MAIN.format(patch=BEFORE if before else "")
    started = time.time()
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=root, capture_output=True, text=True)
    wall = time.time() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return {"wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "conf" / "experiment").mkdir(parents=True)
        (root / "conf" / "experiment" / "tiny.yaml").write_text(EXPERIMENT)
        one(root, False, -1)  # warm the file cache: neither side pays for the first import from disk
        rounds = []
        for n in range(opts.rounds):
            order = (False, True) if n % 2 == 0 else (True, False)
            got = {("before" if b else "now"): one(root, b, 2 * n + i) for i, b in enumerate(order)}
            rounds.append(got)
            print(json.dumps(got), flush=True)
    summary = {
        side: {k: statistics.median(r[side][k] for r in rounds) for k in ("wall_s",)} for side in ("now", "before")
    }
    gain = {k: statistics.median(r["before"][k] - r["now"][k] for r in rounds) for k in ("wall_s",)}
    load = os.getloadavg()
    print(json.dumps({"median": summary, "gain_median_of_pairs": gain, "load": load}, indent=1))
    if opts.out:
        opts.out.write_text(json.dumps({"rounds": rounds, "median": summary, "gain": gain, "load": load}, indent=1))


if __name__ == "__main__":
    main()
