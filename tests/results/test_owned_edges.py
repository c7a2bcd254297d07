"""results.owned at its edges (issue 44's survivors of the mutation audit, and those scripts/mutate.py found): a file
neuronexp cannot read is not its own, a recorded file edited or removed while it writes, the record keeping every
earlier file, names that are not plain paths, a record of another tool, nested directories, the staged temporary
never opened through a link, and an undo that meets what someone else changed."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from neuronexp.results import owned
from neuronexp.results.owned import MANIFEST, Refused, check_free, commit, prepare


def test_a_file_neuronexp_cannot_read_is_not_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commit(prepare(tmp_path, "--out"), {"x.yaml": b"one\n"})
    again = prepare(tmp_path, "--out")

    def unreadable(path: Path) -> bytes:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(owned, "read_regular", unreadable)  # as root, no mode makes a file unreadable
    with pytest.raises(Refused) as refused:
        check_free(again, ["x.yaml"])
    assert str(refused.value) == (
        "--out: x.yaml holds a file neuronexp did not write (or one changed since it did); neuronexp never "
        "overwrites a file it did not write: move it away or choose another directory"
    )


def test_a_recorded_file_edited_while_neuronexp_writes_is_left_as_edited(tmp_path: Path) -> None:
    commit(prepare(tmp_path, "--out"), {"x.yaml": b"one\n"})
    again = prepare(tmp_path, "--out")
    check_free(again, ["x.yaml"])
    (tmp_path / "x.yaml").write_text("yours now\n")  # between the check and the write
    with pytest.raises(Refused) as refused:
        commit(again, {"x.yaml": b"two\n", "y.yaml": b"new\n"})
    assert str(refused.value) == (
        "--out: x.yaml was changed while neuronexp wrote; it is yours now: move it away or choose another directory"
    )
    assert (tmp_path / "x.yaml").read_text() == "yours now\n" and not (tmp_path / "y.yaml").exists()


def test_a_recorded_file_replaced_by_a_dangling_link_meanwhile_is_refused_as_changed(tmp_path: Path) -> None:
    commit(prepare(tmp_path, "--out"), {"x.yaml": b"one\n"})
    again = prepare(tmp_path, "--out")
    (tmp_path / "x.yaml").unlink()
    (tmp_path / "x.yaml").symlink_to(tmp_path / "nowhere")
    with pytest.raises(Refused, match="x.yaml was changed while neuronexp wrote"):
        commit(again, {"x.yaml": b"two\n"})
    assert os.readlink(tmp_path / "x.yaml") == str(tmp_path / "nowhere") and not (tmp_path / "nowhere").exists()


def test_a_recorded_file_removed_meanwhile_is_written_anew(tmp_path: Path) -> None:
    commit(prepare(tmp_path, "--out"), {"x.yaml": b"one\n"})
    again = prepare(tmp_path, "--out")
    (tmp_path / "x.yaml").unlink()
    commit(again, {"x.yaml": b"two\n"})
    assert (tmp_path / "x.yaml").read_bytes() == b"two\n"


def test_the_record_keeps_every_earlier_file_and_is_written_as_documented(tmp_path: Path) -> None:
    out = prepare(tmp_path, "--out")
    commit(out, {"b/x.yaml": b"x\n"})
    commit(out, {"a.yaml": b"a\n"})  # the same OwnedDir: it knows what the first commit wrote
    record = {"a.yaml": owned.sha256(b"a\n"), "b/x.yaml": owned.sha256(b"x\n")}
    expected = json.dumps({"written_by": "neuronexp", "files": record}, indent=2, sort_keys=True) + "\n"
    assert (tmp_path / MANIFEST).read_text() == expected and out.recorded == record
    later = prepare(tmp_path, "--out")
    check_free(later, ["a.yaml", "b/x.yaml"])  # both neuronexp's, unchanged: a later run may replace them
    commit(later, {"a.yaml": b"A\n", "b/x.yaml": b"X\n"})
    assert (tmp_path / "b" / "x.yaml").read_bytes() == b"X\n"


@pytest.mark.parametrize("rel", ["", "a//b", "./a", "a/.", "../a", "a/..", "a\0b", "a\nb", "a/b\n"])
def test_a_name_that_is_not_a_plain_relative_path_is_a_bug_never_a_path(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ValueError, match=r"^not a plain relative path: "):
        check_free(prepare(tmp_path, "--out"), [rel])
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("record", ["{not json", "[1, 2]", '{"written_by": "neuronexp"}', '"text"'])
def test_a_record_that_is_not_neuronexps_is_refused_in_one_line(tmp_path: Path, record: str) -> None:
    (tmp_path / MANIFEST).write_text(record)
    with pytest.raises(Refused) as refused:
        prepare(tmp_path, "--out")
    assert str(refused.value) == (
        f"--out: {tmp_path / MANIFEST} is not a record neuronexp wrote; choose another directory"
    )


def test_what_stands_in_a_names_way_is_named(tmp_path: Path) -> None:
    (tmp_path / "module").write_text("a file where a directory goes\n")
    (tmp_path / "dir.yaml").mkdir()
    out = prepare(tmp_path, "--out")
    with pytest.raises(Refused) as refused:
        check_free(out, ["module/x.yaml"])
    assert str(refused.value).startswith("--out: module/x.yaml cannot be written (module is not a directory); ")
    with pytest.raises(Refused) as refused:
        check_free(out, ["dir.yaml"])
    assert str(refused.value).startswith("--out: dir.yaml is not a regular file; neuronexp never overwrites")


def test_files_two_directories_deep_are_written_and_undone(tmp_path: Path) -> None:
    out = prepare(tmp_path / "o", "--out")
    commit(out, {"a/b/c.yaml": b"c\n", "a/d.yaml": b"d\n"})
    assert (tmp_path / "o" / "a" / "b" / "c.yaml").read_bytes() == b"c\n"
    assert (tmp_path / "o" / "a" / "d.yaml").read_bytes() == b"d\n"
    assert set(json.loads((tmp_path / "o" / MANIFEST).read_text())["files"]) == {"a/b/c.yaml", "a/d.yaml"}


def test_files_get_the_modes_the_umask_allows_never_execute_bits(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        commit(prepare(tmp_path, "--out"), {"x.yaml": b"x\n"})
    finally:
        os.umask(old)
    assert (tmp_path / "x.yaml").stat().st_mode & 0o777 == 0o644


def test_the_temporary_is_never_opened_through_a_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(owned.os, "urandom", lambda n: b"\0" * n)  # the temporary's name, known in advance
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "o"
    out.mkdir()
    (out / f".x.yaml.tmp-{os.getpid()}-00000000").symlink_to(victim)
    with pytest.raises(FileExistsError):
        commit(prepare(out, "--out"), {"x.yaml": b"x\n"})
    assert victim.read_text() == "keep\n" and not (out / "x.yaml").exists()


def test_an_undo_that_meets_what_someone_else_changed_still_raises_the_first_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fails while a file is put in place; meanwhile its temporary vanished and someone put a file into the
    directory the commit made: the undo leaves both be and the disk's error is what the caller gets."""
    out = tmp_path / "o"

    def full(src, dst, *, src_dir_fd, dst_dir_fd, follow_symlinks):
        os.unlink(src, dir_fd=src_dir_fd)
        (out / "module" / "theirs.txt").write_text("theirs\n")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(owned.os, "link", full)
    with pytest.raises(OSError) as raised:
        commit(prepare(out, "--out"), {"module/x.yaml": b"x\n"})
    assert raised.value.errno == errno.ENOSPC
    assert sorted(p.name for p in (out / "module").iterdir()) == ["theirs.txt"]


