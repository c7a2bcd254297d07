"""Timing moves a host cell's inputs between rounds (timing.relocate), and a cell's default thread count leaves a
CPU spare where torch's would take them all (host.threads): the two defaults behind a study's rerun figures."""

from __future__ import annotations

import pytest
import torch

from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.cell.build import Built
from neuronexp.cell.timing import time_calls
from neuronexp.config import TimingConfig
from neuronexp.host.threads import default_threads

CFG = TimingConfig(min_seconds=0, warmup=1, iters=6, min_iters=6, rounds=3, round_gap_s=0.0, max_seconds=60)


def _built(x: torch.Tensor, seen: list[int]) -> Built:
    def model(t: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        seen.append(t.data_ptr())
        return t * scale

    return Built(model, torch.nn.Identity(), (x,), {"scale": 2.0})


def test_each_round_calls_inputs_in_a_new_place_with_the_same_values() -> None:
    x, seen = torch.arange(4096, dtype=torch.float32), []
    built = _built(x, seen)
    time_calls([built.call], CpuBackend(), CFG, seed=1, relocate=[built.relocate])
    places = [p for i, p in enumerate(seen) if i == 0 or p != seen[i - 1]]  # where each run of calls read x
    # The warm-up read the original, then each round a new place (the allocator may hand an earlier round's back).
    assert len(places) == 1 + CFG.rounds and places[0] == x.data_ptr() and x.data_ptr() not in places[1:]
    assert torch.equal(built.args[0], x) and built.kwargs == {"scale": 2.0}


def test_relocate_false_keeps_the_inputs_where_they_are() -> None:
    x, seen = torch.ones(64), []
    built = _built(x, seen)
    cfg = TimingConfig(**{**CFG.__dict__, "relocate": False})
    time_calls([built.call], CpuBackend(), cfg, relocate=[built.relocate])
    assert set(seen) == {x.data_ptr()}


def test_a_moved_input_keeps_its_kind() -> None:
    leaf = torch.randn(8, 4).t().requires_grad_(True)  # non-contiguous, needs grad
    with torch.inference_mode():
        inference = torch.randn(8)
    built = Built(lambda *a: a, torch.nn.Identity(), (leaf, inference, 3), {})
    built.relocate(128)
    moved_leaf, moved_inference, literal = built.args
    assert moved_leaf.requires_grad and moved_leaf.is_leaf and moved_leaf.stride() == leaf.stride()
    assert moved_leaf.data_ptr() != leaf.data_ptr() and torch.equal(moved_leaf, leaf)
    assert moved_inference.is_inference() and not leaf.is_inference()
    assert literal == 3 and built.spacer.numel() == 128


def test_the_host_backend_alone_relocates() -> None:
    from neuronexp.backends.base import Backend

    assert CpuBackend.relocates_inputs and not Backend.relocates_inputs


@pytest.mark.parametrize(
    ("cpus", "torch_threads", "omp", "expected"),
    [
        (2, 2, None, 1),  # every CPU: one left spare
        (8, 8, None, 7),
        (8, 4, None, None),  # torch already leaves CPUs free (physical cores on an SMT host)
        (1, 1, None, None),  # nothing to spare
        (2, 2, "2", None),  # OMP_NUM_THREADS said how many: a user's or a sweep slot's word stands
    ],
)
def test_default_threads_leave_a_cpu_spare_only_where_torch_takes_them_all(
    monkeypatch: pytest.MonkeyPatch, cpus: int, torch_threads: int, omp: str | None, expected: int | None
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cpus)))
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    assert default_threads(torch_threads) == expected


@pytest.mark.parametrize("keys", [[], pytest.param(["threads=1", "timing.relocate=false"], marks=pytest.mark.slow)])
def test_a_run_records_the_thread_count_it_used(cli, tmp_path, keys: list[str]) -> None:
    import neuronexp
    from helpers import FAST, run_dirs

    res = cli(*FAST, "backend=cpu", "roofline.probe=off", *keys)
    assert res.returncode == 0, res.stderr
    row = neuronexp.load(run_dirs(tmp_path)[0]).cells.iloc[0]
    # Unset: torch's own count less the spare CPU (the run restores the process's count after it).
    assert row["threads"] == (1 if keys else default_threads(torch.get_num_threads()) or torch.get_num_threads())
