"""The readers of a results directory (neuronexp.load, read_any, the report, compare) read only its regular files,
never through a symbolic link (issue 32, X16: a planted link would show or upload any file of the user's); load reads
a directory and a cell once however often they are named, and orders cells by shape, number by number.

On one real sweep (naive × fused RMSNorm, shapes given largest first), copied and tampered per test."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neuronexp
from helpers import small_sweep, within
from neuronexp.results import DamagedResults, LinkRefused, open_regular, read_any, read_regular
from neuronexp.results.files import write_table
from neuronexp.results.outputs import read_outputs

SECRET = '{"host": "SECRET-TOKEN-1234"}\n'  # valid JSON, so only the link rule keeps it out of a report


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shapes in the order [1,16,64], [1,8,64]: the jobs, and the aggregated table, hold the larger first."""
    return small_sweep(tmp_path_factory.mktemp("readers"), "[1,16,64],[1,8,64]")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text(SECRET)
    return path


def _copy(sweep: Path, dest: Path, aggregated: bool = True) -> Path:
    shutil.copytree(sweep, dest, symlinks=True, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    if not aggregated:
        shutil.rmtree(dest / "results")
    return dest


def _link(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target.resolve())


# -- the helper every reader uses


def test_open_regular_reads_a_regular_file_and_refuses_links_fifos_and_climbing(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"data")
    assert read_regular(tmp_path / "d" / "f", tmp_path) == b"data"
    (tmp_path / "f-link").symlink_to(tmp_path / "d" / "f")
    (tmp_path / "d-link").symlink_to(tmp_path / "d")
    with pytest.raises(LinkRefused, match="f-link: a symbolic link"):
        read_regular(tmp_path / "f-link")
    with pytest.raises(LinkRefused, match="d-link: a symbolic link"):  # a directory on the way
        read_regular(tmp_path / "d-link" / "f", tmp_path)
    with pytest.raises(OSError, match="outside the results directory"):
        read_regular(tmp_path / "d" / ".." / "d" / "f", tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        within(10, lambda: read_regular(tmp_path / "fifo"))
    with open_regular(tmp_path / "d" / "f") as f:
        assert f.read(2) == b"da"


# -- load and read_any


@pytest.mark.parametrize(
    ("aggregated", "planted"),
    [
        (True, "results/cells.parquet"),
        (True, "results/ops.parquet"),
        (False, "1/cells.parquet"),
        (False, "0/samples.arrow"),
        (False, "jobs.json"),
    ],
)
def test_a_linked_table_is_refused_naming_it(sweep: Path, tmp_path: Path, aggregated: bool, planted: str) -> None:
    """The link points at the sweep's own, valid file: refused for being a link, not for what it holds."""
    copy = _copy(sweep, tmp_path / "copy", aggregated)
    _link(copy / planted, sweep / planted)
    with pytest.raises(DamagedResults, match=f"{planted}: a symbolic link; neuronexp reads no file"):
        read_any(copy)
    if aggregated:
        with pytest.raises(DamagedResults, match=f"{planted}: a symbolic link"):
            neuronexp.load(copy)


def test_a_linked_job_directory_is_refused(sweep: Path, tmp_path: Path) -> None:
    copy = _copy(sweep, tmp_path / "copy", aggregated=False)
    shutil.rmtree(copy / "1")
    (copy / "1").symlink_to((sweep / "1").resolve())
    with pytest.raises(DamagedResults, match=r"copy/1: a symbolic link"):
        read_any(copy)


def test_a_manifest_naming_a_directory_outside_the_sweep_is_refused(sweep: Path, tmp_path: Path) -> None:
    copy = _copy(sweep, tmp_path / "copy", aggregated=False)
    (copy / "jobs.json").write_text('[{"dir": "../elsewhere", "run_id": "x"}]')
    with pytest.raises(DamagedResults, match=r"jobs.json: not the list of planned cells .*'../elsewhere'"):
        read_any(copy)


def test_a_linked_output_file_is_not_read(sweep: Path, tmp_path: Path) -> None:
    copy = _copy(sweep, tmp_path / "copy", aggregated=False)
    _link(copy / "0" / "output.npz", sweep / "0" / "output.npz")
    with pytest.raises(LinkRefused):
        read_outputs(copy / "0" / "output.npz")


# -- env.json, what compare reads of each side's machine (constructed directories: the files' presence is what counts)


def _job(path: Path, env: str | None) -> Path:
    path.mkdir(parents=True)
    (path / "cells.parquet").touch()
    if env is not None:
        (path / "env.json").write_text(env)
    return path


def test_the_environment_records_of_a_run_and_of_a_sweeps_jobs_each_once(tmp_path: Path) -> None:
    import pandas as pd

    from neuronexp.results.environment import environments, job_environment

    run = _job(tmp_path / "run", '{"host": "run"}')
    sweep = tmp_path / "sweep"
    _job(sweep / "0", '{"host": "job 0"}')
    _job(sweep / "1", None)  # a cell from before env.json: nothing to read, not an error
    _job(sweep / "2", '{"host": "job 2"}')
    sources = [str(run), str(sweep), str(sweep), None, str(tmp_path / "gone")]
    records = environments(pd.DataFrame({"source_dir": sources}))
    assert [r["host"] for r in records] == ["run", "job 0", "job 2"]
    assert environments(pd.DataFrame({"run_id": ["built in memory"]})) == []
    assert job_environment(sweep / "0") == {"host": "job 0"} and job_environment(sweep / "1") is None


@pytest.mark.parametrize(
    ("planted", "says"),
    [("{not json", r"\(Expecting property name"), ("[1, 2]", r"\(a JSON object\)"), (None, r"\(.*a symbolic link")],
)
def test_a_damaged_or_linked_env_json_is_refused_naming_it(
    tmp_path: Path, secret: Path, planted: str | None, says: str
) -> None:
    import pandas as pd

    from neuronexp.results.environment import environments

    job = _job(tmp_path / "run", planted)
    if planted is None:
        (job / "env.json").symlink_to(secret)
    message = re.escape(f"{job / 'env.json'}: not the environment record neuronexp writes ") + says
    with pytest.raises(DamagedResults, match=message) as caught:
        environments(pd.DataFrame({"source_dir": [str(job)]}))
    assert "SECRET-TOKEN" not in str(caught.value)
    (job / "env.json").unlink()
    (job / "env.json").symlink_to(tmp_path / "nowhere")  # a dangling link is refused too, not taken for no record
    with pytest.raises(DamagedResults, match="a symbolic link"):
        environments(pd.DataFrame({"source_dir": [str(job)]}))


# -- the report


@pytest.mark.parametrize("name", ["env.json", "config.yaml"])
def test_the_report_refuses_a_linked_env_or_config_and_shows_nothing_of_it(
    sweep: Path, tmp_path: Path, secret: Path, name: str
) -> None:
    from neuronexp.report.model import build_report

    copy = _copy(sweep, tmp_path / "copy")
    _link(copy / "0" / name, secret)
    with pytest.raises(LinkRefused, match=f"0/{name}: a symbolic link") as caught:
        build_report(copy)
    assert "SECRET-TOKEN" not in str(caught.value)


def test_compare_refuses_a_side_with_a_linked_table_in_one_line(sweep: Path, tmp_path: Path, capsys) -> None:
    from neuronexp.cli.compare import main

    copy = _copy(sweep, tmp_path / "copy")
    _link(copy / "results" / "samples.parquet", sweep / "results" / "samples.parquet")
    assert main([str(sweep), str(copy)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("neuronexp-compare: error: ")
    assert "results/samples.parquet: a symbolic link" in err


# -- load: each directory and each cell once; cells by shape


def test_load_reads_a_directory_named_twice_once(sweep: Path, monkeypatch) -> None:
    once = neuronexp.load(sweep)
    monkeypatch.chdir(sweep.parent)
    for twice in [(sweep, sweep), (sweep, f"./{sweep.name}"), (sweep, f"{sweep.parent}/swe*")]:
        again = neuronexp.load(*twice)
        assert [len(t) for t in again] == [len(t) for t in once], twice
        assert set(again.cells["source_dir"]) == {str(sweep)}


def test_load_keeps_a_cell_found_in_a_job_directory_and_its_sweep_once(sweep: Path, tmp_path: Path) -> None:
    once = neuronexp.load(sweep)
    both = neuronexp.load(sweep, sweep / "0")  # job 0's cell is also in the sweep's results/
    assert [len(t) for t in both] == [len(t) for t in once]
    assert not both.cells.duplicated(["run_id", "invocation_id"]).any()
    assert set(both.ops["source_dir"]) == {str(sweep)} and set(both.samples["source_dir"]) == {str(sweep)}
    # Another measurement of the same configuration (another invocation) is another row.
    other = _copy(sweep, tmp_path / "other")
    table = pq.read_table(other / "results" / "cells.parquet")
    cells = table.to_pandas().assign(invocation_id="another")
    write_table(
        other / "results" / "cells.parquet", pa.Table.from_pandas(cells, schema=table.schema, preserve_index=False)
    )
    assert len(neuronexp.load(sweep, other).cells) == 2 * len(once.cells)


def test_load_orders_cells_by_shape_number_by_number(sweep: Path) -> None:
    cells = neuronexp.load(sweep).cells
    assert list(dict.fromkeys(cells["input_shape"])) == ["[1,8,64]", "[1,16,64]"]  # as text, 16 sorts first
