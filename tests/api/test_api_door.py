"""The Python door as safe as the command line (issue 44): modules from memory get inputs of their own per cell and the
cell time limit; `out=` is a path, never an interpolation; what `modules=` replaces is refused, not ignored; two
threads take turns; a layer's torch.set_default_dtype stays in its cell; Ctrl-C is KeyboardInterrupt."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch

import neuronexp
from helpers import FAST

CPU = [*(a for a in FAST if not a.startswith(("input.shape", "input.dtype"))), "backend=cpu", "roofline.probe=off"]


class Identity(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 1.0


class ZeroesInput(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 1.0
        x.zero_()
        return y


class Sleeper(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(30)
        return x


class SetsDefaultDtype(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.set_default_dtype(torch.float64)
        return x * 1.0


def test_a_variant_that_writes_into_its_input_changes_neither_the_baseline_nor_the_callers(tmp_path: Path) -> None:
    x = torch.randn(1, 8, 64)
    before = x.clone()
    res = neuronexp.sweep(
        *CPU,
        modules={"identity": Identity(), "zeroes": ZeroesInput()},
        baseline="identity",
        inputs=(x,),
        out=tmp_path / "s",
    )
    by = res.cells.set_index("module")
    assert torch.equal(x, before)  # the caller's tensor is as it was
    # The baseline's output is its input, not zeros: the variant zeroed only its own copy, so its later calls
    # return zeros and its output differs from the baseline's, as the same two layers from YAML do.
    saved = neuronexp.load(tmp_path / "s")
    assert set(saved.cells["status"]) == {"ok"}
    assert bool(by.loc["identity", "output_match"]) is True or pd_na(by.loc["identity", "output_match"])
    assert bool(by.loc["zeroes", "output_match"]) is False
    assert by.loc["zeroes", "max_abs_err"] > 0


def pd_na(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_the_cell_time_limit_applies_to_modules_from_memory(tmp_path: Path) -> None:
    started = time.monotonic()
    res = neuronexp.sweep(
        *CPU, "launcher.cell_timeout_s=1", modules={"slow": Sleeper()}, inputs=(torch.ones(1, 4),), out=tmp_path / "t"
    )
    assert time.monotonic() - started < 20  # not the 30 s a call of the layer sleeps
    row = res.cells.iloc[0]
    assert row["status"] == "error"
    assert row["error"].startswith("timed out after 1 s") and row["error"].endswith("(launcher.cell_timeout_s)")
    assert neuronexp.load(tmp_path / "t").cells.iloc[0]["error"] == row["error"]


def test_out_is_a_path_never_an_interpolation(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("NEURONEXP_TEST_SECRET", "leaked")
    out = tmp_path / "odd_${oc.env:NEURONEXP_TEST_SECRET}"
    res = neuronexp.run("module=rmsnorm_fused", "input.shape=[1,4,8]", *CPU, out=out)
    assert list(res.cells["status"]) == ["ok"]
    assert (out / "cells.parquet").is_file()
    assert not (tmp_path / "odd_leaked").exists()


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["input.shape=[1,4,8],[1,8,8]"], "input.shape=[1,4,8]: with modules=, the first input's shape is that of"),
        (["input.dtype=float32,bfloat16"], "input.dtype=float32: with modules=, the first input's dtype is that of"),
        (["input.shape=[1,4,8]"], "input.shape=[1,4,8]: with modules="),
        (["module=rmsnorm_fused"], "module=rmsnorm_fused: modules= names the modules of this sweep"),
        (["hydra.sweep.subdir=../x"], "hydra.sweep.subdir=../x: a cell's job directory would be '../x'"),
    ],
)
def test_what_modules_replaces_is_refused_in_one_line(tmp_path: Path, overrides: list[str], line: str) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.sweep(*CPU, *overrides, modules={"a": Identity()}, inputs=(torch.ones(1, 4, 8),), out=tmp_path / "o")
    assert str(raised.value).startswith(line) and "\n" not in str(raised.value)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("modules", "line"),
    [
        ({"f": lambda x: x}, "modules['f']=function: must be a torch.nn.Module instance"),
        ({"a/b": Identity()}, "modules='a/b': names are words"),
        ({"": Identity()}, "modules='': names are words"),
        ({}, "modules={}: give at least one"),
    ],
)
def test_a_module_that_is_not_one_or_a_name_that_is_not_a_word_is_refused(tmp_path: Path, modules, line) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.sweep(*CPU, modules=modules, inputs=(torch.ones(1, 4),), out=tmp_path / "o")
    assert str(raised.value).startswith(line), str(raised.value)
    assert not (tmp_path / "o").exists()


def test_two_threads_take_turns(tmp_path: Path, caplog) -> None:
    errors: list[BaseException] = []

    def one(name: str) -> None:
        try:
            res = neuronexp.sweep(*CPU, modules={"a": Identity()}, inputs=(torch.ones(1, 4),), out=tmp_path / name)
            assert list(res.cells["status"]) == ["ok"]
        except BaseException as exc:  # noqa: BLE001 - reported in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in ("t1", "t2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # Outside the main thread the cell time limit (1800 s by default) cannot apply: a warning says so.
    assert "launcher.cell_timeout_s does not apply to these cells" in caplog.text


class SeesDefaultDtype(torch.nn.Module):
    seen: list[torch.dtype] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        SeesDefaultDtype.seen.append(torch.get_default_dtype())
        return x * 1.0


def test_a_layers_default_dtype_stays_in_its_cell(tmp_path: Path) -> None:
    assert torch.get_default_dtype() == torch.float32
    SeesDefaultDtype.seen.clear()
    try:
        # Two cells in this process, not timed together (no baseline): the second never sees the first's float64.
        res = neuronexp.sweep(
            *CPU,
            modules={"a": SetsDefaultDtype(), "b": SeesDefaultDtype()},
            inputs=(torch.ones(1, 4),),
            out=tmp_path / "d",
        )
        assert list(res.cells["status"]) == ["ok", "ok"]
        assert torch.get_default_dtype() == torch.float32
        assert set(SeesDefaultDtype.seen) == {torch.float32}
    finally:
        torch.set_default_dtype(torch.float32)


def test_ctrl_c_is_keyboard_interrupt(tmp_path: Path, monkeypatch) -> None:
    from neuronexp.engine import in_memory

    def interrupted(specs):
        raise KeyboardInterrupt

    monkeypatch.setattr(in_memory, "run_limited", interrupted)
    with pytest.raises(KeyboardInterrupt):
        neuronexp.sweep(*CPU, modules={"a": Identity()}, inputs=(torch.ones(1, 4),), out=tmp_path / "c")


def test_run_says_cached_for_a_cell_it_reused_as_the_command_line_does(tmp_path: Path) -> None:
    first = neuronexp.run("module=rmsnorm_fused", "input.shape=[1,4,8]", *CPU, out=tmp_path / "r")
    again = neuronexp.run("module=rmsnorm_fused", "input.shape=[1,4,8]", *CPU, out=tmp_path / "r")
    assert list(first.cells["status"]) == ["ok"] and list(again.cells["status"]) == ["cached"]
    assert list(again.cells["run_id"]) == list(first.cells["run_id"])
    assert list(neuronexp.load(tmp_path / "r").cells["status"]) == ["ok"]  # the file is left as the cell wrote it
