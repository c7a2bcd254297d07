"""A planted file under a slot lock's name in `launcher.lock_dir` (a world-writable directory by default): a link or
a FIFO is refused before the first cell, in one line naming the file and launcher.lock_dir (issue 32, N116); a lock
file an earlier sweep left is a lock file, and taking a slot never follows nor blocks on a planted one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from neuronexp.cellprocess.placement import PlacementError, check_lock_dir, hold_slot, plan_slots
from neuronexp.config import ConfigError


def _plant(path: Path, kind: str, victim: Path) -> None:
    if kind == "link":
        path.symlink_to(victim)
    else:
        os.mkfifo(path)


@pytest.mark.parametrize(("kind", "word"), [("link", "a symbolic link"), ("fifo", "a FIFO")])
def test_a_planted_lock_is_refused_up_front_naming_the_file_and_the_key(tmp_path: Path, kind: str, word: str) -> None:
    locks, victim = tmp_path / "L", tmp_path / "victim"
    locks.mkdir()
    victim.write_text("mine\n")
    (locks / "cpu-1.lock").touch()  # an earlier sweep's lock file: fine
    check_lock_dir(str(locks))
    _plant(locks / "cpu-0.lock", kind, victim)
    with pytest.raises(ConfigError) as refused:
        check_lock_dir(str(locks))
    line = str(refused.value)
    assert line.startswith(f"launcher.lock_dir={locks}: the slot lock {locks / 'cpu-0.lock'} is {word}"), line
    assert "set launcher.lock_dir to a directory of your own" in line and "\n" not in line
    assert victim.read_text() == "mine\n"  # nothing written through the link


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_slot_whose_lock_was_planted_later_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    _plant(tmp_path / "cpu-0.lock", kind, victim)
    with pytest.raises(PlacementError, match=r"cpu-0\.lock .*launcher\.lock_dir"):
        with hold_slot(plan_slots("cpu", 1, 1, ["0"], [0]), tmp_path):
            pass
    assert victim.read_text() == "mine\n"
