"""The Slurm array of a sweep, submitted and waited for through submitit, by the Slurm executor (engine.launched): job
states that also work without accounting storage (submitit's sacct watcher never learns that a task ended there, and
a task that ends without its result would keep the sweep waiting forever), every task waited for, and Slurm's
time-limit warning turned into the running cell's row. Imports submitit: only the Slurm executor imports it.
Written against submitit 1.5: it extends SlurmInfoWatcher and SlurmExecutor and uses their bookkeeping."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import submitit
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
from omegaconf import OmegaConf
from submitit.core.utils import UncompletedJobError
from submitit.slurm.slurm import SlurmExecutor, SlurmInfoWatcher, SlurmJob, SlurmJobEnvironment

from neuronexp.slurm.cluster import SlurmTimeLimit, _run

log = logging.getLogger("neuronexp.engine")


class SlurmTasksLost(Exception):
    """Tasks of the array ended without a result (cancelled, killed, node lost): their cells are missing."""


class SlurmStateWatcher(SlurmInfoWatcher):
    """Job states for every watched job of this process (submitit's design: one watcher, polled at 0, 2, 4, 8 ...
    seconds after a submission, then every `delay_s`), from sacct, or from squeue once sacct has failed."""

    # Not over yet, in squeue's words as well as sacct's (submitit's own list knows sacct's states only).
    ACTIVE = {
        "READY",
        "PENDING",
        "RUNNING",
        "UNKNOWN",
        "REQUEUED",
        "COMPLETING",
        "PREEMPTED",
        "CONFIGURING",
        "SUSPENDED",
        "STOPPED",
        "RESIZING",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "SIGNALING",
        "STAGE_OUT",
        "RESV_DEL_HOLD",
    }

    def __init__(self, delay_s: int = 60) -> None:
        super().__init__(delay_s)
        self.without_sacct: str | None = None  # why sacct did not answer, once it did not

    def _make_command(self) -> list[str] | None:
        ids = sorted({x.split("_")[0] for x in self._registered - self._finished})
        if not ids:
            return None
        if self.without_sacct is None:
            return ["sacct", "-o", "JobID,State,NodeList", "--parsable2", *[a for i in ids for a in ("-j", i)]]
        return ["squeue", "--noheader", "--array", "--states=all", "--format=%i|%T|%N", f"--jobs={','.join(ids)}"]

    def update(self) -> None:
        command = self._make_command()
        if command is None:
            return
        self._num_calls += 1
        res = _run(*command, timeout=60)
        if self.without_sacct is None and (res is None or res.returncode != 0):
            self.without_sacct = (res.stderr.strip().splitlines() or ["failed"])[0] if res is not None else "not found"
            log.info("no Slurm job accounting here (sacct: %s): job states come from squeue", self.without_sacct)
            command = self._make_command()
            res = _run(*command, timeout=60) if command else None
        if res is not None and command and command[0] == "sacct" and res.returncode == 0:
            self._info_dict.update(self.read_info(res.stdout))
        # squeue says "Invalid job id" when none of the asked jobs is left: an answer, not a failure.
        elif res is not None and (res.returncode == 0 or "Invalid job id" in res.stderr):
            info = self.read_info("JobID|State|NodeList\n" + res.stdout)
            for job_id in self._registered - self._finished:
                # No longer listed: it left the controller (MinJobAge after it ended), so it is over.
                info.setdefault(job_id, {"JobID": job_id, "State": "GONE", "NodeList": ""})
            self._info_dict.update(info)
        else:  # the controller did not answer: keep the last states, ask again at the next poll
            log.debug("job states unknown this time: %s", res.stderr.strip() if res is not None else "no answer")
        self._last_status_check = time.time()
        for job_id in self._registered - self._finished:
            if self.is_done(job_id, mode="cache"):
                self._finished.add(job_id)

    def is_done(self, job_id: str, mode: str = "standard") -> bool:
        return self.get_state(job_id, mode=mode).upper() not in self.ACTIVE


class WatchedSlurmJob(SlurmJob):
    watcher = SlurmStateWatcher(delay_s=60)


class WatchedSlurmExecutor(SlurmExecutor):
    job_class = WatchedSlurmJob

    def _internal_process_submissions(self, delayed_submissions: list[Any]) -> list[Any]:
        jobs = super()._internal_process_submissions(delayed_submissions)
        # submitit makes an array's jobs plain SlurmJob, watched by sacct: the same jobs, watched by ours.
        return [
            job
            if isinstance(job, WatchedSlurmJob)
            else WatchedSlurmJob(self.folder, job.job_id, tuple(range(job.num_tasks)))
            for job in jobs
        ]


def submit_and_wait(params: dict[str, Any], sweep: Any, function: Any, args: Sequence[tuple[Any, ...]]) -> list[Any]:
    """hydra-submitit-launcher's `launch` with our executor: `function` over each of `args` as one array task
    (`params`: the launcher's keys; `sweep`: hydra.sweep, whose directory holds the tasks' folder); every task's
    result (SlurmTasksLost: once every task has ended, when some ended without a result)."""
    params = dict(params)
    folder, max_timeouts = params.pop("submitit_folder"), params.pop("max_num_timeout")
    # submitit's AutoExecutor translates the plugin's keys (timeout_min, mem_gb, ...) into sbatch's.
    generic = set(OmegaConf.structured(BaseQueueConf).keys())
    auto = submitit.AutoExecutor(cluster="slurm", folder=folder, slurm_max_num_timeout=max_timeouts)
    auto.update_parameters(**{k if k in generic else f"slurm_{k}": v for k, v in params.items()})
    executor = WatchedSlurmExecutor(folder, max_num_timeout=max_timeouts)
    executor.update_parameters(**auto.parameters)
    Path(str(sweep.dir)).mkdir(parents=True, exist_ok=True)
    if "mode" in sweep:
        os.chmod(str(sweep.dir), mode=int(str(sweep.mode), 8))
    jobs = executor.map_array(function, *zip(*args))
    array = jobs[0].job_id.split("_")[0]
    log.info("Slurm job %s, a task per unit: squeue -j %s shows them, scancel %s stops them", array, array, array)
    returns, lost = [], []
    try:
        for job in jobs:
            try:
                returns.append(job.results()[0])
            except UncompletedJobError:  # no result file (or the task's own Python failed): its cells are missing
                lost.append(f"{job.job_id} ({job.watcher.get_state(job.job_id, mode='cache')})")
    except KeyboardInterrupt:
        log.warning("Slurm job %s keeps running on the cluster: scancel %s stops it", array, array)
        raise
    if lost:
        raise SlurmTasksLost(f"{len(lost)} of {len(jobs)} Slurm tasks ended without a result: {', '.join(lost)}")
    return returns


def stop_cells_at_time_limit(timeout_min: Any) -> None:
    """In a Slurm task: Slurm's warning signal (`signal_delay_s` before the limit) raises SlurmTimeLimit where the
    task is, so that the cell running now is stopped and gets its row (cellprocess.launch) before Slurm kills the task.

    submitit's own handler stays in charge of the signal: it requeues a preempted task, and for a task out of time
    raises UncompletedJobError ("timed-out too many times"), which this turns into SlurmTimeLimit.
    """
    signum = getattr(signal, "SIG" + SlurmJobEnvironment.USR_SIG)
    submitits = signal.getsignal(signum)

    def on_warning(num: int, frame: Any) -> None:
        try:
            if callable(submitits):
                submitits(num, frame)
        except UncompletedJobError as exc:
            raise SlurmTimeLimit(
                f"the Slurm task reached its time limit (hydra.launcher.timeout_min={timeout_min})"
            ) from exc

    signal.signal(signum, on_warning)
