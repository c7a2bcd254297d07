"""Wall time of `neuronexp --help` (issue 16; the goal of issue 15 is 0.5 s), next to the start-up it no longer
pays for (`python -c "import torch"`) and to what Hydra alone costs (`python -c "import hydra"`).

Runs alternate (help, torch, hydra, help, ...) so that machine load hits all three alike; the report is the
median per command, with the 1-minute load average before and after.

    python bench/help_time.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    neuronexp = shutil.which("neuronexp") or os.path.join(os.path.dirname(sys.executable), "neuronexp")
    commands = {
        "neuronexp --help": [neuronexp, "--help"],
        "python -c 'import torch'": [sys.executable, "-c", "import torch"],
        "python -c 'import hydra'": [sys.executable, "-c", "import hydra"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    load_before = os.getloadavg()[0]
    _wall(commands["neuronexp --help"])  # warm the page cache once
    for _ in range(args.rounds):
        for name, cmd in commands.items():
            times[name].append(_wall(cmd))
    print(f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; {args.rounds} rounds")
    for name, values in times.items():
        print(f"{name:28s} median {statistics.median(values):.2f} s  (min {min(values):.2f}, max {max(values):.2f})")


if __name__ == "__main__":
    main()
