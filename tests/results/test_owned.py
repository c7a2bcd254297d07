"""results.owned, the writer of files into a directory the user names: its record of what it wrote, the files it may
replace (its own, unchanged) and those it never touches, links never followed, and all or nothing when something
appears meanwhile or the disk fails."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from neuronexp.engine.ownership import DIR_MARKER
from neuronexp.results import owned
from neuronexp.results.owned import MANIFEST, Refused, check_free, commit, prepare


def _tree(root: Path) -> dict[str, bytes | str]:
    return {
        str(p.relative_to(root)): os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


def test_it_writes_new_files_records_them_and_replaces_only_its_own_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"  # made, parents too
    files = {"module/x.yaml": b"one\n", "top.txt": b"t\n"}
    commit(prepare(out, "--out"), files)
    record = json.loads((out / MANIFEST).read_text())
    assert record["written_by"] == "neuronexp" and set(record["files"]) == set(files)
    assert (out / "module" / "x.yaml").read_bytes() == b"one\n"

    again = prepare(out, "--out")
    check_free(again, list(files))  # its own, unchanged: free
    commit(again, {"module/x.yaml": b"two\n"})
    assert (out / "module" / "x.yaml").read_bytes() == b"two\n"
    (out / "top.txt").write_text("edited by you\n")
    with pytest.raises(Refused, match="top.txt holds a file neuronexp did not write"):
        check_free(prepare(out, "--out"), ["top.txt"])


def test_a_name_taken_meanwhile_undoes_the_whole_commit(tmp_path: Path) -> None:
    out = tmp_path / "st"
    ready = prepare(out, "--out")
    check_free(ready, ["module/a.yaml", "module/b.yaml"])
    (out / "module").mkdir(parents=True)
    (out / "module" / "b.yaml").write_text("yours\n")  # appears between the check and the write
    with pytest.raises(Refused, match="module/b.yaml appeared"):
        commit(ready, {"module/a.yaml": b"a\n", "module/b.yaml": b"b\n"})
    assert _tree(out) == {"module": "dir", "module/b.yaml": b"yours\n"}  # a.yaml taken back, no temporary left


def test_a_link_planted_meanwhile_is_never_followed(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "st", tmp_path / "elsewhere"
    elsewhere.mkdir()
    ready = prepare(out, "--out")
    out.mkdir()
    (out / "module").symlink_to(elsewhere)
    with pytest.raises(OSError) as failed:
        commit(ready, {"module/a.yaml": b"a\n"})
    assert failed.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert not any(elsewhere.iterdir()) and _tree(out) == {"module": str(elsewhere)}


def test_a_full_disk_leaves_nothing_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "new" / "st"
    staged = owned._Transaction.stage

    def fills(self, rel, data):
        if self.temps:
            raise OSError(errno.ENOSPC, "No space left on device")
        return staged(self, rel, data)

    monkeypatch.setattr(owned._Transaction, "stage", fills)
    with pytest.raises(OSError):
        commit(prepare(out, "--out"), {"module/a.yaml": b"a\n", "experiment/a.yaml": b"b\n"})
    assert not (tmp_path / "new").exists()  # the directories it made are gone with the temporary


@pytest.mark.parametrize("mark", [DIR_MARKER, "cell.json", "cells.parquet"])
def test_a_results_directory_and_what_is_under_a_marked_one_are_refused(tmp_path: Path, mark: str) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / mark).write_text("{}")
    with pytest.raises(Refused, match="is a results directory"):
        prepare(tmp_path / "run", "--out")
    if mark == DIR_MARKER:  # neuronexp's own marker: nothing goes under it either
        with pytest.raises(Refused, match="is a results directory"):
            prepare(tmp_path / "run" / "studies", "--out")
    else:  # a file of that name higher up may be anyone's
        prepare(tmp_path / "run" / "studies", "--out")


def test_a_record_it_did_not_write_is_refused(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(json.dumps({"files": {"x": "0" * 64}}))
    with pytest.raises(Refused, match="not a record neuronexp wrote"):
        prepare(tmp_path, "--out")
    (tmp_path / MANIFEST).unlink()
    (tmp_path / MANIFEST).symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(Refused):
        prepare(tmp_path, "--out")
