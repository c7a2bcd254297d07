"""Start-up of a cell's own process (issue 15, "a cell in a fresh process"): a fresh interpreter against a fork of
neuronexp's template process, and whether a forked process computes like a fresh one.

    python bench/cell_startup.py [--rounds 10] [--before SRC] [--sweep-reps 3] [--out FILE.json]

1. start-up: time from asking for a cell process to the moment its code runs, `python -c` with the imports the
   old per-cell bootstrap made (torch, neuronexp's cell stack) against `run_forked` from a running template;
   A and B alternated, median of --rounds. The template's own boot is a once-per-sweep cost, reported apart.
   `end_s`: from that code's end (it does nothing more) to its supervisor told the process ended: its exit, a fork's
   unmapping of what it shares with the template, the reaping (issue 47: what a process per cell costs at its end).
2. compute: in each kind of process, with the same cores and threads, the first parallel torch ops (this starts
   the OpenMP pool), then a 512x512 matmul and a 4M-element multiply: min and median of 40 calls after 10, and
   page faults per call; alternated, medians over rounds. On a shared 2-core VM the medians follow the load
   (an OpenMP barrier waits for a descheduled thread); the minimum and the faults do not.
3. end to end (`--before SRC`, a checkout of the code before the fork server, e.g. from `git archive`): the
   console script's trivial sweeps of 1 and 6 cells under `hydra/launcher=parallel launcher.devices=1` and the
   basic launcher, with the installed code and with PYTHONPATH=SRC, alternated; per extra cell =
   (wall(6 cells) - wall(1 cell)) / 5, median of --sweep-reps.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FRESH = (
    "import sys, time; import torch; import neuronexp.cell.run, neuronexp.config.compose; "
    "sys.path.insert(0, {here!r}); import cell_startup; cell_startup.{target}({payload!r})"
)


def started(payload: dict[str, Any]) -> int:
    """Target: note when the cell's code began (CLOCK_MONOTONIC is one clock for every process of the host)."""
    Path(payload["out"]).write_text(json.dumps({"at": time.monotonic()}))
    return 0


def compute(payload: dict[str, Any]) -> int:
    """Target: first parallel ops, then steady state (after 10 calls): min and median of 40 calls, and minor page
    faults per call (a process whose allocator gives memory back and takes it again faults on every call)."""
    import resource

    import torch

    cpus = payload["cpus"]
    os.sched_setaffinity(0, cpus)
    torch.set_num_threads(len(cpus))
    a, x = torch.randn(512, 512), torch.randn(4_000_000)
    t = time.perf_counter()
    (a @ a).sum().item()
    (x * 2.0).sum().item()
    out: dict[str, Any] = {"first_ops_s": time.perf_counter() - t, "threads": torch.get_num_threads()}
    for name, fn in (("matmul", lambda: a @ a), ("mul", lambda: x * 2.0)):
        for _ in range(10):
            fn()
        faults, samples = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, []
        for _ in range(40):
            t = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t) * 1e6)
        out[f"{name}_faults_per_call"] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / 40
        out[f"{name}_min_us"], out[f"{name}_median_us"] = min(samples), statistics.median(samples)
    Path(payload["out"]).write_text(json.dumps(out))
    return 0


def _fresh(target: str, payload: dict[str, Any]) -> float:
    t = time.monotonic()
    subprocess.run([sys.executable, "-c", FRESH.format(here=str(HERE), target=target, payload=payload)], check=True)
    return t


def _forked(target: str, payload: dict[str, Any]) -> float:
    import cell_startup  # this file by its module name: a function of __main__ would not unpickle in the fork

    from neuronexp.cellprocess.childproc import ForkRequest
    from neuronexp.cellprocess.forkserver import run_forked

    t = time.monotonic()
    request = ForkRequest.to_run(
        getattr(cell_startup, target),
        payload,
        kind="cpu",
        env=dict(os.environ),
        cwd=os.getcwd(),
        sys_path=[str(HERE), *sys.path],
        cpus=None,
        log=os.devnull,
    )
    ended = run_forked(request, 120)
    assert ended.code == 0, ended
    return t


