"""The fork server, seen from its users: start one for a sweep, and run a ForkRequest in a process forked from it under
a time limit (the template itself is cellprocess.template). One template serves every supervisor of a sweep on this
host, named in the environment (ADDRESS_ENV) so that launcher workers find it; a supervisor that finds none here (a
Slurm task) starts a private one, which costs what a fresh process does."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuronexp.cellprocess.childproc import PASSED_ON, ForkRequest
from neuronexp.host.allocator import fresh_process_env

ADDRESS_ENV = "NEURONEXP_FORK_SERVER"
# Only in the template's environment, read by the libraries they configure when those load: their thread pools stay
# off, as a fork must not inherit a thread (cellprocess.forksafety).
TEMPLATE_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
}
_BOOT = "from neuronexp.cellprocess.template import main; main()"
# How long a cell may wait for its fork: the template's boot and compile warm-up come first (tens of seconds on a
# loaded 2-core VM with an empty Inductor cache). Not the cell's own time limit, which starts when it is forked.
START_TIMEOUT_S = 900.0


@dataclass
class Ended:
    """How a forked process ended: its exit status or the signal that killed it."""

    pid: int | None
    code: int | None = None
    signal: int | None = None
    timed_out: bool = False  # killed by run_forked at its time limit
    refused: str | None = None  # never started, or lost with its server: why


class OtherAllocator(Exception):
    """The server's template runs another host malloc mode than the cell asked for."""


