"""A sweep run again into its directory says what it did with the cells there (engine.rerun): how many it reused,
which it ran again because their code changed and in which file, and that the earlier job directories stay."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuronexp
from helpers import FAST

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
