"""Job states of a Slurm sweep without accounting storage (neuronexp.slurm.jobs.SlurmStateWatcher), on
any machine: `sacct` and `squeue` here are two small scripts on PATH that answer as Slurm's do (their outputs
copied from the one-node cluster of tests/slurm/test_slurm_cluster.py), so that the states that cluster cannot
show on demand (a job squeue has forgotten, a node still CONFIGURING) are covered too."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

pytest.importorskip("submitit")

from neuronexp.slurm.jobs import SlurmStateWatcher  # noqa: E402

SACCT = """#!/bin/sh
echo "sacct $*" >> "$CALLS"
echo "Slurm accounting storage is disabled" >&2
exit 1
"""
# squeue lists what the test wrote into $QUEUE; like Slurm's, it fails when none of the asked jobs is known.
SQUEUE = """#!/bin/sh
echo "squeue $*" >> "$CALLS"
if [ -s "$QUEUE" ]; then cat "$QUEUE"; else echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; fi
"""


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("sacct", SACCT), ("squeue", SQUEUE)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    queue, calls = tmp_path / "queue", tmp_path / "calls"
    queue.write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("QUEUE", str(queue))
    monkeypatch.setenv("CALLS", str(calls))
    return queue, calls


def test_without_sacct_states_come_from_squeue_with_one_note(fake_slurm, caplog: pytest.LogCaptureFixture) -> None:
    queue, calls = fake_slurm
    watcher = SlurmStateWatcher(delay_s=60)
    for job in ("7_0", "7_1", "7_2"):
        watcher.register_job(job)
    # A pending range, a task on a node still booting (a cloud node), a running one: none is over.
    queue.write_text("7_0|RUNNING|vm\n7_1|CONFIGURING|vm\n7_[2]|PENDING|\n")
    with caplog.at_level(logging.INFO, logger="neuronexp.engine"):
        watcher.update()
        assert [watcher.is_done(j, mode="cache") for j in ("7_0", "7_1", "7_2")] == [False, False, False]
        # 7_0 ended; 7_1 left the controller's memory (MinJobAge): over too; 7_2 still runs.
        queue.write_text("7_0|CANCELLED|vm\n7_2|RUNNING|vm\n")
        watcher.update()
        assert (
            watcher.get_state("7_0", mode="cache") == "CANCELLED" and watcher.get_state("7_1", mode="cache") == "GONE"
        )
        assert watcher.is_done("7_0", mode="cache") and watcher.is_done("7_1", mode="cache")
        assert not watcher.is_done("7_2", mode="cache")
        # Nothing of the array left in squeue ("Invalid job id"): an answer, so 7_2 is over as well.
        queue.write_text("")
        watcher.update()
        assert watcher.is_done("7_2", mode="cache")
    notes = [r.getMessage() for r in caplog.records]
    assert notes == [
        "no Slurm job accounting here (sacct: Slurm accounting storage is disabled): job states come from squeue"
    ]
    asked = calls.read_text().splitlines()
    assert [c.split()[0] for c in asked] == ["sacct", "squeue", "squeue", "squeue"]  # sacct asked once, never again
    assert asked[1] == "squeue --noheader --array --states=all --format=%i|%T|%N --jobs=7"


def test_an_unreachable_controller_keeps_the_last_states(fake_slurm, tmp_path: Path) -> None:
    queue, _ = fake_slurm
    watcher = SlurmStateWatcher()
    watcher.register_job("9_0")
    queue.write_text("9_0|RUNNING|vm\n")
    watcher.update()
    (tmp_path / "bin" / "squeue").write_text(
        "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    watcher.update()
    assert watcher.get_state("9_0", mode="cache") == "RUNNING" and not watcher.is_done("9_0", mode="cache")
