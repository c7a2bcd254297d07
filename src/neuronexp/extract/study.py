"""One unit of neuronexp-extract: its module taken from the rebuilt model and checked against the table, rebuilt alone
with the model's weights and checked against the module in the model (extract.check), its study's files
(module, fused form, weights, saved copy, experiment) as bytes, and a standalone timing of the rebuilt module on the
run's thread count, marked noisy as a cell would be (analysis.noise). A unit that cannot be rebuilt, or computes
something else alone, is one line; the others are still written."""

from __future__ import annotations

import hashlib
import io
import shlex
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from neuronexp.analysis.noise import NOISY_MARK
from neuronexp.extract.check import Checked, check, state_bytes, study_inputs, study_module
from neuronexp.extract.fused import first_output, fused_alternative
from neuronexp.extract.hot_units import ExtractError, Unit, experiment_file, yaml_file
from neuronexp.extract.recipe import Recipe, recipe
from neuronexp.extract.study_inputs import input_node, shown
from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.moduletime.attribution import qualified_type
from neuronexp.moduletime.views import short_type

# The standalone timing: a few warm-up calls, then rounds of calls; a round spread or a p90/p10 beyond noise.*'s
# defaults marks the figure noisy (`~`), as in the sweep's table.
_WARMUP, _ROUNDS, _CALLS = 2, 4, 3


@dataclass(frozen=True)
class Model:
    """The run's model as extract rebuilt it, and what its studies share: its compute dtype, its class (for the
    files' headers), the printed command's start, and the threads its cell was timed with."""

    module: nn.Module
    dtype: str
    target: str
    command: str
    threads: int


def study_files(
    units: list[Unit], model: nn.Module, dtype: str, cfg: dict[str, Any], out: Path, threads: int
) -> tuple[dict[str, bytes], list[str]]:
    """(relative path → bytes of every file, the lines to print), for all units; nothing is written here."""
    files: dict[str, bytes] = {}
    lines: list[str] = []
    command = f"neuronexp --config-dir {shlex.quote(str(out))} +experiment="
    run = Model(model, dtype, str(cfg["module"].get("_target_")), command, threads)
    for unit in units:
        lines += unit_study(unit, run, files)
    return files, lines


def _submodule(model: nn.Module, unit: Unit) -> nn.Module:
    path = unit.paths[0]
    try:
        module = model.get_submodule(path)
    except AttributeError:
        module = None
    if module is None or qualified_type(module) != unit.module_type:
        found = "nothing" if module is None else f"a {shown(qualified_type(module))}"
        raise ExtractError(
            f"modules.parquet names a {shown(unit.module_type)} at {shown(path)}, the run's model has {found} "
            "there: the table is not this model's (changed since, or its code was); run the model again"
        )
    return module


def _label(unit: Unit) -> str:
    alike = f" +{len(unit.paths) - 1} alike" if len(unit.paths) > 1 else ""
    forms = f", called {unit.forms} ways: the study takes the hottest" if unit.forms > 1 else ""
    return f"{unit.rank}. {shown(short_type(unit.module_type))} ({shown(unit.paths[0] + alike + forms)})"


def unit_study(unit: Unit, run: Model, files: dict[str, bytes]) -> list[str]:
    """Adds the unit's files to `files`; returns its lines (or the one saying why it was not extracted)."""
    module, label = _submodule(run.module, unit), _label(unit)
    if unit.call is None:
        return [f"{label}: not extracted: the table holds no recorded call of it"]
    try:
        inputs, notes = input_node(module, *unit.call)
        how = recipe(module, f"module/{unit.name}.pt", getattr(run.module, "config", None))
    except ValueError as exc:  # this one cannot be called alone from YAML, or saved; the others still can
        return [f"{label}: not extracted: {shown(exc)}"]
    if str(inputs["dtype"]).startswith(("float", "bfloat")):
        inputs["dtype"] = run.dtype
    weights = state_bytes(module)
    try:
        study = _saved_copy(how) if how.saved else study_module(how.node, weights, run.dtype)
        args, kwargs = study_inputs(study, inputs)
        checked = check(module, study, args, kwargs, run.dtype)
        alone, noise = _alone_us(study, args, kwargs, run.threads)
    except Exception as exc:  # the study would fail the same way: this one is not written, the others are
        first = str(exc).strip().splitlines()
        return [
            f"{label}: not extracted: rebuilt alone, it failed ({shown(first[0] if first else type(exc).__name__)})"
        ]
    if not checked.same:
        return [
            f"{label}: not extracted: rebuilt alone it does not compute what the model's module does on the same "
            f"inputs ({shown(checked.output['output_note'])})"
        ]
    header = [
        "@package _global_",
        f"{short_type(unit.module_type)} at {unit.paths[0]} of {run.target}, alone, with the inputs the model called "
        f"it with; rebuilt from its {how.how}, with the model's weights",
        *how.notes,
        *notes,
        *([checked.kernel_words()] if checked.kernel_words() else []),
    ]
    own, fused = _module_files(unit.name, how, module, inputs, header, weights)
    own[f"experiment/{unit.name}.yaml"] = experiment_file(unit.name, fused is not None, run.command)
    files.update(own)
    return _lines(unit, run, how, fused, checked, (alone, noise))


