"""A command's exit skips Python's garbage collections (cli.common.no_collection_at_exit): every console script asks
for it, and it does what it says, while the files a command writes are complete when it returns."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from neuronexp.cli import common, compare, export, extract, report
from neuronexp.cli import main as neuronexp_main

# A reference cycle whose finalizer writes a mark: Python finalizes it while it exits unless its collections are
# skipped. Written by the script itself, after its own files are closed.
_CYCLE = """
import sys
from pathlib import Path
from neuronexp.cli.common import no_collection_at_exit
if sys.argv[1] == "quick":
    no_collection_at_exit()
Path(sys.argv[2], "written").write_text("complete")
class Cycle:
    def __del__(self):
        Path(sys.argv[2], "finalized").write_text("yes")
c = Cycle(); c.me = c; del c
"""


@pytest.mark.parametrize("mode", ["quick", "plain"])
def test_the_exit_skips_collection_but_not_what_was_written(tmp_path: Path, mode: str) -> None:
    subprocess.run([sys.executable, "-c", _CYCLE, mode, str(tmp_path)], check=True, timeout=60)
    assert (tmp_path / "written").read_text() == "complete"
    # "plain" shows the check can fail: without the call, Python collects the cycle at exit.
    assert (tmp_path / "finalized").exists() == (mode == "plain")


@pytest.mark.parametrize(
    "entry",
    [neuronexp_main.main, report.main, compare.main, export.main, extract.main],
    ids=["neuronexp", "report", "compare", "export", "extract"],
)
def test_every_console_script_asks_for_it(entry: Callable[[list[str]], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[object] = []
    fake = SimpleNamespace(register=registered.append, unregister=lambda f: None)
    monkeypatch.setattr(common, "atexit", fake)
    with pytest.raises(SystemExit):
        entry(["--no-such-option"])  # refused at once: the exit it asked for is what matters here
    assert registered == [gc.freeze]


def test_asking_twice_registers_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[object] = []

    def unregister(function: object) -> None:  # as atexit's: every registration of it
        registered[:] = [f for f in registered if f is not function]

    fake = SimpleNamespace(register=registered.append, unregister=unregister)
    monkeypatch.setattr(common, "atexit", fake)
    common.no_collection_at_exit()
    common.no_collection_at_exit()
    assert registered == [gc.freeze]
