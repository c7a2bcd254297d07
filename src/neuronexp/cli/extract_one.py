"""One unit of neuronexp-extract: its module taken from the rebuilt model and checked against the table, its study's
files (module, fused form, saved copy, experiment) as bytes, and a standalone timing of the rebuilt module, marked
noisy as a cell would be (analysis.noise)."""

from __future__ import annotations

import copy
import shlex
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from neuronexp.analysis.noise import NOISY_MARK
from neuronexp.cell.extract_inputs import input_node, shown
from neuronexp.cell.extract_recipe import Recipe, first_output, fused_alternative, recipe
from neuronexp.cli.extract_units import ExtractError, Unit, yaml_file
from neuronexp.formatting import fmt_pct, fmt_us
from neuronexp.moduletime.attribution import qualified_type
from neuronexp.moduletime.views import short_type

# The standalone timing: a few warm-up calls, then rounds of calls; a round spread or a p90/p10 beyond noise.*'s
# defaults marks the figure noisy (`~`), as in the sweep's table.
_WARMUP, _ROUNDS, _CALLS = 2, 4, 3


def study_files(
    units: list[Unit], model: nn.Module, dtype: str, cfg: dict[str, Any], out: Path
) -> tuple[dict[str, bytes], list[str]]:
    """(relative path → bytes of every file, the lines to print), for all units; nothing is written here."""
    files: dict[str, bytes] = {}
    lines: list[str] = []
    command = f"neuronexp --config-dir {shlex.quote(str(out))} +experiment="
    for unit in units:
        lines += unit_study(unit, model, dtype, str(cfg["module"].get("_target_")), command, files)
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


def unit_study(
    unit: Unit, model: nn.Module, dtype: str, target: str, command: str, files: dict[str, bytes]
) -> list[str]:
    """Adds the unit's files to `files`; returns its lines (or the one saying why it was not extracted)."""
    module = _submodule(model, unit)
    where = unit.paths[0] + (f" +{len(unit.paths) - 1} alike" if len(unit.paths) > 1 else "")
    label = f"{unit.rank}. {shown(short_type(unit.module_type))} ({shown(where)})"
    if unit.call is None:
        return [f"{label}: not extracted: the table holds no recorded call of it"]
    try:
        inputs, notes = input_node(module, *unit.call)
        how = recipe(module, f"module/{unit.name}.pt", getattr(model, "config", None))
    except ValueError as exc:  # this one cannot be called alone from YAML, or saved; the others still can
        return [f"{label}: not extracted: {shown(exc)}"]
    if str(inputs["dtype"]).startswith(("float", "bfloat")):
        inputs["dtype"] = dtype
    header = [
        "@package _global_",
        f"{short_type(unit.module_type)} at {unit.paths[0]} of {target}, alone, with the inputs the model called "
        f"it with; rebuilt from its {how.how}",
        *how.notes,
        *notes,
    ]
    node, fused = _module_files(unit.name, how, module, inputs, header, files)
    files[f"experiment/{unit.name}.yaml"] = _experiment(unit.name, fused is not None, command)
    try:
        alone, noise = _alone_us(copy.deepcopy(module) if how.saved else _built(node, dtype), inputs)
    except Exception as exc:  # the study would fail the same way: say so, and write none of it
        first = str(exc).strip().splitlines()
        raise ExtractError(
            f"{label}: the rebuilt module failed when called alone ({shown(first[0] if first else exc)}); "
            "nothing was written"
        ) from None
    return [
        f"{label}: rebuilt from its {how.how}; " + (f"fused: {fused}" if fused else "no fused form known"),
        f"   in the model {fmt_pct(unit.share)} of the step, {fmt_us(unit.per_call_us)} per call (profiled op time) · "
        f"alone {NOISY_MARK if noise else ''}{fmt_us(alone)} per call (wall clock, eager"
        + (f"; noisy: {'; '.join(noise)})" if noise else ")"),
        f"   {command}{unit.name}",
    ]


def _module_files(
    name: str, how: Recipe, module: nn.Module, inputs: dict[str, Any], header: list[str], files: dict[str, bytes]
) -> tuple[dict[str, Any], str | None]:
    """module/NAME.yaml, its saved copy and its fused form into `files`; (the module's node, what the fused form
    is, or None)."""
    node, fused = how.node, fused_alternative(module, how.node)
    if fused is not None and "SDPA" in fused[1]:  # compared on the attention output both forms return
        node, fused = first_output(node), (first_output(fused[0]), fused[1])
        header = [*header, "wrapped in FirstOutput: eager attention also returns its weights, SDPA does not"]
    files[f"module/{name}.yaml"] = yaml_file(header, {"module": node, "input": inputs})
    if how.saved is not None:
        files[f"module/{name}.pt"] = how.saved
    if fused is None:
        return node, None
    files[f"module/{name}_fused.yaml"] = yaml_file(
        ["@package _global_", f"{name}, fused: {fused[1]}"], {"module": fused[0], "input": inputs}
    )
    return node, fused[1]


def _experiment(name: str, fused: bool, command: str) -> bytes:
    variants = [name, f"{name}_fused"] if fused else [name]
    return yaml_file(
        [
            "@package _global_",
            f"{name}: {' and '.join(variants)}, eager and compiled; baseline: {name} eager",
            f"  {command}{name}",
        ],
        {
            "defaults": [{"override /module": name}],
            "baseline": {"module": name, "compile.enabled": False},
            "hydra": {
                "mode": "MULTIRUN",
                "sweep": {"dir": f"outputs/sweeps/extracted/{name}/${{now:%Y-%m-%d_%H-%M-%S}}"},
                "sweeper": {"params": {"module": ",".join(variants), "compile.enabled": "false,true"}},
            },
        },
    )


def _built(node: dict[str, Any], dtype: str) -> nn.Module:
    """The module as the study builds it (its node holds only the module's own class and neuronexp's)."""
    from neuronexp.config.targets import instantiate

    torch.manual_seed(0)
    return instantiate(node).to(dtype=getattr(torch, dtype))


def _alone_us(module: nn.Module, inputs: dict[str, Any]) -> tuple[float, list[str]]:
    """Median wall-clock µs of `module` alone, eager, on the CPU (the check that it is the same work), and why the
    figure is noisy (noise_of; empty when it is not)."""
    from omegaconf import OmegaConf

    from neuronexp.cell.inputs import make_inputs
    from neuronexp.config import InputConfig

    cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(InputConfig), inputs))
    assert isinstance(cfg, InputConfig), type(cfg)
    module = module.eval()
    args, kwargs = make_inputs(cfg, module, torch.device("cpu"))
    rounds: list[list[float]] = []
    with torch.inference_mode():
        for _ in range(_WARMUP):
            module(*args, **kwargs)
        for _ in range(_ROUNDS):
            rounds.append([])
            for _ in range(_CALLS):
                start = time.perf_counter()
                module(*args, **kwargs)
                rounds[-1].append((time.perf_counter() - start) * 1e6)
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
