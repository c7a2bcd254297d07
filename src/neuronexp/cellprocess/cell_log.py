"""A cell process's output (`cell.log`), capped: a layer that prints megabytes a call would fill the disk. The first
HEAD bytes and the last TAIL bytes are kept, with a line saying how much was cut between them; a log within
HEAD + TAIL is kept whole, and is on disk as it is written (a killed cell loses nothing of it)."""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

HEAD = TAIL = 1 << 20  # bytes: a traceback, or the supervisor's "last line of its output", fits many times over


@contextmanager
def capped_output(path: str, head: int = HEAD, tail: int = TAIL) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2, also those of the processes it starts) to
    `path` through a pipe that a thread of this process caps; on leaving, the descriptors are restored and the log
    is complete. What `path` already holds counts toward `head`."""
    read, write = os.pipe()
    stop_r, stop_w = os.pipe()
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    keeper = threading.Thread(
        target=_keep, args=(read, stop_r, log, head, tail), name="neuronexp-cell-log", daemon=True
    )
    keeper.start()
    saved = [os.dup(1), os.dup(2)]
    for fd in (1, 2):
        os.dup2(write, fd)
    os.close(write)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(Exception):  # a stream the layer closed or replaced
                stream.flush()
        for fd, old in zip((1, 2), saved):
            os.dup2(old, fd)
            os.close(old)
        os.write(stop_w, b"x")  # not EOF: a process the cell started may still hold the pipe open
        keeper.join()
        for fd in (read, stop_r, stop_w, log):
            os.close(fd)


def _keep(read: int, stop: int, log: int, head: int, tail: int) -> None:
    """Copy the pipe into the log until told to stop (then drain what is left): write-through up to head + tail
    bytes; past that, keep the last `tail` bytes in memory and, at the end, cut the file back to its head, say so,
    and append them."""
    head_end = max(head, os.fstat(log).st_size)  # where the head ends in the file
    size, kept, cut = os.fstat(log).st_size, bytearray(), 0
    for chunk in _chunks(read, stop):
        if size < head_end + tail:
            _write(log, chunk[: head_end + tail - size])
        kept += chunk[max(0, head_end - size) :]  # the part beyond the head
        size += len(chunk)
        if len(kept) > tail:
            cut += len(kept) - tail
            del kept[: len(kept) - tail]
    if cut:
        try:
            os.ftruncate(log, head_end)
        except OSError:
            return
        note = f"\n[neuronexp: {cut} bytes of this cell's output cut here; cell.log keeps its first {head_end} bytes"
        _write(log, f"{note} and its last {tail}]\n".encode() + bytes(kept))


def _write(log: int, data: bytes) -> None:
    with suppress(OSError):  # a full disk: the log loses output, the cell must not (a writer never waits on the keeper)
        while data:
            data = data[os.write(log, data) :]


def _chunks(read: int, stop: int) -> Iterator[bytes]:
    """The pipe's data as it comes, until every writer closed it or `stop` is readable (then what is left in it)."""
    poll = select.poll()
    for fd in (read, stop):
        poll.register(fd, select.POLLIN)
    while True:
        ready = {fd for fd, _ in poll.poll()}
        if stop in ready:
            os.set_blocking(read, False)
        try:
            chunk = os.read(read, 1 << 16)
        except BlockingIOError:  # stopped, and nothing left
            return
        if not chunk:  # every writer closed it
            return
        yield chunk
