#!/usr/bin/env python
"""Check, once, on a Trainium instance, every assumption neuronexp's Neuron backend makes that the docs leave open.

    pip install -e .[neuron]          # on a Trn2/Trn3 instance: TorchNeuron matching your PyTorch
    python scripts/neuron_smoke.py --out neuron_smoke_report.md

Prints a Markdown report (and writes it to --out) to paste into a neuronexp issue. Each check names the
assumption it tests and says PASS, FAIL, INFO (a fact to record) or SKIP; the checks live in
scripts/neuron_smoke_checks/. Exit status: 0 no check failed, 1 some check failed (the report says which and
why; tracebacks go to <workdir>/tracebacks.txt), 2 torch-neuronx cannot be imported here (one line, nothing
run). Takes several minutes (Neuron compiles; D3 runs two cells in fresh processes); --skip-compile leaves
out the torch.compile checks.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from neuron_smoke_checks import (  # noqa: F401  (they register)
    Context,
    Report,
    cell_checks,
    compile_checks,
    env_checks,
    explorer_checks,
    profiling_checks,
    route_checks,
    run_checks,
)


def torch_neuronx_problem() -> str | None:
    """Why torch-neuronx cannot be imported here, in one line; None when it can."""
    try:
        import torch_neuronx  # noqa: F401
    except Exception as exc:  # ImportError, or a broken install raising anything at import
        text = str(exc).strip().splitlines()
        return (
            f"neuron_smoke: torch-neuronx cannot be imported by {sys.executable} ({type(exc).__name__}: "
            f"{text[0] if text else ''}); run this on a Trn2/Trn3 instance after installing TorchNeuron "
            "(pip install -e .[neuron], see docs/neuron.md)"
        )
    return None


def render(report: Report, standin: bool) -> str:
    head = [
        "# neuronexp Neuron smoke report",
        "",
        f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
        f"- command: `{' '.join(sys.argv)}`",
    ]
    if standin:
        head += [
            "",
            "**STAND-IN torch_neuronx (tests/helpers/neuron_standin): this report says nothing about Trainium.**",
        ]
    table = ["", "| id | assumption | result |", "|---|---|---|"] + [
        f"| {c} | {a} | {r} |" for c, a, r, _ in report.rows
    ]
    details = [f"\n### {c} — {r}\n\n{a}\n\n```\n{d.strip()}\n```" for c, a, r, d in report.rows]
    return "\n".join(head + table + details) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="neuron_smoke_report.md", help="where to write the Markdown report")
    parser.add_argument(
        "--workdir", default=None, help="captures and Explorer output go here (default: a temp dir, kept)"
    )
    parser.add_argument("--shape", default="1,128,4096", help="input shape for the RMSNorm checks")
    parser.add_argument(
        "--skip-compile", action="store_true", help="leave out the torch.compile(backend='neuron') checks"
    )
    parser.add_argument(
        "--explorer-timeout",
        type=float,
        default=900,
        help="seconds to wait for each neuron-explorer run (big captures take minutes)",
    )
    parser.add_argument(
        "--device", default="neuron", help=argparse.SUPPRESS
    )  # "cpu": only to test this script on the stand-in
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device != "neuron":  # the stand-in's test: cells in other processes (the fork server's) use it too
        os.environ["NEURON_STANDIN_DEVICE"] = args.device
    if (
        importlib.util.find_spec("torch_neuronx") is not None
    ):  # found: the NEFF cache and the cores, as a cell sets them
        from neuronexp.backends.neuron.neff_cache import pin_neff_cache
        from neuronexp.backends.neuron.process_env import apply_core_env
        from neuronexp.backends.neuron.sdk import runtime_started
        from neuronexp.config import NeuronDeviceConfig, NeuronProfilerConfig

        pin_neff_cache(NeuronProfilerConfig())  # before anything compiles (C3 checks where the NEFFs went)
        apply_core_env(NeuronDeviceConfig(), runtime_started())  # one NeuronCore, before the runtime starts (A7)
    problem = torch_neuronx_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    import torch
    import torch_neuronx

    work = Path(args.workdir or tempfile.mkdtemp(prefix="neuron-smoke-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    ctx = Context(args, work, standin=bool(getattr(torch_neuronx, "__standin__", False)))
    report = Report()
    run_checks(ctx, report, ("A",))
    if args.device != "neuron":
        from neuronexp.backends.neuron.neuron_backend import NeuronBackend

        NeuronBackend.device_type = args.device
    from neuronexp.modules import NaiveRMSNorm

    shape = [int(d) for d in args.shape.split(",")]
    torch.manual_seed(0)
    ctx.x = torch.randn(*shape, dtype=torch.bfloat16).to(args.device)
    ctx.make_model = lambda: NaiveRMSNorm(shape[-1]).to(device=args.device, dtype=torch.bfloat16)
    model = ctx.make_model()
    ctx.model = lambda: model(ctx.x)
    with torch.no_grad():
        run_checks(ctx, report, ("B", "C"))
    run_checks(ctx, report, ("D", "E", "F", "G", "N"))
    text = render(report, ctx.standin) + f"\nArtifacts kept in `{work}`.\n"
    if report.tracebacks:
        (work / "tracebacks.txt").write_text("\n".join(report.tracebacks))
    Path(args.out).write_text(text)
    print(text)
    print(f"report written to {args.out}; paste it into a neuronexp issue", file=sys.stderr)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