def _saved_copy(how: Recipe) -> nn.Module:
    """The pickled copy as the study loads it (extract's own bytes, made a moment ago)."""
    assert how.saved is not None
    return torch.load(io.BytesIO(how.saved), weights_only=False, map_location="cpu").eval()


def _lines(
    unit: Unit, run: Model, how: Recipe, fused: str | None, checked: Checked, timed: tuple[float, list[str]]
) -> list[str]:
    """The unit's lines: how it was rebuilt and its fused form; its share and time in the model and alone; what the
    check found; the command."""
    alone, noise, label = *timed, _label(unit)
    whole = f", all {len(unit.paths)} instances" if len(unit.paths) > 1 else ""
    threads = f"{run.threads} thread{'s' if run.threads != 1 else ''} as in the run"
    lines = [
        f"{label}: rebuilt from its {how.how}, with the model's weights; "
        + (f"fused: {fused}" if fused else "no fused form known"),
        f"   in the model {NOISY_MARK if unit.noise else ''}{fmt_pct(unit.share)} of the step{whole}, "
        f"{fmt_us(unit.per_call_us)} per call (profiled op time) · alone {NOISY_MARK if noise else ''}"
        f"{fmt_us(alone)} per call (wall clock, eager, {threads}" + (f"; noisy: {'; '.join(noise)})" if noise else ")"),
    ]
    if unit.noise:
        lines.append(f"   {NOISY_MARK} its place in the ranking could change: {unit.noise}")
    return [
        *lines,
        f"   checked against the module in the model, same inputs: the same output ({checked.output['output_note']}), "
        + (checked.kernel_words() or "the same operators"),
        f"   {run.command}{unit.name}",
    ]


@dataclass
class _Weights:
    """The model's weights of one unit (module/NAME.weights.pt), and the node wrapper that loads them by their sha256
    into a rebuilt module; `used` once a node needs them."""

    name: str
    data: bytes
    used: bool = False

    def __call__(self, node: dict[str, Any]) -> dict[str, Any]:
        self.used = True
        return {
            "_target_": "neuronexp.modules.extracted.with_weights",
            "module": node,
            "path": f"module/{self.name}.weights.pt",
            "sha256": hashlib.sha256(self.data).hexdigest(),
        }


def _module_files(
    name: str, how: Recipe, module: nn.Module, inputs: dict[str, Any], header: list[str], weights: bytes
) -> tuple[dict[str, bytes], str | None]:
    """(module/NAME.yaml, its weights, its saved copy and its fused form; what the fused form is, or None)."""
    files: dict[str, bytes] = {}
    weighted = _Weights(name, weights)
    node = how.node if how.saved is not None else weighted(how.node)  # a saved copy holds its weights already
    fused = fused_alternative(module, how.node, weighted)
    if fused is not None and "SDPA" in fused[1]:  # compared on the attention output both forms return
        node, fused = first_output(node), (first_output(fused[0]), fused[1])
        header = [*header, "wrapped in FirstOutput: eager attention also returns its weights, SDPA does not"]
    files[f"module/{name}.yaml"] = yaml_file(header, {"module": node, "input": inputs})
    if how.saved is not None:
        files[f"module/{name}.pt"] = how.saved
    if weighted.used:
        files[f"module/{name}.weights.pt"] = weights
    if fused is not None:
        files[f"module/{name}_fused.yaml"] = yaml_file(
            ["@package _global_", f"{name}, fused: {fused[1]}, with the model's weights"],
            {"module": fused[0], "input": inputs},
        )
    return files, fused[1] if fused is not None else None


def _alone_us(
    module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], threads: int
) -> tuple[float, list[str]]:
    """Median wall-clock µs of `module` alone, eager, on the CPU with the run's thread count (a team of every CPU
    waits on whatever else the host runs: 60 ms against 2 ms measured here), and why the figure is noisy (noise_of;
    empty when it is not)."""
    before = torch.get_num_threads()
    rounds: list[list[float]] = []
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            for _ in range(_WARMUP):
                module(*args, **kwargs)
            for _ in range(_ROUNDS):
                rounds.append([])
                for _ in range(_CALLS):
                    start = time.perf_counter()
                    module(*args, **kwargs)
                    rounds[-1].append((time.perf_counter() - start) * 1e6)
    finally:
        torch.set_num_threads(before)
    return statistics.median([t for r in rounds for t in r]), noise_of(rounds)


def noise_of(rounds: list[list[float]]) -> list[str]:
    """Why timings taken in `rounds` are noisy (analysis.noise.judge with noise.*'s defaults); empty when not."""
    from neuronexp.analysis.noise import judge
    from neuronexp.config.schema import NoiseConfig

    samples = [t for r in rounds for t in r]
    medians = [statistics.median(r) for r in rounds]
    deciles = statistics.quantiles(samples, n=10)
    figures = {
        "latency_rounds": len(rounds),
        "round_spread": (max(medians) - min(medians)) / statistics.median(medians),
        "p90_p10": deciles[-1] / deciles[0] if deciles[0] > 0 else None,
    }
    return judge(figures, NoiseConfig())[0]
