"""Repeated runs of one configuration told apart (issue 26): every row names the invocation that measured it, and
`neuronexp.load` reads several directories or a glob, saying where each row came from."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuronexp
from helpers import FAST

SMALL = [*FAST, "backend=cpu", "roofline.probe=off", "input.dtype=float32"]


@pytest.mark.slow  # 8 s on the 2-core VM: two real runs
def test_two_runs_of_one_config_share_run_id_not_invocation_and_load_reads_both(cli, tmp_path: Path) -> None:
    for name in ("a", "b"):
        res = cli(*SMALL, f"hydra.run.dir={tmp_path / 'runs' / name}")
        assert res.returncode == 0, res.stderr
    cells, ops, samples = neuronexp.load(tmp_path / "runs" / "*")
    assert list(cells["source_dir"]) == [str(tmp_path / "runs" / "a"), str(tmp_path / "runs" / "b")]
    assert cells["run_id"].nunique() == 1 and cells["invocation_id"].nunique() == 2
    assert cells["invocation_started_at"].notna().all()
    for table in (ops, samples):  # every row, in every table, says which run measured it and where it is
        assert table["invocation_id"].nunique() == 2 and table["source_dir"].nunique() == 2
        joined = table.merge(cells[["invocation_id", "source_dir"]], on="invocation_id", suffixes=("", "_cell"))
        assert len(joined) == len(table) and (joined["source_dir"] == joined["source_dir_cell"]).all()
    same = neuronexp.load(tmp_path / "runs" / "a", tmp_path / "runs" / "b").cells
    assert list(same["invocation_id"]) == list(cells["invocation_id"])


def test_a_pattern_that_matches_nothing_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no directory matches this pattern"):
        neuronexp.load(tmp_path / "nothing-*")
