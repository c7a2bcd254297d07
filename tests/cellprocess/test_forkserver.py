"""The fork server with real processes: what its template holds before it forks, what a forked cell process sees
(environment, cores, threads, the device selection the CUDA and Neuron paths read), how it ends (exit, signal,
time limit, a vanished supervisor), and the torch-neuronx stand-in loaded as its autoload would be."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import forked
from helpers.forked import STANDIN_DIR
from neuronexp.cellprocess.childproc import ForkRequest
from neuronexp.cellprocess.forkserver import ADDRESS_ENV, ForkServer, hello, run_forked, server_address
from neuronexp.cellprocess.placement import plan_slots

CPUS = sorted(os.sched_getaffinity(0))


@pytest.fixture(scope="module")
def server() -> Iterator[Path]:
    """One template for the module (its boot imports torch: seconds)."""
    with ForkServer():
        address = server_address()
        assert address is not None
        yield address


def _request(tmp_path: Path, target: str, **payload: Any) -> dict[str, Any]:
    """A fork request's parts, for a test to change before `_typed` makes the request."""
    return {
        "entry": getattr(forked, target),
        "payload": {"out": str(tmp_path / "seen.json"), **payload},
        "kind": "cpu",
        "env": dict(os.environ),
        "cwd": str(tmp_path),
        "sys_path": sys.path,
        "cpus": None,
        "log": str(tmp_path / "cell.log"),
    }


def _typed(parts: dict[str, Any]) -> ForkRequest:
    where = {k: v for k, v in parts.items() if k not in ("entry", "payload")}
    return ForkRequest.to_run(parts["entry"], parts["payload"], **where)


def _seen(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "seen.json").read_text())


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pid: int, within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_the_template_is_one_thread_with_no_device_runtime(server: Path) -> None:
    state = hello(server)
    # numpy's OpenBLAS pool and pyarrow's jemalloc thread are off in the template (forkserver.TEMPLATE_ENV).
    assert len(state["threads"]) == 1, state["threads"]
    assert state["runtimes_started"] == []


def test_a_forked_cell_finds_its_layers_imported_and_starts_no_process_for_its_platform_string(
    server: Path, tmp_path: Path
) -> None:
    # What every cell would pay afresh (docs/performance.md, "Sampling to a precision": a cell that does nothing): the
    # built-in layers' import (14 ms), pyarrow's version module (7 ms, its pandas shim), `uname -p` (5 ms).
    modules = ["neuronexp.modules", "neuronexp.modules.rmsnorm", "pyarrow.vendored.version"]
    ended = run_forked(_typed(_request(tmp_path, "inherited", modules=modules)), timeout_s=60)
    assert ended.code == 0, (tmp_path / "cell.log").read_text()
    seen = _seen(tmp_path)
    assert seen["missing"] == [] and seen["spawned"] == [] and seen["platform"].startswith("Linux-")


def test_cells_are_forked_with_their_own_malloc_mode_from_the_start(server: Path, tmp_path: Path) -> None:
    """The template applies the sweep's mode before torch allocates; a cell of another mode gets a template of its
    own. Seen in the child's page faults: an 8 MiB block freed and taken again faults under glibc's defaults."""
    state = hello(server)["allocator"]
    assert state["mode"] == "stable" and state["note"] is None and state["applied"]["trim_threshold"] > 0
    seen = {}
    for mode in ("stable", "system"):
        request = _request(tmp_path / mode, "heap_faults")
        (tmp_path / mode).mkdir()
        request["allocator"] = mode
        ended = run_forked(_typed(request), timeout_s=60)
        assert ended.code == 0, (tmp_path / mode / "cell.log").read_text()
        seen[mode] = _seen(tmp_path / mode)
    stable, system = seen["stable"], seen["system"]
    assert stable["ppid"] == hello(server)["pid"] and system["ppid"] != stable["ppid"]  # a system template of its own
    assert stable["faults"][1:] == [0, 0], stable  # the block stayed in the heap
    assert system["faults"][1] > 1000, system  # glibc's defaults: mmapped, freed, then the heap grew for it
    # The tuning mark (host.allocator.APPLIED_ENV) names the forked process itself where its template tuned.
    assert stable["tuned"] == str(stable["pid"]) and system["tuned"] is None


