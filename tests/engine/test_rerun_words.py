"""A sweep run again into its directory says what it did with the cells there (engine.rerun): how many it reused,
which it ran again because their code changed and in which file, and that the earlier job directories stay."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuronexp
from helpers import FAST
from neuronexp.engine.planned import PlannedCell
from neuronexp.engine.rerun import Rerun, compare, words
from neuronexp.results.files import write_json


def _marker(job: Path, run_id: str, overrides: list[str], code: dict[str, str] | None, by: str = "neuronexp") -> None:
    job.mkdir(parents=True)
    info = {"written_by": by, "run_id": run_id, "overrides": overrides}
    write_json(job / "cell.json", info if code is None else {**info, "code": code})


def _planned(run_id: str, where: str, overrides: list[str], code: dict[str, str]) -> PlannedCell:
    return PlannedCell(num=0, dir=where, overrides=overrides, run_id=run_id, backend="cpu", label="", code=code)


def test_what_a_rerun_did_with_each_earlier_cell_is_read_from_their_cell_json(tmp_path: Path) -> None:
    before = {"l.py": "h1", "m.py": "h2", "gone.py": "h0"}
    _marker(tmp_path / "0", "r0", ["a=0"], before)  # reused
    _marker(tmp_path / "1", "old1", ["a=1"], before)  # the same command, its code changed
    _marker(tmp_path / "2", "r2", ["a=2"], before)  # the same cell, cut short
    _marker(tmp_path / "3", "old3", ["a=3"], {"l.py": "h1"})  # the same command and code: its configuration changed
    _marker(tmp_path / "4", "old4", ["a=4"], None)  # an earlier cell.json without code: its configuration, then
    _marker(tmp_path / "5", "old5", ["a=9"], {})  # no planned cell's command
    _marker(tmp_path / "6", "old6", ["a=5"], {"l.py": "h9"}, by="another tool")  # not neuronexp's: not a cell
    cells = [
        _planned("r0", "0", ["a=0"], {"l.py": "h1"}),
        _planned("r1", "7", ["a=1"], {"l.py": "h1", "m.py": "h2x", "n.py": "h3"}),
        _planned("r2", "2", ["a=2"], before),
        _planned("r3", "8", ["a=3"], {"l.py": "h1"}),
        _planned("r4", "9", ["a=4"], {"l.py": "h1"}),
        _planned("r5", "10", ["a=5"], {"l.py": "h1"}),  # new: nothing said of it
    ]
    rerun = compare(cells, {"r0", "elsewhere"}, tmp_path)
    assert (rerun.planned, rerun.reused, rerun.code, rerun.config, rerun.unfinished) == (
        6,
        1,
        ["r1"],
        ["r3", "r4"],
        ["r2"],
    )
    assert rerun.changed_files == {"m.py", "n.py", "gone.py"} and rerun.kept == ["1", "3", "4", "5"]
    assert words(rerun) == (
        "1 reused; 1 run again because their code changed (gone.py, m.py, n.py); 2 run again because their "
        "configuration changed; 1 run again because their earlier run left no result; the earlier job directories "
        "1, 3, 4, 5 are left in place, outside results/"
    )
    assert "; 2 ran again because their configuration changed; 1 ran again because" in words(rerun, done=True)
    assert compare(cells, set(), tmp_path / "nowhere") == Rerun(planned=6)


def test_changed_files_are_named_against_the_latest_earlier_cell_of_the_same_command(tmp_path: Path) -> None:
    _marker(tmp_path / "0", "old0", ["a=1"], {"a.py": "1", "b.py": "1"})  # the first run
    _marker(tmp_path / "1", "old1", ["a=1"], {"a.py": "2", "b.py": "1"})  # run again after a.py changed
    rerun = compare([_planned("new", "2", ["a=1"], {"a.py": "2", "b.py": "2"})], set(), tmp_path)
    assert rerun.code == ["new"] and rerun.changed_files == {"b.py"}  # since the last run: b.py only


def test_the_changed_files_of_every_cell_run_again_are_named_together(tmp_path: Path) -> None:
    _marker(tmp_path / "0", "old0", ["a=0"], {"a.py": "1", "b.py": "1"})
    _marker(tmp_path / "1", "old1", ["a=1"], {"a.py": "1", "b.py": "1"})
    cells = [
        _planned("new0", "2", ["a=0"], {"a.py": "2", "b.py": "1"}),  # a.py changed under this one
        _planned("new1", "3", ["a=1"], {"a.py": "1", "b.py": "2"}),  # b.py under that one
    ]
    rerun = compare(cells, set(), tmp_path)
    assert rerun.code == ["new0", "new1"] and rerun.changed_files == {"a.py", "b.py"}
    assert words(rerun).startswith("0 reused; 2 run again because their code changed (a.py, b.py); ")


def test_the_words_name_four_and_count_the_rest_and_say_nothing_when_nothing_was_there() -> None:
    assert words(Rerun(planned=3)) == ""
    assert words(Rerun(planned=3, reused=3)) == "3 reused"
    assert (
        words(Rerun(planned=1, kept=["0"]))
        == "0 reused; the earlier job directory 0 is left in place, outside results/"
    )
    assert words(Rerun(planned=1, unfinished=["r"])) == "0 reused; 1 run again because their earlier run left no result"
    assert (
        words(Rerun(planned=1, config=["r"]), done=True) == "0 reused; 1 ran again because their configuration changed"
    )
    five = Rerun(planned=5, code=["r"], changed_files={"e.py", "a.py", "d.py", "b.py", "c.py"}, kept=list("43210"))
    assert words(five) == (
        "0 reused; 1 run again because their code changed (a.py, b.py, c.py, d.py and 1 more); "
        "the earlier job directories 0, 1, 2, 3 and 1 more are left in place, outside results/"
    )


LAYER = """import torch


