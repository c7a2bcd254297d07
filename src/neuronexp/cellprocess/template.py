"""The fork server's template process: it imports torch and the cell stack once, starts no device runtime and no thread
pool, and forks one process per cell (cellprocess.forkserver is its client side). Why: a fresh interpreter costs about
3 s a cell on a 2-core VM, a fork milliseconds (docs/performance.md); and it is a process of its own,
single-threaded, because forking a threaded process (the sweep, a launcher worker) can leave a lock held forever in the
child. cellprocess.forksafety says what must not exist here when it forks."""

from __future__ import annotations

import gc
import json
import os
import platform
import selectors
import signal
import socket
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

from neuronexp.cellprocess.childproc import PASSED_ON, ForkRequest, die_with, enter_cell_process, run_work
from neuronexp.cellprocess.forksafety import refusal, template_state, thread_warning, warm_compile


class Server:
    """Accepts requests on a Unix socket; one forked child per request, its exit status sent back. Single-threaded on
    purpose: one selector loop reads requests, the owner's control pipe (stdin; EOF: stop) and SIGCHLD through a wake-up
    pipe."""

    def __init__(self, listener: socket.socket, warmed: list[str], allocator: dict[str, Any]) -> None:
        self.listener, self.sel = listener, selectors.DefaultSelector()
        self.pending: dict[socket.socket, bytes] = {}  # connections still sending their request
        self.child_of: dict[socket.socket, int] = {}
        self.conn_of: dict[int, socket.socket | None] = {}  # None: its supervisor hung up
        self.warmed, self.allocator = warmed, allocator
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a Python handler, so that the wake-up fd is written
        self._check()

    def _check(self) -> None:
        self.state = {**template_state(), "warmed": self.warmed, "allocator": self.allocator}
        warning = thread_warning(self.state)
        if warning:
            print(warning, file=sys.stderr)

    def serve(self) -> None:
        self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        self.sel.register(self.wake_r, selectors.EVENT_READ, "child")
        self.sel.register(sys.stdin.fileno(), selectors.EVENT_READ, "control")
        gc.freeze()  # children's collections must not write to the template's objects (copy-on-write)
        while True:
            for key, _ in self.sel.select():
                if key.data == "accept":
                    conn, _ = self.listener.accept()
                    self.pending[conn] = b""
                    self.sel.register(conn, selectors.EVENT_READ, "conn")
                elif key.data == "child":
                    os.read(self.wake_r, 4096)
                    self._reap()
                elif key.data == "control":
                    if not os.read(sys.stdin.fileno(), 4096):
                        return self._stop()
                else:
                    self._read(key.fileobj)  # type: ignore[arg-type]  # registered as the accepted socket

    def _read(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(65536)
        except OSError:  # reset by a supervisor that died: as if it had closed
            data = b""
        if conn in self.pending:
            if not data:
                return self._close(conn)
            self.pending[conn] += data
            if b"\n" in self.pending[conn]:
                try:  # {"hello": true}, or {"fork": ForkRequest.encode()}
                    message = json.loads(self.pending.pop(conn))
                    request = message if message.get("hello") else ForkRequest.decode(message["fork"])
                # never from neuronexp's own client (`{"fork": null}`, a list, a pickle of something else): the
                # server must outlive any request, whatever it raises
                except Exception as exc:
                    self._send(conn, {"refused": f"unreadable request ({exc})"})
                    return self._close(conn)
                self._start(conn, request)
            return
        pid = self.child_of.get(conn)
        if pid is not None:  # "kill", or EOF: the supervisor gave up on its cell or died; its cell goes too
            self._kill(pid)
            if not data:
                self.conn_of[pid] = None
                self._close(conn)

    def _start(self, conn: socket.socket, request: ForkRequest | dict[str, Any]) -> None:
        if not isinstance(request, ForkRequest):  # {"hello": true}
            self._send(conn, self.state)
            return self._close(conn)
        mode = self.allocator["mode"]
        if request.allocator != mode:  # its malloc settings would be this template's: refused
            self._send(conn, {"refused": f"the template runs allocator={mode}", "allocator_mode": mode})
            return self._close(conn)
        refused = refusal(self.state, request.kind)
        if refused:
            self._send(conn, {"refused": refused})
            return self._close(conn)
        pid = os.fork()
        if pid == 0:
            self._child(conn, request)
        # The child does the same: whichever runs first, `kill` below never misses the cell's group (OSError: it
        # already did, or it died already).
        with suppress(OSError):
            os.setpgid(pid, pid)
        self.child_of[conn], self.conn_of[pid] = pid, conn
        self._send(conn, {"pid": pid})

    def _child(self, conn: socket.socket, request: ForkRequest) -> NoReturn:
        gc.enable()
        signal.set_wakeup_fd(-1)
        others = [c.fileno() for c in [*self.pending, *self.child_of]]
        for fd in [self.listener.fileno(), self.wake_r, conn.fileno(), *others]:
            os.close(fd)
        self.sel.close()
        enter_cell_process(request, self.state["pid"])
        run_work(request)

    def _reap(self) -> None:
        """Each child that ended: a cell (its supervisor told how), or a process a cell started that outlived its
        parent and came here (this process is their subreaper); then what is left of the latter is killed."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.conn_of.pop(pid, None)
            if conn is not None:
                self.child_of.pop(conn, None)
                code = os.waitstatus_to_exitcode(status)
                self._send(conn, {"signal": -code} if code < 0 else {"exit": code})
                self._close(conn)
            self._kill_orphans()

    def _kill_orphans(self) -> None:
        """Kill this process's children that are not cells: processes a cell started in a session or group of their
        own (setsid, a daemon) whose parent ended; the kernel gave them to this process (PR_SET_CHILD_SUBREAPER)
        rather than to init, so that none outlives the sweep."""
        for pid in children(os.getpid()):
            if pid not in self.conn_of:
                self._kill(pid)

    def _kill(self, pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)  # its own group: the cell and whatever it started (compile workers)
        except ProcessLookupError:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _send(self, conn: socket.socket, message: dict[str, Any]) -> None:
        with suppress(OSError):  # the supervisor is gone
            conn.sendall((json.dumps(message) + "\n").encode())

    def _close(self, conn: socket.socket) -> None:
        self.pending.pop(conn, None)
        self.child_of.pop(conn, None)
        self.sel.unregister(conn)
        conn.close()

    def _stop(self) -> None:
        for pid in list(self.conn_of):
            self._kill(pid)
        self._kill_orphans()
        for pid in list(self.conn_of):
            with suppress(ChildProcessError):
                os.waitpid(pid, 0)


def children(parent: int) -> list[int]:
    """The processes whose parent is `parent` (from /proc: Linux; none found elsewhere)."""
    found = []
    with suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with suppress(OSError, IndexError, ValueError):
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                        found.append(int(entry))
    return found


def become_subreaper() -> None:
    """Linux: a process a cell started that outlives its parent comes to this process, not to init (a setsid'd one
    escapes the cell's process group, which is what a cell's end or time limit kills): Server._kill_orphans."""
    with suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # 36: PR_SET_CHILD_SUBREAPER


def main() -> None:
    """Entry of the template process: `python -c ... <owner pid> <listening socket fd> <allocator mode>`; then one
    line on stdin, `{"warm": [...]}`, says what to prepare before serving (ForkServer.serve)."""
    from neuronexp.host import allocator

    # First, before torch allocates: every cell forked from here inherits this heap and these malloc settings.
    # (For `stable` glibc read the same values from the environment at start-up: ForkServer.)
    owner, listen_fd, host_alloc = int(sys.argv[1]), int(sys.argv[2]), allocator.apply(sys.argv[3])
    die_with(owner)
    become_subreaper()
    # Ctrl-C reaches every process of the terminal's group, and Slurm's scancel (SIGTERM) and time-limit warning
    # (SIGUSR2, submitit's) every process of the task: the supervisors handle them (they drop their cells, or
    # write their rows), and the owner then stops this process. Its cells get the defaults back (childproc).
    for sig in PASSED_ON:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, PASSED_ON)  # blocked by ForkServer.start; one pending is dropped
    gc.disable()  # no freed holes in pages the children share; collections resume in each child
    import torch  # (what every cell pays for; the reason this process exists)

    import neuronexp.backends.neuron.neuron_backend  # noqa: F401  (backend=auto builds it first: torch only, 40 ms)
    import neuronexp.cell.group  # noqa: F401  (the cell stack every cell runs)
    import neuronexp.cellprocess.entry  # noqa: F401  (the cells' entry point)
    import neuronexp.modules  # noqa: F401  (the built-in layers: 14 ms of every cell that builds one)

    # torch.profiler's first start asks `hasattr(torch, "_inductor")`, which imports Inductor and Dynamo: 1.8 s
    # of every cell on a 2-core VM unless done here (thread-free: checked by forksafety.template_state).
    hasattr(torch, "_inductor")
    # env.json's platform string: its processor field runs `uname -p` once per process (5 ms of every cell's).
    platform.platform()
    # pyarrow's pandas shim imports its version module when a cell makes its first table (7 ms of every cell's).
    import pyarrow.vendored.version  # noqa: F401

    line = sys.stdin.buffer.readline()
    if not line:  # the owner stopped before its sweep had a cell to run
        return
    warmed = []
    if "compile" in json.loads(line)["warm"]:  # before the first fork: every cell starts from the same template
        try:
            warm_compile()
            warmed.append("compile")
        except Exception as exc:  # cells then compile cold; they still run
            print(f"neuronexp: fork server: compile warm-up failed ({type(exc).__name__}: {exc})", file=sys.stderr)
    Server(socket.socket(fileno=listen_fd), warmed, host_alloc).serve()