def startup_and_compute(rounds: int, work: Path) -> dict[str, Any]:
    from neuronexp.cellprocess.forkserver import ForkServer, hello, server_address

    out = work / "seen.json"
    t = time.monotonic()
    with ForkServer():
        hello(server_address())  # answered once the template has imported torch and neuronexp
        boot = time.monotonic() - t
        rows: dict[str, list[Any]] = {"fresh": [], "forked": []}
        ends: dict[str, list[Any]] = {"fresh": [], "forked": []}  # from the code's end to its process's end reported
        comp: dict[str, list[Any]] = {"fresh": [], "forked": []}
        cpus = sorted(os.sched_getaffinity(0))
        for _ in range(rounds):
            for kind, run in (("fresh", _fresh), ("forked", _forked)):
                asked = run("started", {"out": str(out)})
                ended, at = time.monotonic(), json.loads(out.read_text())["at"]
                rows[kind].append(at - asked)
                ends[kind].append(ended - at)
                run("compute", {"out": str(out), "cpus": cpus})
                comp[kind].append(json.loads(out.read_text()))
    summary = {
        k: {
            "startup_s_median": statistics.median(v),
            "end_s_median": statistics.median(ends[k]),
            "startup_s": v,
            "end_s": ends[k],
        }
        for k, v in rows.items()
    }
    for kind, runs in comp.items():
        # medians over rounds of each process's figures
        summary[kind]["compute"] = {m: statistics.median(r[m] for r in runs) for m in runs[0]}
    return {"template_boot_s": boot, **summary}


TRIVIAL = ["module=rmsnorm_naive", "profiler=quick", "timing.warmup=1", "timing.iters=5", "timing.min_iters=3"]
SHAPES = [f"[1,8,{w}]" for w in (64, 72, 80, 88, 96, 104)]
LAUNCHERS = {"basic": [], "parallel, 1 slot": ["hydra/launcher=parallel", "launcher.devices=1"]}


def _sweep(args: list[str], src: str | None, work: Path) -> float:
    run = Path(tempfile.mkdtemp(dir=work))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(run / "inductor"))
    env.pop("HYDRA_FULL_ERROR", None)
    if src:
        env["PYTHONPATH"] = src
    exe = Path(sys.executable).parent / "neuronexp"
    t = time.perf_counter()
    subprocess.run(
        [str(exe), "-m", *args, f"hydra.sweep.dir={run / 'sweep'}", f"launcher.lock_dir={run / 'locks'}"],
        cwd=run,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t


def end_to_end(before: str, reps: int, work: Path) -> dict[str, Any]:
    walls: dict[str, list[float]] = {}
    loads = []
    for _ in range(reps):
        for code, src in (("before", before), ("after", None)):
            for name, extra in LAUNCHERS.items():
                for n in (1, 6):
                    loads.append(os.getloadavg()[0])
                    walls.setdefault(f"{code} | {name} | {n}", []).append(
                        _sweep([*TRIVIAL, f"input.shape={','.join(SHAPES[:n])}", *extra], src, work)
                    )
    out: dict[str, Any] = {"walls_s": walls, "load_1min_before_each": loads}
    for code in ("before", "after"):
        for name in LAUNCHERS:
            one, six = (statistics.median(walls[f"{code} | {name} | {n}"]) for n in (1, 6))
            out[f"{code} | {name}"] = {"one_cell_s": one, "six_cells_s": six, "per_extra_cell_s": (six - one) / 5}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--before", help="src/ of the code before the fork server, for the end-to-end rows")
    parser.add_argument("--sweep-reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "cell_startup.json")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nx-startup-"))
    report: dict[str, Any] = {
        "machine": {
            "cores": len(os.sched_getaffinity(0)),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "load_before": os.getloadavg(),
        "processes": startup_and_compute(opts.rounds, work),
    }
    print(json.dumps({k: v for k, v in report["processes"].items()}, indent=1, default=str)[:2000], flush=True)
    if opts.before:
        report["end_to_end"] = end_to_end(opts.before, opts.sweep_reps, work)
    report["load_after"] = os.getloadavg()
    shutil.rmtree(work, ignore_errors=True)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written {opts.out}")


if __name__ == "__main__":
    main()
