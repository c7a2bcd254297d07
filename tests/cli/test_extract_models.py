"""neuronexp-extract on whole models, from YAML as a user runs them (issue 43): per architecture family shipped in
experiments/ (tiny_llama, tiny_t5, tiny_vit, tiny_mixtral), the hottest class by a hand check (forward hooks, wall
clock) is among `--top 3`; every study written computes, built from its own YAML as its cell builds it, what its
module computed inside the model on the very input the model gave it (captured by a hook); the MoE study runs the
model's experts kernel in its cell. And a module that computes something else alone is left out in one line, the
others written; one that runs other operators alone is written and says which."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._dynamo  # noqa: F401 - what a dispatch mode's first use imports (3 s here): paid at collection
import yaml
from torch import nn

from helpers import EXPERIMENTS, run_cli
from helpers.extract_models import RebuildNet
from helpers.profiled import profiled_run
from neuronexp.cli.extract import extract
from neuronexp.extract.hot_units import Unit
from neuronexp.extract.study import Model, unit_study

FAST = ["timing.warmup=1", "timing.iters=3", "timing.min_iters=1", "timing.min_seconds=0", "timing.rounds=2"]
PROFILE = ["profiler.schedule.wait=0", "profiler.schedule.warmup=1", "profiler.schedule.active=1"]


def _unit(rank: int, path: str, module_type: str) -> Unit:
    call = ([{"shape": [2, 8, 32], "dtype": "float32"}], {})
    return Unit(rank=rank, name=path, module_type=module_type, paths=[path], share=0.5, per_call_us=1.0, call=call)


def test_a_module_that_computes_otherwise_alone_is_one_line_and_other_operators_are_said() -> None:
    model = Model(RebuildNet(32).eval(), "float32", "helpers.extract_models.RebuildNet", "neuronexp +experiment=", 1)
    files: dict[str, bytes] = {}
    (scaled,) = unit_study(_unit(1, "scaled", "helpers.extract_models.Scaled"), model, files)
    assert scaled.startswith("1. Scaled (scaled): not extracted: rebuilt alone it does not compute what the model's")
    assert "max |Δ|" in scaled and not files  # nothing of it written
    lines = unit_study(_unit(2, "two_ways", "helpers.extract_models.TwoWays"), model, files)
    said = "operators differ: only in the model aten::add; only alone aten::mul"
    assert lines[0].startswith("2. TwoWays (two_ways): rebuilt from its constructor arguments")
    assert any(said in line for line in lines), lines
    assert said in files["module/two_ways.yaml"].decode()  # and in the study's own header
    assert set(files) == {"module/two_ways.yaml", "module/two_ways.weights.pt", "experiment/two_ways.yaml"}


@pytest.mark.slow
def test_extract_writes_the_others_when_one_module_computes_otherwise_alone(tmp_path: Path) -> None:
    run = profiled_run(tmp_path / "run", {"_target_": "helpers.extract_models.RebuildNet", "width": 32}, [2, 8, 32])
    out = tmp_path / "studies"
    lines = extract(run, 3, out)
    assert any("Scaled (scaled): not extracted: rebuilt alone it does not compute" in line for line in lines), lines
    assert not (out / "module" / "scaled.yaml").exists() and (out / "module" / "two_ways.yaml").is_file()


def _units(model: nn.Module) -> dict[str, nn.Module]:
    """Study units by their definition, written again here: modules whose children are all leaves, and leaves not
    inside one (an independent hand check of moduletime.views.units)."""
    parts = dict(model.named_modules())
    found: dict[str, nn.Module] = {}
    for path, module in parts.items():
        kids = list(module.children())
        inside = any(path.startswith(p + ".") for p in found)
        if not inside and kids and all(not list(k.children()) for k in kids):
            found[path] = module
    for path, module in parts.items():
        if path and not list(module.children()) and not any(path.startswith(p + ".") for p in found):
            found[path] = module
    return found


def _hand_hottest(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], steps: int = 20) -> str:
    """The class whose units take the most wall-clock time over `steps` forwards, timed by forward hooks."""
    spent: Counter = Counter()
    started: dict[str, float] = {}
    hooks = []
    for path, unit in _units(model).items():
        name = type(unit).__name__
        hooks.append(unit.register_forward_pre_hook(lambda *_, p=path: started.__setitem__(p, time.perf_counter())))
        hooks.append(
            unit.register_forward_hook(lambda *_, p=path, n=name: spent.update({n: time.perf_counter() - started[p]}))
        )
    with torch.inference_mode():
        for _ in range(steps):
            model(*args, **kwargs)
    for hook in hooks:
        hook.remove()
    return spent.most_common(1)[0][0]


def _model_and_inputs(run: Path) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    from omegaconf import OmegaConf

    from neuronexp.cell.inputs import make_inputs
    from neuronexp.config import InputConfig
    from neuronexp.extract.from_model import build_model, run_config

    cfg = run_config(run)
    model, _ = build_model(cfg, "config.yaml")
    spec = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(InputConfig), cfg["input"]))
    assert isinstance(spec, InputConfig)
    torch.manual_seed(spec.seed)
    args, kwargs = make_inputs(spec, model, torch.device("cpu"))
    return model, args, kwargs


def _study(out: Path, name: str) -> tuple[nn.Module, str]:
    """The study's module built from its YAML as its cell builds it (seed, node, the cell's dtype), and the path of
    the module it was taken from (its header)."""
    from neuronexp.config.targets import instantiate

    text = (out / "module" / f"{name}.yaml").read_text()
    path = re.search(r"^# \w+ at (\S+) of ", text, flags=re.M)
    assert path, text[:300]
    torch.manual_seed(0)
    return instantiate(yaml.safe_load(text)["module"]).to(torch.float32).eval(), path[1]


def _captured(model: nn.Module, path: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """(args, kwargs, output) of the module at `path` in one forward of the whole model: its first call."""
    seen: list[tuple[Any, ...]] = []

    def hook(module: nn.Module, a: Any, k: Any, out: Any) -> None:
        seen.append((a, k, out))

    handle = model.get_submodule(path).register_forward_hook(hook, with_kwargs=True)
    with torch.inference_mode():
        model(*args, **kwargs)
    handle.remove()
    return seen[0]


def _first(out: Any) -> Any:
    return out[0] if isinstance(out, (tuple, list)) else out


FAMILIES = {"tiny_llama": "LlamaAttention", "tiny_t5": "T5Attention", "tiny_vit": "ViTAttention",
            "tiny_mixtral": "MixtralExperts"}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_a_model_from_yaml_gives_its_hottest_class_and_studies_that_compute_what_it_computed(
    family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("transformers")
    run, out = tmp_path / "run", tmp_path / "studies"
    args = ["--config-dir", str(EXPERIMENTS), f"module={family}", "backend=cpu", "profiler.modules=true"]
    made = run_cli([*args, *FAST, *PROFILE, "profiler.schedule.repeat=3", f"hydra.run.dir={run}"], cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    result = run_cli([str(run), "--top", "3", "--out", str(out)], cwd=tmp_path, script="neuronexp-extract")
    assert result.returncode == 0, result.stderr[-2000:]
    offered = re.findall(r"^\d\. (\w+) \(", result.stdout, flags=re.M)
    model, inputs, kwargs = _model_and_inputs(run)
    hottest = _hand_hottest(model, inputs, kwargs)
    # The hand check's winner is offered, whichever it is this time (the tiny Llama's attention and MLP are close, and
    # CI once saw the MLP win), and so is the class the family's issue was about (T5's six attention modules).
    assert hottest in offered and FAMILIES[family] in offered, (hottest, result.stdout)
    monkeypatch.syspath_prepend(str(out))  # what `neuronexp --config-dir studies` does for the study's files
    names = re.findall(r"\+experiment=(\w+)$", result.stdout, flags=re.M)
    assert len(names) == 3, result.stdout
    for name in names:
        study, path = _study(out, name)
        seen = _captured(model, path, inputs, kwargs)
        with torch.inference_mode():
            got = study(*seen[0], **seen[1])
        torch.testing.assert_close(_first(got), _first(seen[2]), rtol=1e-6, atol=1e-6, msg=name)


@pytest.mark.slow
def test_the_moe_study_runs_the_models_experts_kernel_in_its_cells(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    import neuronexp

    run, out = tmp_path / "run", tmp_path / "studies"
    args = ["--config-dir", str(EXPERIMENTS), "module=tiny_mixtral", "backend=cpu", "profiler.modules=true"]
    made = run_cli([*args, *FAST, "profiler=quick", f"hydra.run.dir={run}"], cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    # --top 3: the experts' rank against the attention comes from one profiled step and moves under load (CI saw the
    # attention first); this test is about the experts' study, not the ranking (test_the_hottest_class_... is).
    result = run_cli([str(run), "--top", "3", "--out", str(out)], cwd=tmp_path, script="neuronexp-extract")
    assert "+experiment=mixtral_experts" in result.stdout, result.stdout
    sweep = tmp_path / "sweep"
    ran = run_cli(
        ["--config-dir", str(out), "+experiment=mixtral_experts", *FAST, "profiler=quick", "compile.enabled=false",
         f"hydra.sweep.dir={sweep}"], cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    loaded = neuronexp.load(sweep)
    (cell,) = loaded.cells.itertuples()
    assert cell.status == "ok" and cell.output_nonfinite == 0
    assert "aten::_grouped_mm" in set(loaded.ops["op"])  # the model's kernel, not the per-expert loop


def test_alone_is_timed_on_the_runs_thread_count_and_torchs_is_restored() -> None:
    import pandas as pd

    from helpers.layers import ThreadsSeen
    from neuronexp.cli.extract import run_threads
    from neuronexp.extract import study as extract_one

    before = torch.get_num_threads()
    asked = 3 if before != 3 else 2  # a count this process would not have by itself
    ThreadsSeen.seen.clear()
    extract_one._alone_us(ThreadsSeen(), (torch.ones(2),), {}, asked)
    assert set(ThreadsSeen.seen) == {asked} and torch.get_num_threads() == before
    cells = pd.DataFrame({"run_id": ["a", "b"], "threads": [5, None]})
    assert run_threads(cells, "a") == 5  # the run's own cell's count
    from neuronexp.host.threads import default_threads

    assert run_threads(cells, "b") == (default_threads(before) or before)  # none recorded: what a cell would use
