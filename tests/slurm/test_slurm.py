"""The launcher presets: what `hydra/launcher=slurm|parallel` compose to, and the sbatch script Slurm would get.

No Slurm here: the Slurm path itself runs for real through submitit's local executor (test_parallel.py); these
check the configuration a cluster would receive.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

import neuronexp.config.compose  # noqa: F401  (registers the schema, `base_config`)

pytest.importorskip("hydra_plugins.hydra_submitit_launcher")


def _compose(*overrides: str):
    GlobalHydra.instance().clear()
    with initialize_config_module("neuronexp.conf", version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=True)


def test_parallel_runs_one_unit_per_device_slot_on_the_engines_own_executor() -> None:
    from neuronexp.engine._hydra import LauncherKind, launcher_kind
    from neuronexp.engine.executor import Local
    from neuronexp.engine.launched import HydraLauncher, Slurm
    from neuronexp.engine.planned_invocation import for_launcher

    def executor(*overrides: str):
        cfg = _compose(*overrides)
        return for_launcher(launcher_kind(cfg), cfg)

    assert launcher_kind(_compose("hydra/launcher=parallel")) == LauncherKind.parallel
    parallel, basic = executor("hydra/launcher=parallel", "launcher.devices=4"), executor("launcher.devices=4")
    assert isinstance(parallel, Local) and parallel.slots == 4 and isinstance(basic, Local) and basic.slots == 1
    assert isinstance(executor("hydra/launcher=slurm"), Slurm)
    assert isinstance(executor("hydra/launcher=submitit_local"), HydraLauncher)


def test_slurm_preset_resources_and_the_sbatch_script(tmp_path: Path) -> None:
    from submitit.slurm.slurm import _make_sbatch_string

    cfg = _compose(
        "hydra/launcher=slurm",
        "hydra.launcher.partition=trn1",
        f"hydra.sweep.dir={tmp_path}",
        "launcher.devices=16",
        "launcher.per_device=2",
    )
    params = OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    assert params["_target_"].endswith("SlurmLauncher")
    assert (params["partition"], params["cpus_per_task"], params["timeout_min"], params["array_parallelism"]) == (
        "trn1",
        8,
        60,
        64,
    )
    assert params["submitit_folder"] == f"{tmp_path}/.submitit/%j"  # logs land in the shared sweep directory
    # What sbatch receives for a 48-cell sweep (submitit's own renderer, with its key names).
    script = _make_sbatch_string(
        command="python -m submitit.core._submit FOLDER",
        folder=params["submitit_folder"],
        map_count=48,
        job_name="neuronexp",
        partition=params["partition"],
        time=params["timeout_min"],
        cpus_per_task=params["cpus_per_task"],
        ntasks_per_node=params["tasks_per_node"],
        nodes=params["nodes"],
        array_parallelism=params["array_parallelism"],
    )
    for line in (
        "#SBATCH --partition=trn1",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --time=60",
        "#SBATCH --array=0-47%48",
    ):
        assert line in script, script


def test_slurm_on_a_machine_without_slurm_fails_in_one_line_before_anything_is_written(cli, tmp_path: Path) -> None:
    res = cli(
        "-m",
        "input.shape=[1,8,64]",
        "hydra/launcher=slurm",
        f"hydra.sweep.dir={tmp_path / 'sweep'}",
        # Only the virtual environment's bin on PATH: "no Slurm here" even next to a real Slurm (CI has one).
        env={"PATH": str(Path(__import__("sys").executable).parent)},
    )
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "neuronexp: error: hydra/launcher=slurm: no Slurm here (sbatch is not on PATH); "
        "hydra/launcher=parallel runs the sweep's units on this machine"
    )
    assert not (tmp_path / "sweep").exists()


FAKE_SLURM = {
    # Stand-ins for Slurm's commands (no cluster here): sinfo names one partition of 64-CPU nodes; sbatch keeps
    # the script it is given and refuses it, so nothing runs; srun only has to exist (submitit looks for it).
    "sinfo": 'echo "trn1*|64"',
    "sbatch": 'for last; do :; done\n/bin/cp "$last" "$NX_SBATCH_CAPTURE/"\n'
    'echo "sbatch: error: refused by the stand-in" >&2\nexit 1',
    "srun": "exit 1",
}


def test_slurm_preset_reaches_the_script_the_launcher_submits(cli, tmp_path: Path) -> None:
    fake_bin, captured = tmp_path / "fake_slurm", tmp_path / "captured"
    fake_bin.mkdir()
    captured.mkdir()
    for name, body in FAKE_SLURM.items():
        (fake_bin / name).write_text(f"#!/bin/sh\n{body}\n")
        (fake_bin / name).chmod(0o755)
    sweep = tmp_path / "sweep"
    res = cli(
        "-m",
        "module=rmsnorm_naive,rmsnorm_fused",
        "input.shape=[1,8,64],[1,8,128]",
        "profiler=quick",
        "hydra/launcher=slurm",
        "hydra.launcher.partition=trn1",
        "launcher.devices=16",
        "launcher.per_device=2",
        "hydra.launcher.timeout_min=30",
        "hydra.launcher.gpus_per_task=1",
        "hydra.launcher.setup=[source /fsx/venv/bin/activate]",
        f"hydra.sweep.dir={sweep}",
        env={"PATH": f"{fake_bin}:{Path(__import__('sys').executable).parent}", "NX_SBATCH_CAPTURE": str(captured)},
    )
    # 3: the sweep did not finish (the launcher gave up), not a cell that failed (1)
    assert res.returncode == 3 and "refused by the stand-in" in res.stderr, res.stderr[-2000:]
    scripts = sorted(captured.glob(".submission_file_*.sh"))
    assert scripts, "the launcher never called sbatch"
    lines = set(scripts[0].read_text().splitlines())
    # The preset (conf/hydra/launcher/slurm.yaml) through the launcher plugin's key mapping, as sbatch gets it:
    # one array task per cell (4 cells), one task on one node each.
    for line in (
        "#SBATCH --partition=trn1",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --time=30",
        "#SBATCH --nodes=1",
        "#SBATCH --gpus-per-task=1",
        "source /fsx/venv/bin/activate",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --array=0-3%4",
        "#SBATCH --signal=USR2@120",
        f"#SBATCH --output={sweep}/.submitit/%A_%a/%A_%a_0_log.out",
    ):
        assert line in lines, (line, sorted(lines))
