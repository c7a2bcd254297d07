"""A sweep's fork server is started by the `neuronexp` command before Hydra is imported (cli.main._early_server), so
that its template's `import torch` overlaps Hydra's start, for every command the engine will run as a sweep: with -m,
and an experiment that sweeps without it (the README's first command, `+experiment=rmsnorm_sweep`). The local executor
adopts it where its malloc mode is the cells' (engine.executor.Local); any other executor closes it."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from neuronexp.cellprocess.forkserver import ADDRESS_ENV, ForkServer, server_address
from neuronexp.cli.main import _early_server, through_the_sweeper
from neuronexp.engine._hydra import BASIC_LAUNCHER
from neuronexp.engine.context import SweepContext
from neuronexp.engine.executor import Inline, Local
from neuronexp.engine.planned_invocation import executor_for


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADDRESS_ENV, raising=False)  # the test session's own server is not the command's


def test_a_sweep_starts_its_fork_server_before_hydra_named_only_once_adopted(no_server: None) -> None:
    server = _early_server(through_the_sweeper(["-m", "module=rmsnorm_naive,rmsnorm_fused"]))
    assert server is not None and server.proc is not None and server.dir is not None
    try:
        assert server.allocator == "stable" and server.proc.poll() is None
        # Not in the environment yet: under another sweeper (hydra/sweeper=basic) each job's cell would ask this
        # template for its fork, and wait for ever for the warm-up only neuronexp's sweeper sends.
        assert server_address() is None
        server.announce()  # what neuronexp's sweeper does when it adopts it
        assert server_address() == server.dir / "socket"  # where the sweep's cells will ask for their forks
    finally:
        server.__exit__(None, None, None)
        server.__exit__(None, None, None)  # the command closes it again after a sweep that closed it: harmless
    assert server.proc.returncode is not None and server_address() is None


def test_an_experiment_whose_own_config_sweeps_starts_one_without_m(no_server: None, tmp_path: Path) -> None:
    # The README's first command, `neuronexp +experiment=rmsnorm_sweep`, is a sweep by its experiment's config.
    server = _early_server(through_the_sweeper(["+experiment=rmsnorm_sweep", "input.shape=[1,8,64]"]))
    assert server is not None and server.proc is not None
    server.__exit__(None, None, None)
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "one.yaml").write_text("# @package _global_\n# sweeper: params: in a comment\nx: 1\n")
    (tmp_path / "experiment" / "mine.yaml").write_text("hydra:\n  sweeper:\n    params:\n      module: a,b\n")
    for name, sweeps in (("one", False), ("mine", True), ("nowhere", False)):
        argv = ["--config-dir", str(tmp_path), f"+experiment={name}"]
        server = _early_server(through_the_sweeper(argv))
        assert (server is not None) is sweeps, name
        if server is not None:
            server.__exit__(None, None, None)


@pytest.mark.parametrize(
    "argv",
    [["module=rmsnorm_naive"], ["-m", "--help"], ["--cfg", "job"], ["-m", "--hydra-help"], ["--info"]],
    ids=["single run", "help", "cfg", "hydra help", "info"],
)
def test_a_command_that_runs_no_sweep_starts_none(no_server: None, argv: list[str]) -> None:
    assert _early_server(through_the_sweeper(argv)) is None
    assert ADDRESS_ENV not in os.environ


def test_a_server_this_process_has_already_is_used_instead(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "socket").touch()
    named = f"{socket.gethostname()}:{os.getpid()}:{tmp_path / 'socket'}"
    monkeypatch.setenv(ADDRESS_ENV, named)
    assert _early_server(["--multirun", "module=rmsnorm_naive,rmsnorm_fused"]) is None
    assert os.environ[ADDRESS_ENV] == named


@pytest.mark.parametrize(
    "argv",
    [["+experiment=rmsnorm_sweep"], ["+experiment=rmsnorm_sweep", "backend=cpu"], ["hydra.mode=MULTIRUN"]],
    ids=["the README's first command", "with an override", "multirun mode"],
)
def test_an_experiment_that_sweeps_without_m_starts_its_server_before_hydra(no_server: None, argv: list[str]) -> None:
    server = _early_server(through_the_sweeper(argv))
    try:
        assert server is not None and server.proc is not None and server.proc.poll() is None
    finally:
        if server is not None:
            server.__exit__(None, None, None)


def test_an_experiment_is_read_from_the_config_dir_and_one_that_does_not_sweep_starts_none(
    no_server: None, tmp_path: Path
) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n      module: rmsnorm_naive,rmsnorm_fused\n"
    )
    (tmp_path / "experiment" / "one.yaml").write_text("# @package _global_\ninput:\n  seed: 3\n")
    server = _early_server(through_the_sweeper(["--config-dir", str(tmp_path), "+experiment=mine"]))
    try:
        assert server is not None
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    for argv in (["--config-dir", str(tmp_path), "+experiment=one"], ["+experiment=mine"], ["+experiment=nosuch"]):
        assert _early_server(through_the_sweeper(argv)) is None, argv


class _Early:
    """What _cell_processes reads of the command's server: its malloc mode, and whether it was closed."""

    def __init__(self) -> None:
        self.allocator, self.closed, self.announced = "stable", False, False

    def announce(self) -> None:
        self.announced = True

    def __exit__(self, *exc: object) -> None:
        self.closed = True


