"""neuronexp-extract's units: each hot module planned from the table (its file name, its recorded call, checked before
any work), then turned into the bytes of its study's files and a quick standalone timing. Text from the model or the
table reaches a file only through the YAML emitter, as a literal, or escaped in a comment (docs/guarantees.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ExtractError(ValueError):
    """One line for the user: what is missing and what to do."""


@dataclass(frozen=True, kw_only=True)
class Unit:
    rank: int
    name: str  # the file and config name, safe (extract.recipe.study_name)
    module_type: str
    paths: list[str]
    share: float  # of the step, the class's instances summed
    per_call_us: float  # profiled op time per call in the model, of the form the study takes (moduletime.views)
    call: tuple[list[Any], dict[str, Any]] | None  # the recorded first call (args, kwargs), checked
    forms: int = 1  # ways the class was called (input shapes); the study takes the hottest
    noise: str = ""  # why its place in the ranking could change (moduletime.views.ranked); "" when it could not

    def files(self) -> list[str]:
        """Every file this unit may write (which ones it does depends on the module)."""
        n = self.name
        return [
            f"module/{n}.yaml",
            f"module/{n}_fused.yaml",
            f"module/{n}.pt",
            f"module/{n}.weights.pt",
            f"experiment/{n}.yaml",
        ]


def _unique(base: str, rank: int, used: set[str]) -> str:
    candidates = [base, f"{base}_{rank}", *(f"{base}_{rank}_{k}" for k in range(2, 100))]
    name = next(c for c in candidates if c not in used and f"{c}_fused" not in used)
    used.update((name, f"{name}_fused"))
    return name


def plan_units(hot: Any, table: Any, where: Path) -> list[Unit]:
    """The units of `hot` (moduletime.views.hot_units: one per class), named and with the recorded call of the
    class's hottest form read. ExtractError: a class name that gives no safe file name; BadSpecs: a recorded call
    outside the grammar."""
    from neuronexp.extract.recipe import study_name
    from neuronexp.extract.study_inputs import read_specs, shown

    units: list[Unit] = []
    used: set[str] = set()
    for rank, row in enumerate(hot.itertuples(), 1):
        path, base = row.paths[0], study_name(row.module_type)
        if base is None:
            raise ExtractError(
                f"{where}: module_type {shown(row.module_type)} of {shown(path)} gives no file name "
                "(no letter or digit in its class name); nothing was written"
            )
        specs = table.at[path, "input_specs"]
        call = (
            read_specs(specs, f"{where}: input_specs of {shown(path) or '(root)'}") if isinstance(specs, str) else None
        )
        units.append(
            Unit(
                rank=rank,
                name=_unique(base, rank, used),
                module_type=str(row.module_type),
                paths=list(row.paths),
                share=float(row.share),
                per_call_us=row.form_total_device_us / row.form_calls if row.form_calls else float("nan"),
                call=call,
                forms=int(row.forms),
                noise=str(row.noise),
            )
        )
    return units


def yaml_file(header: list[str], body: dict[str, Any]) -> bytes:
    """A config file: comment lines with every control character and line break escaped, then `body` as the YAML
    emitter writes it."""
    import yaml

    from neuronexp.extract.study_inputs import shown

    comments = "".join(f"# {shown(line)}\n" for line in header)
    return (comments + yaml.safe_dump(body, sort_keys=False, width=110)).encode()


def experiment_file(name: str, fused: bool, command: str) -> bytes:
    """experiment/NAME.yaml: the module (and its fused form), eager and compiled, the module eager as baseline."""
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