def test_a_cell_process_takes_its_environment_cores_and_threads_before_any_device(server: Path, tmp_path: Path) -> None:
    request = _request(tmp_path, "report")
    slot = plan_slots("cuda", 1, None, ["3"], CPUS[-1:])[0]
    request["env"] = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    request["env"].update(slot.env(), NEURON_RT_VISIBLE_CORES="4-5", MARK="1")
    request["cpus"] = list(slot.cpus)
    ended = run_forked(_typed(request), timeout_s=60)
    assert ended.code == 0 and ended.signal is None and not ended.timed_out, (tmp_path / "cell.log").read_text()
    seen = _seen(tmp_path)
    assert seen["pid"] == ended.pid and seen["pgid"] == ended.pid  # a process group of its own
    assert seen["ppid"] == hello(server)["pid"]  # forked from the template, not started afresh
    assert seen["cpus"] == CPUS[-1:] and seen["torch_threads"] == 1 and seen["cwd"] == str(tmp_path)
    # Its environment is the supervisor's plus the slot's; the template's own settings do not leak in.
    assert (
        seen["env"]["MARK"] == "1"
        and seen["env"]["CUDA_VISIBLE_DEVICES"] == "3"
        and seen["env"]["OMP_NUM_THREADS"] == "1"
    )
    assert "OPENBLAS_NUM_THREADS" not in seen["env"] and "PYTORCH_NVML_BASED_CUDA_CHECK" not in seen["env"]
    # What torch's CUDA device count parses, and the row's placement, are the slot's devices.
    assert (
        seen["cuda_visible"] == ["3"]
        and seen["cuda_placement"] == "cuda:3"
        and seen["neuron_placement"] == "neuron:4-5"
    )


@pytest.mark.parametrize(
    ("mode", "code", "sig"), [("exit", 3, None), ("raise", 1, None), ("segv", None, signal.SIGSEGV)]
)
def test_how_a_cell_process_ended_comes_back(
    server: Path, tmp_path: Path, mode: str, code: int | None, sig: int | None
) -> None:
    ended = run_forked(_typed(_request(tmp_path, "behave", mode=mode)), timeout_s=60)
    assert (ended.code, ended.signal, ended.timed_out) == (code, sig, False)
    if mode == "raise":  # its traceback is in the cell's log
        assert "RuntimeError: target failed" in (tmp_path / "cell.log").read_text()


@pytest.mark.parametrize(("in_slurm", "code", "sig"), [(True, 4, None), (False, None, signal.SIGUSR2)])
def test_in_a_slurm_task_the_time_limit_warning_is_left_to_the_supervisor(
    server: Path, tmp_path: Path, in_slurm: bool, code: int | None, sig: int | None
) -> None:
    """Slurm signals every process of the task; the supervisor writes the cell's "timed out" row, so the cell must
    not die of the warning first (the race CI lost once: "killed by SIGUSR2" instead of "timed out")."""
    request = _request(tmp_path, "behave", mode="warned")
    request["env"] = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
    if in_slurm:
        request["env"]["SLURM_JOB_ID"] = "1"
    ended = run_forked(_typed(request), timeout_s=60)
    assert (ended.code, ended.signal) == (code, sig)


def test_a_time_limit_kills_the_cell_and_everything_it_started(server: Path, tmp_path: Path) -> None:
    start = time.monotonic()
    ended = run_forked(_typed(_request(tmp_path, "behave", mode="hang")), timeout_s=1.5)
    assert ended.timed_out and ended.signal == signal.SIGKILL and 1.5 <= time.monotonic() - start < 30
    seen = _seen(tmp_path)
    assert _gone(seen["pid"]) and _gone(seen["grandchild"])


