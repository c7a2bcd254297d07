"""The Python door as safe as the command line (issue 44): modules from memory get inputs of their own per cell and the
cell time limit; `out=` is a path, never an interpolation; what `modules=` replaces is refused, not ignored; two
threads take turns; a layer's torch.set_default_dtype stays in its cell; Ctrl-C is KeyboardInterrupt."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import types
from datetime import datetime, timezone
from pathlib import Path

import pytest
import torch

import neuronexp
from helpers import FAST
from neuronexp.results import SCHEMAS

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
        time.sleep(10)  # the time limits below (1 s, 1.5 s) end the call long before
        raise RuntimeError("the cell time limit did not stop this call")


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
    assert time.monotonic() - started < 20  # ended at the limit, not by the layer's own error
    row = res.cells.iloc[0]
    assert row["status"] == "error"
    assert row["error"].startswith("timed out after 1 s") and row["error"].endswith("(launcher.cell_timeout_s)")
    assert neuronexp.load(tmp_path / "t").cells.iloc[0]["error"] == row["error"]


class Broken(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("broken layer")


def test_a_group_timed_together_has_its_cells_limits_and_its_timed_out_rows_name_this_process(tmp_path: Path) -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    neuronexp.sweep(
        *CPU,
        "launcher.cell_timeout_s=0.5",
        modules={"base": Identity(), "broken": Broken(), "slow": Sleeper()},
        baseline="base",  # the three are one group, timed together: 3 x 0.5 s for the group
        inputs=(torch.ones(1, 4),),
        out=tmp_path / "g",
    )
    after = datetime.now(timezone.utc)
    rows = neuronexp.load(tmp_path / "g").cells.set_index("module")
    assert rows.loc["slow", "error"] == "timed out after 1.5 s during first call (launcher.cell_timeout_s)"
    assert rows.loc["base", "error"].startswith("timed out after 1.5 s during ")
    assert rows.loc["broken", "error"] == "RuntimeError: broken layer"  # its own row, written before, is kept
    for module in ("base", "slow"):  # written by this process, as a supervisor writes a lost cell's row
        row = rows.loc[module]
        assert row["worker_pid"] == os.getpid() and row["host"] == socket.gethostname() and row["backend"] == "cpu"
        assert pd_na(row["placement"]) and pd_na(row["placement_cpus"])
        assert before <= datetime.fromisoformat(row["started_at"]) <= after
    assert set(rows.reset_index().columns) == {*SCHEMAS["cells"].names, "source_dir"}  # no column of its own


def test_out_is_a_path_never_an_interpolation(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("NEURONEXP_TEST_SECRET", "leaked")
    out = tmp_path / "odd_${oc.env:NEURONEXP_TEST_SECRET}"
    res = neuronexp.run("module=rmsnorm_fused", "input.shape=[1,4,8]", *CPU, out=out)
    assert list(res.cells["status"]) == ["ok"]
    assert (out / "cells.parquet").is_file()
    escaped = tmp_path / "odd_\\${oc.env:NEURONEXP_TEST_SECRET}"  # a backslash before it: still the path as given
    neuronexp.run("module=rmsnorm_fused", "input.shape=[1,4,8]", *CPU, out=escaped)
    assert (escaped / "cells.parquet").is_file()
    assert not (tmp_path / "odd_leaked").exists()


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (["input.shape=[1,4,8],[1,8,8]"], "input.shape=[1,4,8]: with modules=, the first input's shape is that of"),
        (["input.dtype=float32,bfloat16"], "input.dtype=float32: with modules=, the first input's dtype is that of"),
        (["input.shape=[1,4,8]"], "input.shape=[1,4,8]: with modules="),
        (["++input.shape=[1,4,8]"], "input.shape=[1,4,8]: with modules="),  # forced, as Hydra's ++ writes it
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
        ({}, "modules={}: give at least one name: nn.Module instance"),
    ],
)
def test_a_module_that_is_not_one_or_a_name_that_is_not_a_word_is_refused(tmp_path: Path, modules, line) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.sweep(*CPU, modules=modules, inputs=(torch.ones(1, 4),), out=tmp_path / "o")
    assert str(raised.value).startswith(line), str(raised.value)
    assert not (tmp_path / "o").exists()


TAKES = "a tuple of tensors (the first a tensor), a callable returning one, or a list of such tuples (swept)"


@pytest.mark.parametrize(
    ("modules", "inputs", "line"),
    [
        ({"_": Identity()}, (torch.ones(1, 4),), "modules='_': names are words (letters, digits, _ and -)"),
        ({"-": Identity()}, (torch.ones(1, 4),), "modules='-': names are words (letters, digits, _ and -)"),
        ({3: Identity()}, (torch.ones(1, 4),), "modules=3: names are words (letters, digits, _ and -)"),
        # A name of letters, digits, _ and - is a word: what is refused next is the inputs.
        ({"rms_norm-2": Identity()}, "text", f"inputs=str: {TAKES}"),
        ({"a": Identity()}, [], f"inputs=list: {TAKES}"),
        ({"a": Identity()}, None, f"inputs=NoneType: {TAKES}"),
        ({"a": Identity()}, (3, torch.ones(1, 4)), f"inputs=tuple: {TAKES}"),
        ({"a": Identity()}, lambda: "text", f"inputs=str: {TAKES}"),  # what the callable returns
        (
            {"a": Identity()},
            (torch.ones(1, 4), torch.ones(1, 4)),
            "inputs=2 input(s): a.forward cannot take them: too many positional arguments",
        ),
        (
            {"a": Identity()},
            [torch.ones(1, 4), torch.ones(2, 4), torch.ones(1, 4, dtype=torch.float64), torch.zeros(2, 4)],
            "inputs=sets 1 and 3: their first tensors are alike ([2,4] float32)",  # a list of tensors: a set each
        ),
        (
            {"a": Identity()},
            [[torch.ones(1, 4)], [torch.zeros(1, 4)]],  # input sets given as lists, not tuples
            "inputs=sets 0 and 1: their first tensors are alike ([1,4] float32)",
        ),
        (
            {"a": Identity()},
            (torch.ones(1, 4, dtype=torch.complex64),),
            "inputs (a)=complex64: not a dtype input.dtype allows",
        ),
    ],
)
def test_inputs_modules_cannot_take_are_refused_in_one_line(tmp_path: Path, modules, inputs, line: str) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.sweep(*CPU, modules=modules, inputs=inputs, out=tmp_path / "o")
    assert str(raised.value) == line
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
    assert (
        caplog.messages.count(
            "launcher.cell_timeout_s does not apply to these cells: modules from memory run in the caller's process, "
            "where only the main thread can be interrupted, and neuronexp.sweep was called from another"
        )
        == 2
    )


def test_with_no_time_limit_a_sweep_from_another_thread_runs_without_a_word(tmp_path: Path, caplog) -> None:
    found: list[object] = []

    def one() -> None:
        try:
            found.append(
                neuronexp.sweep(
                    *CPU,
                    "launcher.cell_timeout_s=null",
                    modules={"a": Identity()},
                    inputs=(torch.ones(1, 4),),
                    out=tmp_path / "n",
                ).cells
            )
        except BaseException as exc:  # noqa: BLE001 - reported in the test's thread
            found.append(exc)

    thread = threading.Thread(target=one)
    thread.start()
    thread.join()
    assert list(found[0]["status"]) == ["ok"], found  # type: ignore[index]
    assert "launcher.cell_timeout_s" not in caplog.text  # no limit asked for: none to warn about


class SendsAlarm(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        signal.raise_signal(signal.SIGALRM)  # the caller's own alarm, going off while a cell runs
        return x * 1.0


def test_a_sigalrm_not_the_time_limits_goes_to_the_callers_handler(tmp_path: Path) -> None:
    seen: list[tuple[int, object]] = []

    def on_alarm(signum: int, frame: object) -> None:
        seen.append((signum, frame))  # (a sampling profiler driven by SIGALRM reads the frame)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        res = neuronexp.sweep(*CPU, modules={"alarms": SendsAlarm()}, inputs=(torch.ones(1, 4),), out=tmp_path / "a")
        assert list(res.cells["status"]) == ["ok"]  # the time limit (1800 s) is not taken to have passed
        # Each alarm reached the caller's handler, with its number and the frame it interrupted.
        assert seen and all(n == signal.SIGALRM and isinstance(f, types.FrameType) for n, f in seen)
        assert signal.getsignal(signal.SIGALRM) is on_alarm  # and the handler is the caller's again after the sweep
    finally:
        signal.signal(signal.SIGALRM, previous)


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
    # The reused cell's other tables, whole and in their places: what load() gives for that directory.
    stored = neuronexp.load(tmp_path / "r")
    for name in ("ops", "samples", "modules"):
        assert getattr(again, name).equals(getattr(stored, name)), name
    assert not again.ops.empty and not again.samples.empty
