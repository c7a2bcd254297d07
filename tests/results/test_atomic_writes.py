"""A write that fails midway leaves the file as it was and no temporary behind: a reader never sees half a file
(results.files; a killed process is tested by tests/engine/test_kill_during_write.py, slow)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neuronexp.results import files
from neuronexp.results.files import atomic_write_text, write_json, write_table


def _half_then_fail(self: Path, data: bytes) -> int:
    with open(self, "wb") as f:
        f.write(data[: len(data) // 2])
    raise OSError(28, "No space left on device")


def test_text_and_json_written_halfway_leave_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "summary.md"
    atomic_write_text(target, "old\n")
    monkeypatch.setattr(Path, "write_bytes", _half_then_fail)
    with pytest.raises(OSError):
        atomic_write_text(target, "new text " * 100)
    with pytest.raises(OSError):
        write_json(target, {"a": 1})
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"]


def test_a_table_written_halfway_leaves_the_old_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "cells.parquet"
    write_table(target, pa.table({"x": [1]}))
    seen: list[Path] = []

    def fail(table: pa.Table, where: Path) -> None:
        seen.append(Path(where))
        Path(where).write_bytes(b"PAR1 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.pq, "write_table", fail)
    with pytest.raises(OSError):
        write_table(target, pa.table({"x": [2]}))
    assert seen and seen[0] != target and seen[0].parent == tmp_path  # staged beside it, never the file itself
    assert pq.read_table(target).column("x").to_pylist() == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.parquet"]


def test_a_successful_write_replaces_the_file_in_one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "jobs.json"
    atomic_write_text(target, "old")
    replaced: list[tuple[str, str]] = []
    real = files.os.replace

    def spy(src, dst) -> None:
        assert Path(dst).read_text() == "old"  # untouched until the rename
        replaced.append((Path(src).name, Path(dst).name))
        real(src, dst)

    monkeypatch.setattr(files.os, "replace", spy)
    atomic_write_text(target, "new")
    assert target.read_text() == "new" and len(replaced) == 1 and replaced[0][1] == "jobs.json"


@pytest.mark.parametrize("fails", [False, True])
def test_a_writers_staging_file_beside_the_temporary_is_removed_and_nothing_else(tmp_path: Path, fails: bool) -> None:
    # Kineto's trace export stages through `<name it was given>.tmp` and leaves it when the disk fills.
    neighbours = [tmp_path / ".trace.json.tmp-other", tmp_path / "trace.json.tmp", tmp_path / "keep.json"]
    for p in neighbours:
        p.write_text("not this write's")
    with pytest.raises(OSError) if fails else contextlib.nullcontext():
        with files.atomic_path(tmp_path / "trace.json") as tmp:
            Path(f"{tmp}.tmp").write_text("staged")  # the writer's own staging file, left behind
            tmp.write_text("{}")
            if fails:
                raise OSError(28, "No space left on device")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([p.name for p in neighbours] + ([] if fails else ["trace.json"]))


def test_a_directory_removed_while_writing_leaves_the_writers_own_error(tmp_path: Path) -> None:
    import shutil

    where = tmp_path / "job"
    where.mkdir()
    with pytest.raises(RuntimeError, match="the writer's"):
        with files.atomic_path(where / "trace.json"):
            shutil.rmtree(where)
            raise RuntimeError("the writer's")


def test_a_link_planted_under_the_temporary_name_is_never_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary is created here, exclusively and not through a link: a link someone planted under the name it
    would take (its random part made predictable here) fails the write, and neither the file it points to nor the
    target changes; unpredicted, the name is a fresh one each write."""
    victim, target = tmp_path / "victim.txt", tmp_path / "summary.md"
    victim.write_text("theirs\n")
    atomic_write_text(target, "old\n")
    monkeypatch.setattr(files.os, "urandom", lambda n: b"\x00" * n)
    planted = tmp_path / f".summary.md.tmp-{files.os.getpid()}-{'00' * 4}"
    planted.symlink_to(victim)
    with pytest.raises(FileExistsError):
        atomic_write_text(target, "new\n")
    assert victim.read_text() == "theirs\n" and target.read_text() == "old\n"
    assert planted.is_symlink()  # someone else's: left as it was
    monkeypatch.undo()
    atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n" and victim.read_text() == "theirs\n"