def test_a_process_a_cell_started_in_a_session_of_its_own_ends_with_the_cell(server: Path, tmp_path: Path) -> None:
    """Issue 44: a cell's child that calls setsid left the cell's process group, and so outlived the sweep."""
    ended = run_forked(_typed(_request(tmp_path, "behave", mode="escape")), timeout_s=60)
    seen = _seen(tmp_path)
    try:
        assert ended.code == 0
        assert _gone(seen["grandchild"])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(seen["grandchild"], signal.SIGKILL)
    assert hello(server)["pid"]  # the template serves on


@pytest.mark.parametrize("request_line", [b'{"fork": null}', b'{"fork": 5}', b'{"fork": "!!"}', b"[1]", b'"x"', b"{"])
def test_an_unreadable_request_is_refused_and_the_template_serves_on(server: Path, request_line: bytes) -> None:
    """Issue 44: `{"fork": null}` on the template's socket killed the template."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(server))
        sock.sendall(request_line + b"\n")
        answer = json.loads(sock.makefile().readline())
    assert answer["refused"].startswith("unreadable request")
    assert hello(server)["pid"]


def test_a_cell_dies_with_its_supervisor(server: Path, tmp_path: Path) -> None:
    # A supervisor process (as a launcher worker would be) asks for a hanging cell and is killed with -9.
    code = (
        f"import sys; sys.path[:0] = {sys.path!r}; from neuronexp.cellprocess.childproc import ForkRequest; "
        "from neuronexp.cellprocess.forkserver import run_forked; "
        "run_forked(ForkRequest.decode(sys.argv[1]), None)"
    )
    request = _typed(_request(tmp_path, "behave", mode="hang")).encode()
    supervisor = subprocess.Popen(
        [sys.executable, "-c", code, request], env=dict(os.environ, **{ADDRESS_ENV: os.environ[ADDRESS_ENV]})
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "seen.json").exists():
        assert supervisor.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    seen = _seen(tmp_path)
    supervisor.kill()
    supervisor.wait()
    assert _gone(seen["pid"]) and _gone(seen["grandchild"])
    assert hello(server)["pid"]  # the template serves on


def test_first_parallel_ops_of_a_fork_start_their_thread_pool(server: Path, tmp_path: Path) -> None:
    request = _request(tmp_path, "parallel")
    request["cpus"] = CPUS
    ended = run_forked(_typed(request), timeout_s=120)  # a pool inherited half-made would hang here
    assert ended.code == 0, (tmp_path / "cell.log").read_text()
    assert _seen(tmp_path)["threads"] == len(CPUS)


def _autoload(tmp_path: Path, start_runtime: bool) -> Path:
    """A sitecustomize that imports the stand-in at interpreter start, as the real torch-neuronx's torch.backends
    entry point does at `import torch` (and, if asked, starts its runtime there too)."""
    site = tmp_path / "site"
    site.mkdir()
    start = "torch.neuron.device_count()\n" if start_runtime else ""
    (site / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(STANDIN_DIR)!r})\nimport torch, torch_neuronx\n{start}"
    )
    return site


def test_the_neuron_runtime_sees_the_cores_set_in_the_cell_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(_autoload(tmp_path, False)), os.environ.get("PYTHONPATH", "")])
    )
    monkeypatch.delenv("NEURON_RT_VISIBLE_CORES", raising=False)
    slot = plan_slots("neuron", 2, 2, [str(i) for i in range(4)], CPUS)[1]
    with ForkServer():
        assert "neuron" not in hello(server_address())["runtimes_started"]  # loaded, not started
        request = _request(tmp_path, "neuron_backend")
        request.update(kind="neuron", env={**os.environ, **slot.env()})
        ended = run_forked(_typed(request), timeout_s=60)
    assert ended.code == 0, (tmp_path / "cell.log").read_text()
    seen = _seen(tmp_path)
    assert seen["imported_before"] is True  # from the template, as autoloaded
    assert seen["env_at_start"] == {"NEURON_RT_VISIBLE_CORES": "2-3", "NEURON_RT_NUM_CORES": None}
    assert seen["placement"] == "neuron:2-3"


def test_a_template_whose_neuron_runtime_started_refuses_neuron_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(_autoload(tmp_path, True)), os.environ.get("PYTHONPATH", "")])
    )
    with ForkServer():
        assert hello(server_address())["runtimes_started"] == ["neuron"]
        request = _request(tmp_path, "neuron_backend")
        request["kind"] = "neuron"
        refused = run_forked(_typed(request), timeout_s=60)
        fine = run_forked(_typed(_request(tmp_path, "report")), timeout_s=60)
    assert refused.pid is None and "Neuron runtime started in neuronexp's fork-server template" in (
        refused.refused or ""
    )
    assert fine.code == 0


@pytest.mark.slow
def test_the_compile_warm_up_leaves_one_thread_and_cells_still_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    with ForkServer(warm=["compile"]):
        deadline = time.monotonic() + 600
        while "compile" not in (state := hello(server_address()))["warmed"]:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert len(state["threads"]) == 1 and state["runtimes_started"] == [], state
        ended = run_forked(_typed(_request(tmp_path, "compile_tiny")), timeout_s=300)
        assert ended.code == 0, (tmp_path / "cell.log").read_text()
        one_core = _request(tmp_path, "report")
        one_core["cpus"] = CPUS[-1:]
        assert run_forked(_typed(one_core), timeout_s=60).code == 0
    # The template imported Inductor's config with all the cores; a cell on one core sizes its pool for one.
    assert _seen(tmp_path)["compile_threads"] == 1


def test_the_template_state_names_a_python_thread_that_a_library_started() -> None:
    import threading

    from neuronexp.cellprocess.forksafety import template_state, thread_warning

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="a_library_monitor", daemon=True)
    worker.start()
    try:
        state = template_state()
    finally:
        stop.set()
        worker.join()
    main, *others = state["threads"]
    assert "/" not in main and any(name.endswith("/a_library_monitor") for name in others), state["threads"]
    assert "a_library_monitor" in (thread_warning(state) or "")


def test_ctrl_c_while_the_template_starts_is_left_to_its_owner(capfd: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C reaches the template with its owner; sent before template.main ignores it (Python starting, then the
    template's imports) it ended the template, with a KeyboardInterrupt traceback on the terminal in the second case."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    server = ForkServer(warm=None).start()
    try:
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # blocked in this process only for the spawn
        assert server.proc is not None and server.dir is not None
        os.kill(server.proc.pid, signal.SIGINT)  # Python starting
        time.sleep(0.1)
        os.kill(server.proc.pid, signal.SIGINT)  # the template's imports (0.3 s of them)
        server.serve([])
        assert hello(server.dir / "socket")["pid"] == server.proc.pid  # alive, and serving
    finally:
        server.__exit__(None, None, None)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_the_command_starts_its_fork_server_before_importing_a_config_library() -> None:
    """What `neuronexp -m ...` imports before it spawns the template (cli.main._early_server) delays every sweep: its
    first cell waits for that template. A fresh interpreter's import log, read back."""
    code = "import neuronexp.cli.main, neuronexp.cellprocess.forkserver"
    log = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    ).stderr
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in log.splitlines() if "|" in line}
    assert "neuronexp" in imported
    assert not imported & {"omegaconf", "hydra", "yaml", "torch", "pandas", "numpy"}, imported


def test_a_released_template_is_gone_and_the_server_still_closes() -> None:
    server = ForkServer(warm=None).start()
    assert server.proc is not None and server.dir is not None
    server.release()
    assert server.proc.wait(timeout=30) == -signal.SIGKILL
    server.__exit__(None, None, None)
    assert not server.dir.exists()
