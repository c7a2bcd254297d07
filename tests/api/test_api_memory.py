"""The Python door builds its cells from the caller's objects (issue 45): no module of neuronexp's is composed, the
cell's config names the caller's class and its code is the caller's file; inputs= may be a list of input tuples (one
swept axis); other swept overrides sit beside modules=; a Hydra launcher named from Python runs, or is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

import neuronexp
from helpers import FAST
from neuronexp.config.fingerprint import code_files
from neuronexp.engine._hydra import CellComposer

CPU = [*(a for a in FAST if not a.startswith(("input.shape", "input.dtype"))), "backend=cpu", "roofline.probe=off"]


class Doubles(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class AddsItself(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x


def _job_dirs(out: Path) -> list[Path]:
    return sorted(p.parent for p in out.glob("*/cell.json"))


def test_modules_from_memory_compose_no_module_of_neuronexps_and_name_the_callers_class(
    tmp_path: Path, monkeypatch
) -> None:
    composed: list[bool] = []  # whether each job's composition holds a module, as composed (before it is named)
    compose = CellComposer.compose
    monkeypatch.setattr(
        CellComposer, "compose", lambda self, *a: composed.append("module" in (c := compose(self, *a))) or c
    )
    out = tmp_path / "s"
    inputs = [(torch.randn(1, 4, 8),), (torch.randn(1, 2, 16),)]  # one swept axis: every module runs on each
    res = neuronexp.sweep(*CPU, modules={"doubles": Doubles(), "adds": AddsItself()}, inputs=inputs, out=out)
    # Without ~module, every job would compose the default module (rmsnorm_naive: its _target_, hidden_size, eps).
    assert composed == [False] * 4
    cells = res.cells
    assert len(cells) == 4 and (cells["status"] == "ok").all()
    assert sorted(map(tuple, cells[["module", "input_shape"]].values)) == [
        ("adds", "[1,2,16]"),
        ("adds", "[1,4,8]"),
        ("doubles", "[1,2,16]"),
        ("doubles", "[1,4,8]"),
    ]
    for job in _job_dirs(out):
        module = yaml.safe_load((job / "config.yaml").read_text())["module"]
        assert module["_target_"] in (f"{__name__}.Doubles", f"{__name__}.AddsItself") and set(module) == {"_target_"}
        # Its code: the caller's file and what it imports (as for any _target_), not the default module's.
        code = json.loads((job / "cell.json").read_text())["code"]
        assert code == code_files(module["_target_"]) and "tests/api/test_api_memory.py" in code
        assert code != code_files("neuronexp.modules.NaiveRMSNorm")


def test_a_list_of_input_sets_is_an_axis_each_set_timed_paired_against_the_baseline(tmp_path: Path) -> None:
    inputs = [(torch.randn(1, 4, 8),), (torch.randn(1, 2, 16),)]
    res = neuronexp.sweep(*CPU, modules={"doubles": Doubles(), "adds": AddsItself()}, inputs=inputs, baseline="adds")
    adds = res.cells.set_index("run_id")
    doubles = res.cells[res.cells["module"] == "doubles"]
    assert len(doubles) == 2 and (doubles["speedup_method"] == "paired").all()
    for _, cell in doubles.iterrows():  # its baseline is the same input set's, timed in the same unit
        ref = adds.loc[cell["baseline_run_id"]]
        assert ref["module"] == "adds" and ref["input_shape"] == cell["input_shape"]
        assert ref["timing_group"] == cell["timing_group"]


def test_a_swept_override_beside_modules_is_an_axis_of_its_own(tmp_path: Path) -> None:
    res = neuronexp.sweep(
        *CPU, "threads=1,2", modules={"doubles": Doubles()}, inputs=(torch.randn(1, 4, 8),), out=tmp_path / "s"
    )
    assert sorted(res.cells["threads"]) == [1, 2] and (res.cells["status"] == "ok").all()
    for overrides in res.cells["overrides"]:  # the cell's own, as a YAML sweep's: not the door's ~module
        assert "module=doubles" in overrides.split(",") and "~module" not in overrides


@pytest.mark.parametrize("launcher", ["parallel", "submitit_local"])  # the option's name, not the launcher's kind
def test_modules_from_memory_under_another_launcher_is_one_line_before_anything_runs(
    tmp_path: Path, launcher: str
) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.sweep(
            *CPU, f"hydra/launcher={launcher}", modules={"d": Doubles()}, inputs=(torch.ones(1, 4),), out=tmp_path / "o"
        )
    assert str(raised.value) == (
        f"hydra/launcher={launcher}: modules from Python's memory run in this process, one unit after another: "
        "leave hydra/launcher out"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # two cells, each a job of submitit's local executor (about 10 s)
def test_a_hydra_launcher_named_from_python_runs_the_sweep(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    out = tmp_path / "s"
    res = neuronexp.sweep(
        "module=rmsnorm_naive,rmsnorm_fused", *CPU, "hydra/launcher=submitit_local", baseline="rmsnorm_naive", out=out
    )
    assert len(res.cells) == 2 and (res.cells["status"] == "ok").all()
    assert (out / ".submitit").is_dir()  # the jobs went through submitit, not this process's fork server