def test_a_record_whose_hashes_are_not_text_is_not_neuronexps(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text('{"written_by": "neuronexp", "files": {"x.yaml": 1}}')
    with pytest.raises(Refused, match="is not a record neuronexp wrote"):
        prepare(tmp_path, "--out")


def test_a_directory_it_cannot_write_is_refused_before_any_work(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(owned.os, "access", lambda path, mode: not mode & os.W_OK)  # as root, every mode can write
    with pytest.raises(Refused) as refused:
        prepare(tmp_path / "new", "--out")
    assert str(refused.value) == f"--out: {tmp_path} is not writable; choose a directory you can write"


def test_the_refusals_say_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "cell.json").write_text("{}")
    with pytest.raises(Refused) as refused:
        prepare(tmp_path / "run", "--out")
    assert str(refused.value) == (
        f"--out: {tmp_path / 'run'} is a results directory (it holds cell.json); generated files do not go among "
        "results: choose another directory"
    )
    out = prepare(tmp_path / "o", "--out")
    check_free(out, ["x.yaml"])
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "x.yaml").write_text("appeared\n")
    with pytest.raises(Refused) as refused:
        commit(out, {"x.yaml": b"x\n"})
    assert str(refused.value) == (
        "--out: x.yaml appeared while neuronexp wrote; neuronexp never overwrites a file it did not write: "
        "move it away or choose another directory"
    )
