"""Wall time of the commands that must feel instant (issue 15): a config error, `--help` and one Tab of shell
completion, each as a ratio to `python -c "import torch"` timed in the same round.

A round runs every command once, back to back, so that the machine's load hits them alike; each ratio is taken
within its round (paired) and the median over rounds is reported, with the absolute medians and the 1-minute
load average before and after. With `--before DIR` (the `src/` of another checkout, e.g. from
`git archive <commit> src conf | tar -x -C DIR`), each neuronexp command also runs with that code first on
PYTHONPATH, in the same rounds: before and after are paired too.

    python bench/error_time.py [--rounds 7] [--before /tmp/nx_before/src] [--now src] [--json out.json]

Goals (issue 15): error / import torch <= 0.3; --help and completion <= 0.5 s. Issue 34: --help, backend=cuda
with a CPU-only torch and backend=neuron without torch-neuronx <= 0.3 x import torch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ERROR_LINE = "neuronexp: error: input.shape=[0]: must be a non-empty list of positive integers"


def _commands(neuronexp: str) -> dict[str, tuple[list[str], dict[str, str], int, str]]:
    """name: (argv, extra environment, expected exit status, text expected in stdout+stderr)."""
    line = "neuronexp inp"
    completion_env = {"COMP_LINE": line, "COMP_POINT": str(len(line))}
    return {
        "error": ([neuronexp, "input.shape=[0]"], {}, 2, ERROR_LINE),
        "error, sweep (-m)": ([neuronexp, "-m", "input.shape=[1,8],[0]"], {}, 2, ERROR_LINE),
        "--help": ([neuronexp, "--help"], {}, 0, "== Main keys"),
        # On a machine without them (issue 34): answered from torch's version file and importlib's finder.
        "backend=cuda (CPU-only torch)": ([neuronexp, "backend=cuda"], {}, 2, "neuronexp: error: backend=cuda: CUDA"),
        "backend=neuron (no torch-neuronx)": ([neuronexp, "backend=neuron"], {}, 2, "torch-neuronx is not installed"),
        "completion (Tab)": ([neuronexp, "-sc", "query=bash"], completion_env, 0, "input."),
    }


def _wall(argv: list[str], env: dict[str, str], cwd: str, code: int, expect: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != code or expect not in proc.stdout + proc.stderr:  # timing the wrong thing is worse than none
        sys.exit(f"{argv}: exit {proc.returncode}, expected {code} and {expect!r}:\n{proc.stderr[-1500:]}")
    return wall


def _where(env: dict[str, str]) -> str:
    code = "import neuronexp, os; print(os.path.dirname(neuronexp.__file__))"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", help="src/ of the checkout to compare with, put first on PYTHONPATH")
    parser.add_argument("--now", help="src/ of the code to time (default: the installed neuronexp)")
    parser.add_argument("--json", help="write the raw walls here")
    args = parser.parse_args()
    neuronexp = shutil.which("neuronexp") or os.path.join(os.path.dirname(sys.executable), "neuronexp")
    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYDRA_FULL_ERROR")}
    variants = {"now": {**base_env, "PYTHONPATH": os.path.abspath(args.now)} if args.now else base_env}
    if args.before:
        variants["before"] = {**base_env, "PYTHONPATH": os.path.abspath(args.before)}
    for name, env in variants.items():
        print(f"{name}: neuronexp from {_where(env)}")
    runs: list[tuple[str, list[str], dict[str, str], int, str]] = [
        ("python -c 'import torch'", [sys.executable, "-c", "import torch"], base_env, 0, ""),
        ("python -c 'import hydra'", [sys.executable, "-c", "import hydra"], base_env, 0, ""),
    ]
    for cmd, (argv, extra, code, expect) in _commands(neuronexp).items():
        for variant, env in variants.items():
            runs.append((f"{cmd} [{variant}]", argv, {**env, **extra}, code, expect))
    walls: dict[str, list[float]] = {name: [] for name, *_ in runs}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as cwd:  # nothing may be written; an empty directory shows it
        for _name, argv, env, code, expect in runs:  # one untimed pass: page cache, and each command checked
            _wall(argv, env, cwd, code, expect)
        for _ in range(args.rounds):
            for name, argv, env, code, expect in runs:
                walls[name].append(_wall(argv, env, cwd, code, expect))
        assert not os.listdir(cwd), os.listdir(cwd)
    load_after = os.getloadavg()
    torch_walls = walls[runs[0][0]]
    print(
        f"load average (1, 5, 15 min): {' '.join(f'{x:.2f}' for x in load_before)} before, "
        f"{' '.join(f'{x:.2f}' for x in load_after)} after; {args.rounds} rounds, {os.cpu_count()} CPUs"
    )
    print("| command | median wall | range | ÷ import torch (median of paired ratios) |")
    print("|---|---|---|---|")
    for name, values in walls.items():
        ratios = [v / t for v, t in zip(values, torch_walls)]
        print(
            f"| {name} | {statistics.median(values):.2f} s | {min(values):.2f}–{max(values):.2f} s | "
            f"{statistics.median(ratios):.2f} |"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"load_before": load_before, "load_after": load_after, "rounds": args.rounds, "walls": walls},
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
