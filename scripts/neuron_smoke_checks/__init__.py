"""The checks of scripts/neuron_smoke.py, one module per area (A environment, B-C profiling, D Neuron Explorer,
E-F compile and cells, G whole cells as a user runs them; route_checks: the Python, cores, route, compile metrics and
the NKI recipe, N). Each check states the assumption it tests and answers PASS, FAIL, INFO (a fact to record) or SKIP;
an exception is a FAIL with one line in the report and its traceback in the work folder."""

from __future__ import annotations

import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Context:
    """What every check may use: the options, the work folder, and (once torch-neuronx imported) a model."""

    args: Any
    work: Path
    model: Callable[[], Any] | None = None
    make_model: Callable[[], Any] | None = None
    x: Any = None
    standin: bool = False
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # neuronexp rows the G checks made, by name


@dataclass
class Report:
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)  # (id, assumption, result, detail)
    tracebacks: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(r[2] == "FAIL" for r in self.rows)


Check = Callable[[Context], tuple[str, str]]
CHECKS: list[tuple[str, str, Check]] = []


def check(cid: str, assumption: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS.append((cid, assumption, fn))
        return fn

    return register


def run_checks(ctx: Context, report: Report, ids: tuple[str, ...]) -> None:
    """Run the registered checks whose id starts with one of `ids`; a failing check is recorded, never fatal."""
    for cid, assumption, fn in sorted((c for c in CHECKS if c[0].startswith(ids)), key=lambda c: c[0]):
        try:
            result, detail = fn(ctx)
        except Exception as exc:  # the report must always come out; the traceback goes to a file
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            result, detail = "FAIL", f"{type(exc).__name__}: {first} (traceback: tracebacks.txt)"
            report.tracebacks.append(f"## {cid}\n{traceback.format_exc()}")
        report.rows.append((cid, assumption, result, detail))
        print(f"[{result}] {cid}: {assumption}", file=sys.stderr)


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
