"""One real cell run in this process (run_cell, Hydra-composed): the `threads` key reaches torch for the calls
that are measured, and each sample carries the round it was taken in, so that the samples table gives back the
row's median of round medians."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra

from helpers.layers import ThreadsSeen
from neuronexp.cell.group import run_cell
from neuronexp.config.compose import spec_from
from neuronexp.results import Results

SMALL = [
    "input.shape=[1,8,64]",
    "input.dtype=float32",
    "backend=cpu",
    "timing.warmup=1",
    "timing.iters=9",
    "timing.min_seconds=0",
    "timing.min_iters=9",
    "timing.rounds=3",
    "timing.round_gap_s=0",
    "profiler=quick",
    "roofline.probe=off",
    "correctness.enabled=false",
]


def _run(tmp_path: Path, *overrides: str) -> Results:
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("neuronexp.conf", version_base="1.3"):
            cfg = compose("config", overrides=[*SMALL, *overrides], return_hydra_config=True)
            spec = spec_from(cfg, dict(cfg.hydra.runtime.choices), list(overrides), ",".join(overrides))
    finally:
        GlobalHydra.instance().clear()
    return run_cell(spec, tmp_path)


def test_the_thread_count_is_applied_to_the_calls_and_restored_after(tmp_path: Path) -> None:
    before = torch.get_num_threads()
    asked = 3 if before != 3 else 2  # a count this process would not have by itself
    ThreadsSeen.seen.clear()
    results = _run(
        tmp_path, "module._target_=helpers.layers.ThreadsSeen", "~module.hidden_size", "~module.eps", f"threads={asked}"
    )
    row = results.cells.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert ThreadsSeen.seen and set(ThreadsSeen.seen) == {asked}
    assert row["threads"] == asked
    assert torch.get_num_threads() == before


def test_samples_carry_their_round_and_give_back_the_median_of_round_medians(tmp_path: Path) -> None:
    results = _run(tmp_path, "module=rmsnorm_fused")
    row, samples = results.cells.iloc[0], results.samples
    assert row["status"] == "ok", row["error"]
    assert row["latency_rounds"] == 3 and len(samples) == 9
    assert samples["round"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    medians = samples.groupby("round")["latency_us"].median()
    assert row["latency_median_us"] == np.median(medians)
    assert row["round_spread"] == (medians.max() - medians.min()) / row["latency_median_us"]


def test_a_constructor_argument_set_on_the_command_line_is_a_column(tmp_path: Path) -> None:
    results = _run(tmp_path, "module=rmsnorm_fused", "module.eps=0.001")
    row = results.cells.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["eps"] == 0.001 and "module.eps=0.001" in row["overrides"]


def test_a_cell_counts_the_nan_and_inf_in_its_own_output(tmp_path: Path) -> None:
    target = ["module._target_=helpers.layers.HalfNaN", "~module.hidden_size", "~module.eps"]
    (tmp_path / "nan").mkdir(), (tmp_path / "clean").mkdir()
    row = _run(tmp_path / "nan", *target, "correctness.enabled=true").cells.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["output_tensors"] == 1 and row["output_nonfinite"] == 8 * 64 // 2 + 1
    clean = _run(tmp_path / "clean", "correctness.enabled=true").cells.iloc[0]
    assert clean["output_nonfinite"] == 0  # measured zero, not missing
