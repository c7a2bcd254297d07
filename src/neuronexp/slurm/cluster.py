"""What a Slurm sweep checks and fits before anything is submitted, from the cluster's own answers (sinfo, scontrol,
squeue), and the exception a task raises when its time limit is near. Up front because sbatch accepts an array
that then pends forever or dies in every task (more CPUs than a node has, a limit shorter than submitit's warning,
more slots than a task's cores; docs/slurm.md). No submitit here."""

from __future__ import annotations

import logging
import math
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, read_write

from neuronexp.config import ConfigError

log = logging.getLogger("neuronexp.engine")

# Slurm sends `--signal` up to 60 s earlier than asked (its event resolution is a minute); a task needs some
# more time after that to start Python and install submitit's handler before the signal arrives.
SIGNAL_SLACK_S = 90
CPUS_KEY = "hydra.launcher.cpus_per_task"


class SlurmTimeLimit(Exception):
    """Raised in a Slurm task when Slurm's warning signal says its time limit is near (neuronexp's launcher turns
    submitit's signal handling into this): the running cell is stopped and recorded as timed out."""


def _run(*cmd: str, timeout: float = 20) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None


def partitions() -> dict[str, list[int]]:
    """CPUs of each node, by partition (the default one's name ends with "*"), from sinfo; {} when unknown."""
    res = _run("sinfo", "--noheader", "--Node", "--format=%P|%c")
    out: dict[str, list[int]] = {}
    for line in res.stdout.splitlines() if res is not None and res.returncode == 0 else []:
        name, _, cpus = line.strip().partition("|")
        if cpus.rstrip("+").isdigit():
            out.setdefault(name, []).append(int(cpus.rstrip("+")))
    return out


def _node_cpus(launcher: DictConfig) -> tuple[str, int | None]:
    """The partition a sweep submits to (for messages) and the most CPUs one of its nodes has (None: unknown);
    ConfigError: `hydra.launcher.partition` names no partition of this cluster."""
    known = partitions()
    wanted = launcher.get("partition")
    for name, cpus in known.items():
        if (wanted is None and name.endswith("*")) or name.rstrip("*") == wanted:
            return f"partition {name.rstrip('*')}", max(cpus)
    if wanted is not None and known:
        raise ConfigError(
            "hydra.launcher.partition",
            wanted,
            f"no such partition on this cluster; sinfo lists {', '.join(n.rstrip('*') for n in known)}",
        )
    return "the default partition", None


def _explicit(config: DictConfig) -> set[str]:
    """The hydra keys set on the command line (`hydra.launcher.cpus_per_task=4`), as opposed to by a preset."""
    return {o.split("=", 1)[0].lstrip("+~") for o in OmegaConf.select(config, "hydra.overrides.hydra", default=[])}


def fit_cpus_per_task(config: DictConfig) -> dict[str, Any]:
    """Lower a preset's `hydra.launcher.cpus_per_task` to what the partition's nodes have, in `config`; the
    launcher keys changed ({} when none). One set on the command line is left for `check_slurm_sweep` to refuse."""
    launcher = config.hydra.launcher
    asked = launcher.get("cpus_per_task")
    if asked is None or CPUS_KEY in _explicit(config):
        return {}
    try:
        where, most = _node_cpus(launcher)
    except ConfigError:
        return {}  # check_slurm_sweep says so, in one line
    if most is None or asked <= most:
        return {}
    with read_write(launcher):
        launcher.cpus_per_task = most
    log.info("%s=%d: the nodes of %s have %d CPUs (the preset asks %d)", CPUS_KEY, most, where, most, asked)
    return {"cpus_per_task": most}


