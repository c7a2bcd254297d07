"""One writer per directory, deterministically: a second process asking for a lock this process holds is refused
at once (never blocks), naming this process; once released, it gets the lock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from neuronexp.engine.lock import locked

TRY = """
import sys
from pathlib import Path
from neuronexp.config import ConfigError
from neuronexp.engine.lock import locked
try:
    with locked(Path(sys.argv[1]), "hydra.sweep.dir"):
        print("got it")
except ConfigError as exc:
    print("refused:", exc)
"""


def _try(directory: Path) -> str:
    return subprocess.run(
        [sys.executable, "-c", TRY, str(directory)], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


def test_a_held_directory_is_refused_to_another_process_and_free_after(tmp_path: Path) -> None:
    with locked(tmp_path / "d", "hydra.sweep.dir"):
        seen = _try(tmp_path / "d")
        assert seen.startswith("refused:") and "hydra.sweep.dir" in seen, seen
        assert f"another neuronexp is writing there (pid {os.getpid()} " in seen
    assert _try(tmp_path / "d") == "got it"