def _context(allocator: str, launcher: str, early: _Early) -> SweepContext:
    hydra = {"launcher": {"_target_": launcher}, "runtime": {"choices": {}}}
    master = OmegaConf.create({"allocator": allocator, "launcher": {"devices": 1, "isolate": None}, "hydra": hydra})
    return SweepContext(master, {}, [], None, fork_server=early)


def test_the_local_executor_adopts_the_commands_server_where_its_malloc_mode_is_the_cells(no_server: None) -> None:
    early = _Early()
    with executor_for(_context("stable", BASIC_LAUNCHER, early), single=False) as executor:
        assert isinstance(executor, Local) and executor.server is early and early.announced and not early.closed


def test_cells_of_another_malloc_mode_close_it_and_get_a_server_of_their_own(no_server: None, monkeypatch) -> None:
    monkeypatch.setattr(ForkServer, "__enter__", lambda server: server)  # made, not started: no template here
    monkeypatch.setattr(ForkServer, "__exit__", lambda server, *exc: None)
    early = _Early()
    with executor_for(_context("system", BASIC_LAUNCHER, early), single=False) as executor:
        assert early.closed and not early.announced
        assert isinstance(executor.server, ForkServer) and executor.server.allocator == "system"


@pytest.mark.parametrize(
    ("launcher", "single"), [("hydra_plugins.x.SlurmLauncher", False), (BASIC_LAUNCHER, True)], ids=["slurm", "run"]
)
def test_an_executor_that_forks_nothing_here_closes_it(no_server: None, launcher: str, single: bool) -> None:
    early = _Early()
    executor = executor_for(_context("stable", launcher, early), single=single)
    assert early.closed and not early.announced and not isinstance(executor, Local)
    assert isinstance(executor, Inline) == single


def test_the_task_function_pickles_without_the_server(no_server: None) -> None:
    """Hydra's launchers (submitit's) pickle the task function for their jobs: the server is not theirs to take."""
    import pickle

    from neuronexp.cli.main import _Job

    server = _early_server(["--multirun", "module=rmsnorm_naive,rmsnorm_fused"])
    try:
        copy = pickle.loads(pickle.dumps(_Job(server)))
    finally:
        assert server is not None
        server.__exit__(None, None, None)
    assert isinstance(copy, _Job) and copy.fork_server is None


@pytest.mark.slow  # the command's own template imports torch (about 5 s on 2 busy cores)
def test_the_readme_first_commands_form_forks_its_cells_from_the_server_started_before_hydra(
    cli, no_server: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`neuronexp +experiment=NAME` without -m, NAME sweeping in its file as rmsnorm_sweep does: the server started
    before Hydra is the one the sweep adopts and forks its cells from (the cells' processes are its children)."""
    import neuronexp
    from helpers import FAST
    from neuronexp.cli import main

    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "pair.yaml").write_text(
        "# @package _global_\nbaseline: {module: rmsnorm_naive}\nhydra:\n  mode: MULTIRUN\n  sweeper:\n"
        "    params:\n      module: rmsnorm_naive,rmsnorm_fused\n"
    )
    started: list[ForkServer] = []
    early = main._early_server
    monkeypatch.setattr(main, "_early_server", lambda routed: started.append(early(routed)) or started[-1])
    templates: list[int] = []
    announce = ForkServer.announce
    monkeypatch.setattr(ForkServer, "announce", lambda s: templates.append(s.proc.pid) or announce(s))
    sweep = tmp_path / "sweep"
    res = cli("--config-dir", str(tmp_path), "+experiment=pair", *FAST, "backend=cpu", f"hydra.sweep.dir={sweep}")
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(started) == 1 and started[0] is not None and templates == [started[0].proc.pid]
    cells = neuronexp.load(sweep).cells
    assert len(cells) == 2 and set(cells["speedup_method"].dropna()) == {"paired"}
