"""A sweep's fork server is started by the `neuronexp` command before Hydra is imported (cli.main._early_server), so
that its template's `import torch` overlaps Hydra's start; the sweep adopts it where its malloc mode is the sweep's
and its cells are forked here, and closes it otherwise (engine.sweeper._cell_processes)."""

from __future__ import annotations

import os
import socket
from contextlib import nullcontext
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from neuronexp.cellprocess.forkserver import ADDRESS_ENV, ForkServer, server_address
from neuronexp.cli.main import _early_server, through_the_sweeper
from neuronexp.engine._hydra import BASIC_LAUNCHER
from neuronexp.engine.context import SweepContext
from neuronexp.engine.sweeper import _cell_processes


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
    master = OmegaConf.create({"allocator": allocator, "hydra": hydra})
    return SweepContext(master, {}, [], None, fork_server=early)


def test_the_sweep_adopts_the_commands_server_where_its_malloc_mode_is_the_sweeps(no_server: None) -> None:
    early = _Early()
    with _cell_processes(_context("stable", BASIC_LAUNCHER, early)) as server:
        assert server is early and early.announced and not early.closed


def test_a_sweep_of_another_malloc_mode_closes_it_and_starts_its_own(no_server: None) -> None:
    early = _Early()
    own = _cell_processes(_context("system", BASIC_LAUNCHER, early))
    assert early.closed and not early.announced
    assert isinstance(own, ForkServer) and own.allocator == "system" and own.proc is None


def test_a_slurm_sweep_closes_it_and_forks_nothing_here(no_server: None) -> None:
    early = _Early()
    none = _cell_processes(_context("stable", "hydra_plugins.x.SlurmLauncher", early))
    assert early.closed and not early.announced and isinstance(none, nullcontext)
    with none as server:
        assert server is None


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