class MyBlock(torch.nn.Module):
    def __init__(self, scale: int = 2):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * 2
"""


MODULE = ("module._target_=layers.myblock.MyBlock", "~module.hidden_size", "~module.eps")


def _sweep(cli, *extra: str, flags: tuple[str, ...] = (), module: tuple[str, ...] = MODULE):
    args = [
        *flags,
        "-m",
        *module,
        "input.shape=[1,8,64],[1,8,32]",
        *[a for a in FAST if not a.startswith("input.shape=")],
        "timing.rounds=2",
        "correctness.enabled=false",
        "hydra.sweep.dir=sweep",
        *extra,
    ]
    result = cli(*args)  # (an `extra` hydra.sweep.dir, given later, wins)
    assert result.returncode == 0, result.stderr[-2000:]
    return [ln for ln in result.stdout.splitlines() if "sweep of 2 cells" in ln or ln.startswith("this sweep:")]


def test_a_rerun_after_a_layer_edit_says_which_file_changed_and_that_old_directories_stay(cli, tmp_path: Path) -> None:
    (tmp_path / "layers").mkdir()
    (tmp_path / "layers" / "__init__.py").write_text("")
    layer = tmp_path / "layers" / "myblock.py"
    layer.write_text(LAYER)
    first = _sweep(cli)
    assert first[0].endswith("sweep of 2 cells into sweep") and len(first) == 1  # nothing there before: no words

    assert _sweep(cli)[1] == "this sweep: 2 reused"

    layer.write_text(LAYER.replace("x * 2", "x * 2 + 0"))
    said = _sweep(cli)
    expected = (
        "0 reused; 2 {} again because their code changed (layers/myblock.py); "
        "the earlier job directories 0, 1 are left in place, outside results/"
    )
    assert said[0].endswith(f"sweep of 2 cells into sweep: {expected.format('run')}"), said
    assert said[1] == f"this sweep: {expected.format('ran')}", said
    cells = neuronexp.load(tmp_path / "sweep").cells
    assert sorted(cells["status"]) == ["ok", "ok"] and (tmp_path / "sweep" / "0" / "cells.parquet").is_file()


@pytest.mark.slow  # three sweeps into one directory: 4.7 s quiet
def test_a_rerun_says_which_cells_changed_their_configuration_or_had_not_finished(cli, tmp_path: Path) -> None:
    (tmp_path / "layers").mkdir()
    (tmp_path / "layers" / "__init__.py").write_text("")
    (tmp_path / "layers" / "myblock.py").write_text(LAYER)
    _sweep(cli)
    (tmp_path / "sweep" / "1" / "cells.parquet").unlink()  # as a killed cell leaves it: no result
    said = _sweep(cli)
    assert said[1] == "this sweep: 1 reused; 1 ran again because their earlier run left no result", said
    # The same command, the same code, but a configuration file that changed what the cells run.
    (tmp_path / "conf" / "module").mkdir(parents=True)
    (tmp_path / "conf" / "module" / "mine.yaml").write_text("_target_: layers.myblock.MyBlock\n")
    mine = {"flags": ("--config-dir", str(tmp_path / "conf")), "module": ("module=mine",)}
    _sweep(cli, "hydra.sweep.dir=other", **mine)
    (tmp_path / "conf" / "module" / "mine.yaml").write_text("_target_: layers.myblock.MyBlock\nscale: 3\n")
    said = _sweep(cli, "hydra.sweep.dir=other", **mine)
    assert said[1] == (
        "this sweep: 0 reused; 2 ran again because their configuration changed; "
        "the earlier job directories 0, 1 are left in place, outside results/"
    ), said