def test_the_file_is_synced_before_the_rename_and_the_directory_after(tmp_path: Path, monkeypatch) -> None:
    """A machine that crashes after the rename reached the disk but not the data (a Slurm node's power) would leave a
    zero-length cells.parquet: the data is fsynced first, the directory's entry after the rename."""
    import os

    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst) -> None:
        events.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    target = tmp_path / "env.json"
    write_json(target, {"a": 1})
    (kind0, first), (kind1, renamed), (kind2, directory) = events
    assert kind0 == "fsync" and Path(first).parent == tmp_path and Path(first).name.startswith(".env.json.tmp-")
    assert (kind1, renamed) == ("replace", str(target))
    assert (kind2, directory) == ("fsync", str(tmp_path)) and target.read_text() == '{\n  "a": 1\n}\n'


def _sync_log(monkeypatch) -> list[tuple[str, str]]:
    """Each fsync (of which path) and each rename (onto which name), in order."""
    import os

    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        events.append(("fsync", Path(path).name.split(".tmp-")[0][1:] if ".tmp-" in path else path))  # .NAME.tmp-
        real_fsync(fd)

    def replace(src, dst) -> None:
        events.append(("replace", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


def test_a_jobs_tables_each_sync_their_data_and_the_directory_once_before_and_once_after_cells(
    tmp_path: Path, monkeypatch
) -> None:
    """A machine's crash never leaves cells.parquet without the files written before it: every rename before it is
    on the disk first (one directory sync), each file's data before its own rename."""
    import pandas as pd

    from neuronexp.results.files import write_job_tables

    tables = {"ops": pd.DataFrame(), "samples": pd.DataFrame(), "cells": pd.DataFrame()}
    events = _sync_log(monkeypatch)
    write_job_tables(tmp_path, tables)
    renamed = [name for kind, name in events if kind == "replace"]
    assert renamed[-1] == "cells.parquet" and len(renamed) == 2 * len(tables)
    for i, (kind, name) in enumerate(events):
        if kind == "replace":
            assert events[i - 1] == ("fsync", name) or events[i - 2] == ("fsync", name)  # its data, before it
    directory = [i for i, event in enumerate(events) if event == ("fsync", str(tmp_path))]
    last = events.index(("replace", "cells.parquet"))
    assert directory == [last - 2, last + 1]  # after every other rename and cells.parquet's data; after its rename


def test_the_phase_is_renamed_into_place_without_a_sync(tmp_path: Path, monkeypatch) -> None:
    from neuronexp.results.files import read_phase, write_phase

    events = _sync_log(monkeypatch)
    write_phase(tmp_path, "timing")
    assert events == [("replace", ".phase")] and read_phase(tmp_path) == "timing"


def test_a_single_runs_job_directory_is_synced_file_by_file_and_four_times_as_a_directory(
    tmp_path: Path, monkeypatch
) -> None:
    """What a cell writes (a single run, in this process): every file's data before its rename, the phase note
    excepted; the directory after its marker and cell.json, then once before cells.parquet and once after
    (config.yaml, env.json, the outputs and the trace: with the tables)."""
    from helpers.inproc import run_main

    events = _sync_log(monkeypatch)
    out = tmp_path / "run"
    args = ["module=rmsnorm_fused", "input.shape=[1,8,64]", "timing.iters=5", "timing.warmup=1", "profiler=quick"]
    result = run_main([*args, "timing.min_seconds=0", f"hydra.run.dir={out}"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    renamed = [name for kind, name in events if kind == "replace" and name != ".phase"]
    assert {"cells.parquet", "output.npz", "env.json", "cell.json", "config.yaml"} <= set(renamed)
    synced = [name for kind, name in events if kind == "fsync"]
    assert [n for n in renamed if n not in synced] == []  # each file's data, before it took its name (tested above)
    assert ".phase" not in synced
    assert synced.count(str(out)) == 4, synced
    cell_json, config_yaml = events.index(("replace", "cell.json")), events.index(("replace", "config.yaml"))
    assert ("fsync", str(out)) in events[cell_json:config_yaml]  # whose directory this is, on the disk before the rest