class ForkServer:
    """A template process for the `with` block, announced in this process's environment (ADDRESS_ENV). It starts
    importing at once, and forks nothing before `serve` says what to prepare first (`warm`; None: `serve` is called
    later): a sweep starts it before planning its cells, so that its `import torch` overlaps the planning. `allocator`:
    the host malloc mode of the template, and so of every cell forked from it (a fork inherits its template's heap and
    malloc settings): set in its environment for glibc to read at start-up, and applied again by its first statement
    (template.main). A cell of another mode gets a template of its own."""

    def __init__(self, warm: Iterable[str] | None = (), allocator: str = "stable") -> None:
        self.warm = None if warm is None else list(warm)
        self.allocator = allocator
        self.dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.saved: str | None = None
        self.announced = False

    def __enter__(self) -> ForkServer:
        self.start().announce()
        if self.warm is not None:
            self.serve(self.warm)
        return self

    def start(self) -> ForkServer:
        """Start the template, not yet named in the environment: no cell asks it for a fork before `announce` (the
        `neuronexp` command starts one before Hydra, for a sweeper that may not be neuronexp's)."""
        self.dir = _socket_dir()  # 0700: only this user may ask for a fork
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound here, before the template starts: a supervisor may connect at once and waits in the backlog
        # while the template imports torch.
        listener.bind(str(self.dir / "socket"))
        listener.listen(64)
        env = fresh_process_env({**os.environ, **TEMPLATE_ENV}, self.allocator)
        # Ctrl-C and Slurm's signals (PASSED_ON) reach the template too, and are its owner's to act on: blocked from
        # its first instruction (exec keeps a signal mask) until template.main ignores them, so that one sent while it
        # starts (its imports: 0.3 s) does not end it with a traceback. Here only while it is spawned: one that
        # arrives meanwhile is delivered when the mask is back.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, PASSED_ON)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(os.getpid()), str(listener.fileno()), self.allocator],
                stdin=subprocess.PIPE,
                pass_fds=[listener.fileno()],
                env=env,
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        listener.close()
        return self

    def announce(self) -> None:
        """Name the template in this process's environment (ADDRESS_ENV): the supervisors of this host fork from it."""
        assert self.dir is not None
        self.saved, self.announced = os.environ.get(ADDRESS_ENV), True
        os.environ[ADDRESS_ENV] = f"{socket.gethostname()}:{os.getpid()}:{self.dir / 'socket'}"

    def serve(self, warm: Iterable[str] = ()) -> None:
        """Let the template fork, after preparing what `warm` names: "compile" (forksafety.warm_compile)."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"warm": list(warm)}) + "\n").encode())
        self.proc.stdin.flush()

    def release(self) -> None:
        """Stop the template now, without waiting: the kernel frees its memory (torch's, 0.5 GB and more) while the
        sweep aggregates its results; `__exit__` reaps it."""
        if self.proc is not None:
            self.proc.kill()

    def __exit__(self, *exc: Any) -> None:
        if self.announced:  # once: a server closed early by its sweep is closed again by the command
            self.announced = False
            if self.saved is None:
                os.environ.pop(ADDRESS_ENV, None)
            else:
                os.environ[ADDRESS_ENV] = self.saved
        if self.proc is not None:
            # No orderly stop to wait for: a cell still running here was given up (Ctrl-C, a launcher that
            # stopped), and it dies with the template (PR_SET_PDEATHSIG).
            self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()  # type: ignore[union-attr]  # opened with stdin=PIPE
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)  # made by __enter__ in this invocation


def allocator_mode(config: Any) -> str:
    """The `allocator` key of a cell's or a sweep's config (a dict or a DictConfig): its template's malloc mode."""
    value = config.get("allocator") if config is not None else None
    return str(getattr(value, "value", value) or "stable")


def server_address() -> Path | None:
    """This host's fork server named in the environment, if its socket exists."""
    host, _, path = os.environ.get(ADDRESS_ENV, "").partition(":")
    path = path.partition(":")[2]  # (after the pid of the process that started it)
    return Path(path) if host == socket.gethostname() and path and Path(path).exists() else None


def forget_inherited_server() -> None:
    """Drop a fork server another process started from this process's environment: a command starts its own rather
    than forking its cells from a template made for another (a test session's, another neuronexp's)."""
    pid = os.environ.get(ADDRESS_ENV, "").split(":")[1:2]
    if pid and pid[0] != str(os.getpid()):
        del os.environ[ADDRESS_ENV]


def run_forked(request: ForkRequest, timeout_s: float | None) -> Ended:
    """Run `request` in a forked process and wait for it, killing it (and its process group) after `timeout_s` seconds.
    Ctrl-C here kills it too. `request.allocator` is the cell's malloc mode: a server whose template runs another one
    refuses the cell, which then runs from a private template started with its own mode."""
    address = server_address()
    if address is not None:
        with suppress(ConnectionRefusedError, FileNotFoundError, OtherAllocator):  # gone, or another malloc mode
            return _ask(address, request, timeout_s)
    with ForkServer(allocator=request.allocator) as private:
        assert private.dir is not None
        return _ask(private.dir / "socket", request, timeout_s)


def hello(address: Path) -> dict[str, Any]:
    """The template's state (forksafety.template_state): its threads, and whether CUDA or Neuron started there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(address))
        sock.sendall(b'{"hello": true}\n')
        return _Lines(sock).next(None) or {}


def _ask(address: Path, request: ForkRequest, timeout_s: float | None) -> Ended:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # closed early (Ctrl-C): the server kills the cell
        sock.connect(str(address))
        sock.sendall((json.dumps({"fork": request.encode()}) + "\n").encode())
        lines = _Lines(sock)
        try:
            first = lines.next(START_TIMEOUT_S)
        except EOFError:
            return Ended(None, refused="neuronexp's fork server ended before starting the cell")
        if first is None:
            return Ended(None, refused=f"neuronexp's fork server did not start the cell within {START_TIMEOUT_S:g} s")
        if first.get("allocator_mode"):
            raise OtherAllocator(first["refused"])
        if "refused" in first:
            return Ended(None, refused=first["refused"])
        pid = int(first["pid"])
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            end = lines.next(None if deadline is None else max(0.0, deadline - time.monotonic()))
            timed_out = end is None
            if timed_out:
                sock.sendall(b'"kill"\n')
                end = lines.next(None)
        except EOFError:
            return Ended(pid, refused="neuronexp's fork server ended while the cell ran")
        assert end is not None
        return Ended(pid, code=end.get("exit"), signal=end.get("signal"), timed_out=timed_out)


class _Lines:
    """JSON lines from a socket, with a time limit per line."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def next(self, timeout_s: float | None) -> dict[str, Any] | None:
        """The next message; None when `timeout_s` passes first. Raises EOFError when the peer closes."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self.buf:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.sock], [], [], wait)[0]:
                return None
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# The kernel's limit on a socket's path (sun_path is 108 bytes, with its terminating NUL).
_SOCKET_PATH_MAX = 107


def _socket_dir() -> Path:
    """A fresh 0700 directory for the template's socket: under $TMPDIR when the socket's path fits the kernel's
    limit there, else under the first of /tmp, /dev/shm where it does (a long TMPDIR, as some clusters set, would
    otherwise fail every sweep with "AF_UNIX path too long")."""
    tried = []
    for root in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
        if len(os.fsencode(os.path.join(root, "neuronexp-fork-XXXXXXXX", "socket"))) > _SOCKET_PATH_MAX:
            tried.append(root)
            continue
        try:
            return Path(tempfile.mkdtemp(prefix="neuronexp-fork-", dir=root))
        except OSError:
            tried.append(root)
    from neuronexp.config import ConfigError

    raise ConfigError(
        "TMPDIR",
        os.environ.get("TMPDIR", tempfile.gettempdir()),
        "no temporary directory holds the "
        f"sweep's fork-server socket (a path of at most {_SOCKET_PATH_MAX} bytes; tried {', '.join(tried)}): "
        "set TMPDIR to a shorter, writable directory",
    )
