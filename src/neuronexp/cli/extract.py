"""`neuronexp-extract RUN_DIR --top K --out DIR`: the K hottest modules of a run profiled with profiler.modules=true,
each as a layer study of its own (module and experiment YAML; docs/layers.md), with the command for each and
the module's share in the model beside its standalone time. Exit status: 0 written; 2 bad input."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from neuronexp.cli.args import positive_int
from neuronexp.cli.pipe import quiet_on_closed_stdout


class ExtractError(ValueError):
    """One line for the user: what is missing and what to do."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="neuronexp-extract",
        description="Turn the hottest modules of a run profiled "
        "with profiler.modules=true into layer studies (Hydra configs).",
    )
    p.add_argument("dir", type=Path, metavar="RUN_DIR", help="a run directory (or a sweep: its first run with modules)")
    p.add_argument("--top", type=positive_int, default=3, metavar="K", help="hottest modules to extract (default 3)")
    p.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="config directory to write (module/, experiment/)"
    )
    return p


def _build_model(cfg: Any) -> Any:
    """The run's model as the cell built it: the same node, seed and dtype."""
    import torch
    from hydra.utils import instantiate

    from neuronexp.config.inputs import compute_dtype

    torch.manual_seed(int(cfg.input.seed))
    model = instantiate(cfg.module, _convert_="all")
    if cfg.input.get("model_dtype") is not None or getattr(torch, str(cfg.input.dtype)).is_floating_point:
        model = model.to(dtype=getattr(torch, compute_dtype(cfg.input)))
    return model.eval()


def _standalone_us(node: dict[str, Any], inputs: dict[str, Any], dtype: str, calls: int = 10) -> float:
    """Median wall-clock µs of the rebuilt module, eager, on the CPU: the check that it is the same work."""
    import torch
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from neuronexp.cell.inputs import make_inputs
    from neuronexp.config import InputConfig

    torch.manual_seed(0)
    module = instantiate(node, _convert_="all").to(dtype=getattr(torch, dtype)).eval()
    cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(InputConfig), inputs))
    assert isinstance(cfg, InputConfig), type(cfg)
    args, kwargs = make_inputs(cfg, module, torch.device("cpu"))
    times = []
    with torch.inference_mode():
        for i in range(calls + 3):
            start = time.perf_counter()
            module(*args, **kwargs)
            if i >= 3:
                times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def _dump(path: Path, header: list[str], body: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"# {line}\n" for line in header) + yaml.safe_dump(body, sort_keys=False, width=110)
    path.write_text(text)


def extract(run_dir: Path, top: int, out: Path) -> list[str]:
    from omegaconf import OmegaConf

    from neuronexp.analysis.modules import hot_units, of_run, short_type
    from neuronexp.cell.extract import first_output, fused_alternative, input_node, recipe, snake
    from neuronexp.config.inputs import compute_dtype
    from neuronexp.formatting import fmt_pct, fmt_us
    from neuronexp.results import read_any

    found = read_any(run_dir)
    modules = found.results.modules
    if modules.empty:
        raise ExtractError(f"{run_dir}: no modules table; run it again with profiler.modules=true")
    run_id = str(modules["run_id"].iloc[0])
    cfg = OmegaConf.load(found.job_dir_of[run_id] / "config.yaml")
    model = _build_model(cfg)
    dtype = compute_dtype(cfg.input)
    lines, used = [], set()
    for rank, row in enumerate(hot_units(of_run(modules, run_id)).head(top).itertuples(), 1):
        path = row.paths[0]
        module = model.get_submodule(path)
        name = snake(short_type(row.module_type))
        name = name if name not in used else f"{name}_{rank}"
        used.add(name)
        spec_json = of_run(modules, run_id).at[path, "input_specs"]
        try:
            inputs, notes = input_node(module, str(spec_json))
        except ValueError as exc:  # this one cannot be called alone from YAML; the others still can
            lines.append(f"{rank}. {short_type(row.module_type)} ({path}): not extracted: {exc}")
            continue
        if str(inputs["dtype"]).startswith(("float", "bfloat")):
            inputs["dtype"] = dtype
        how = recipe(module, out / "module" / f"{name}.pt")
        variants = [name]
        header = (
            [
                "@package _global_",
                f"{short_type(row.module_type)} at {path} of {cfg.module.get('_target_')}, alone, "
                f"with the inputs the model called it with; rebuilt from its {how.how}",
            ]
            + how.notes
            + notes
        )
        fused = fused_alternative(module, how.node)
        node = how.node
        if fused is not None and "SDPA" in fused[1]:  # compared on the attention output both forms return
            node, fused = first_output(node), (first_output(fused[0]), fused[1])
            header.append("wrapped in FirstOutput: eager attention also returns its weights, SDPA does not")
        _dump(out / "module" / f"{name}.yaml", header, {"module": node, "input": inputs})
        if fused is not None:
            _dump(
                out / "module" / f"{name}_fused.yaml",
                ["@package _global_", f"{name}, fused: {fused[1]}"],
                {"module": fused[0], "input": inputs},
            )
            variants.append(f"{name}_fused")
        _dump(
            out / "experiment" / f"{name}.yaml",
            [
                "@package _global_",
                f"{name}: {' and '.join(variants)}, eager and compiled; baseline: {name} eager",
                f"  neuronexp --config-dir {out} +experiment={name}",
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
        per_call = row.total_device_us / row.calls if row.calls else float("nan")
        alone = _standalone_us(node, inputs, dtype)
        where = path + (f" +{row.instances - 1} alike" if row.instances > 1 else "")
        lines += [
            f"{rank}. {short_type(row.module_type)} ({where}): rebuilt from its {how.how}; "
            + (f"fused: {fused[1]}" if fused else "no fused form known"),
            f"   in the model {fmt_pct(row.share)} of the step, {fmt_us(per_call)} per call (profiled op time) · "
            f"alone {fmt_us(alone)} per call (wall clock, eager)",
            f"   neuronexp --config-dir {out} +experiment={name}",
        ]
    return lines


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        lines = extract(args.dir, args.top, args.out)
    except Exception as exc:  # noqa: BLE001 - one line for whatever stopped it (no results, a module not rebuilt)
        text = str(exc).strip().splitlines()
        kind = "" if isinstance(exc, (ExtractError, FileNotFoundError)) else f"{type(exc).__name__}: "
        print(f"neuronexp-extract: error: {kind}{text[0] if text else ''}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
