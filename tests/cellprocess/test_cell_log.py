"""A cell process's output (`cell.log`) is capped (issue 32: a layer printing 5 MB a call filled 80 MB): the first
and last bytes are kept with a line saying how much was cut; a short log is kept whole and is on disk as it is
written; a process the cell started that still holds the output open does not hold the cell's exit up. Forked from
this test process, as test_childproc does (no template needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from neuronexp.cellprocess import cell_log
from neuronexp.cellprocess.cell_log import capped_output
from neuronexp.cellprocess.childproc import ForkRequest, run_work

MB = 1 << 20


def loud(payload: dict) -> int:
    """A layer's three calls, each printing 5 MB (stdout and stderr), then its last words."""
    for call in range(3):
        sys.stdout.write(f"call {call} " + "x" * (5 * MB) + "\n")
        sys.stdout.flush()
        sys.stderr.write(f"call {call} warning\n")
    print("the last line", flush=True)
    return 0


def _forked(target, *args) -> int:
    pid = os.fork()
    if pid == 0:  # the cell's process: never return into pytest
        code = 1
        try:  # its streams on file descriptors 1 and 2, as a cell process's are (not pytest's capture)
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", buffering=1, closefd=False)
            code = target(*args) or 0
        finally:
            os._exit(code)
    return pid


def test_a_cell_printing_5_mb_a_call_keeps_the_head_and_tail_and_says_what_was_cut(tmp_path: Path) -> None:
    log = tmp_path / "cell.log"
    request = ForkRequest.to_run(loud, {}, env={}, cwd=str(tmp_path), sys_path=[], log=str(log))
    _, status = os.waitpid(_forked(run_work, request), 0)
    assert os.waitstatus_to_exitcode(status) == 0
    data = log.read_bytes()
    total = 3 * (len("call 0 ") + 5 * MB + 1 + len("call 0 warning\n")) + len("the last line\n")
    assert len(data) < cell_log.HEAD + cell_log.TAIL + 200  # 15 MB printed
    assert data.startswith(b"call 0 xxxx") and data[-200:].endswith(b"call 2 warning\nthe last line\n"), data[-200:]
    cut = total - cell_log.HEAD - cell_log.TAIL
    note = f"[neuronexp: {cut} bytes of this cell's output cut here; cell.log keeps its first {cell_log.HEAD} bytes"
    assert note.encode() in data
    assert data.index(note.encode()) == cell_log.HEAD + 1  # right after the head (and a newline)


def test_a_short_log_is_kept_whole_and_is_on_disk_before_the_cell_ends(tmp_path: Path) -> None:
    log = tmp_path / "cell.log"
    log.write_bytes(b"written before\n")  # what enter_cell_process's redirect already wrote: kept

    def cell() -> int:
        with capped_output(str(log), head=64, tail=64):
            print("hello", flush=True)
            time.sleep(60)  # killed here: what it printed must be in the log already
        return 0

    pid = _forked(cell)
    deadline = time.monotonic() + 20
    while b"hello" not in log.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert log.read_bytes() == b"written before\nhello\n"


def test_output_past_a_small_cap_is_cut_exactly(tmp_path: Path) -> None:
    log = tmp_path / "cell.log"

    def cell() -> int:
        with capped_output(str(log), head=10, tail=6):
            for i in range(100):
                os.write(1, b"%03d," % i)
        return 0

    _, status = os.waitpid(_forked(cell), 0)
    assert os.waitstatus_to_exitcode(status) == 0
    text = log.read_text()
    assert text.startswith("000,001,00") and text.endswith("]\n8,099,")
    assert (
        "[neuronexp: 384 bytes of this cell's output cut here; cell.log keeps its first 10 bytes and its last 6]"
        in text
    )


def test_a_process_the_cell_started_does_not_hold_its_exit_up(tmp_path: Path) -> None:
    log = tmp_path / "cell.log"

    def cell() -> int:
        with capped_output(str(log)):
            subprocess.Popen([sys.executable, "-c", "import time; print('child', flush=True); time.sleep(30)"])
            time.sleep(0.5)
        return 0

    start = time.monotonic()
    _, status = os.waitpid(_forked(cell), 0)
    assert os.waitstatus_to_exitcode(status) == 0 and time.monotonic() - start < 15