def check_slurm_sweep(master: DictConfig, cpu_slots: set[tuple[int, int | None]]) -> None:
    """Refuse in one line (ConfigError), before anything is submitted, a Slurm sweep that could not run as asked:
    a time limit shorter than submitit's warning signal; more CPUs per task than the partition's nodes have; more
    CPU slots than a task bound to its cores has; tasks of an earlier submission of this sweep still in the queue.
    `master`: the sweep's composed config (with `hydra`); `cpu_slots`: (launcher.devices, launcher.per_device) of
    the cells whose backend is `cpu`."""
    launcher = master.hydra.launcher
    timeout_min, delay = launcher.get("timeout_min"), launcher.get("signal_delay_s")
    if timeout_min is not None and delay is not None and timeout_min * 60 - delay < SIGNAL_SLACK_S:
        raise ConfigError(
            "hydra.launcher.timeout_min",
            timeout_min,
            f"submitit asks Slurm for its warning signal {delay} s before the limit (hydra.launcher."
            f"signal_delay_s), which could reach the task as it starts; set timeout_min>="
            f"{math.ceil((delay + SIGNAL_SLACK_S) / 60)} or lower signal_delay_s",
        )
    where, most = _node_cpus(launcher)
    cpus = launcher.get("cpus_per_task")
    if most is not None and cpus is not None and cpus > most:
        raise ConfigError(
            CPUS_KEY, cpus, f"the nodes of {where} have at most {most} CPUs; set {CPUS_KEY}={most} or less"
        )
    binding = _binding()
    for devices, per in sorted(cpu_slots, key=str):
        if binding and cpus and devices * (per or 1) > cpus:
            raise ConfigError(
                "launcher.devices",
                devices,
                f"each Slurm task runs on its own {CPUS_KEY}={cpus} cores ({binding} binds it to them), "
                f"too few for {devices} slots of {per or 1}; set launcher.devices=1 (Slurm places "
                f"each task) or {CPUS_KEY}={devices * (per or 1)}",
            )
    _check_no_earlier_tasks(master)


def _binding() -> str | None:
    """How Slurm confines a task to its cores ("TaskPlugin=task/affinity"), or None when it does not (or is
    not known to): task/affinity always binds; task/cgroup alone only with ConstrainCores=yes."""
    res = _run("scontrol", "show", "config")
    conf = {}
    for line in res.stdout.splitlines() if res is not None and res.returncode == 0 else []:
        key, sep, value = line.partition("=")
        if sep:
            conf[key.strip()] = value.strip()
    plugin = conf.get("TaskPlugin", "")
    if "affinity" in plugin or ("cgroup" in plugin and conf.get("ConstrainCores", "").lower() == "yes"):
        return f"TaskPlugin={plugin}"
    return None


def _check_no_earlier_tasks(master: DictConfig) -> None:
    """A killed submitter leaves its array running (Slurm does not know about it): a resubmission now would run
    the same cells a second time, two tasks writing one job directory."""
    folder = str(OmegaConf.select(master, "hydra.launcher.submitit_folder", default=""))
    if not folder.endswith("/%j"):
        return
    # submitit's folders are named by job: <array job>_<task>
    names = {p.name.split("_")[0] for p in Path(folder[: -len("/%j")]).glob("*")}
    ids = sorted((n for n in names if n.isdigit()), key=int)
    if not ids:
        return
    # Without --states, squeue lists only what is queued or running; none of the ids known: exit 1, nothing runs.
    res = _run("squeue", "--noheader", "--array", "--format=%i|%T", f"--jobs={','.join(ids)}")
    running = [ln.split("|") for ln in res.stdout.splitlines() if "|" in ln] if res and res.returncode == 0 else []
    if running:
        jobs = sorted({task.split("_")[0] for task, _ in running}, key=int)
        states = ", ".join(sorted({state for _, state in running}))
        raise ConfigError(
            "hydra.sweep.dir",
            str(master.hydra.sweep.dir),
            f"Slurm job {','.join(jobs)} of an earlier submission still runs its cells there ({states}); "
            f"wait until squeue no longer lists it, or scancel {' '.join(jobs)}, then resubmit",
        )


def signal_hint(signum: int) -> str:
    """Why a cell process inside a Slurm task died of `signum`, when Slurm is the likely sender ("" otherwise)."""
    if "SLURM_JOB_ID" in os.environ and signum == signal.SIGTERM:
        return " (Slurm stopped the task: scancel, preemption or its time limit)"
    return ""
