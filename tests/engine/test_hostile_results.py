"""Results that must never be stale or wrong (issue 26): a variant that computes nothing fails its output check, a
rerun applies this invocation's tolerance to reused cells, and a damaged or planted job file makes its cell run
again instead of breaking or hanging every later sweep."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import FAST, run_cli
from helpers.hostile import write_hostile_layers, write_module_options

QUICK = [a for a in FAST if not a.startswith("input.shape")] + [
    "backend=cpu",
    "roofline.probe=off",
    "input.dtype=float32",
    "input.shape=[1,8,64]",
]


def _sweep(root: Path, modules: str, *extra: str, timeout: float = 300):
    conf = write_module_options(
        root,
        double="hostile.Double",
        nearly="hostile.NearlyDouble",
        returns_none="hostile.ReturnsNone",
        returns_int="hostile.ReturnsInt",
        all_nan="hostile.AllNan",
    )
    write_hostile_layers(root)
    return run_cli(
        [
            "--config-dir",
            str(conf),
            "-m",
            f"module={modules}",
            "baseline=double",
            *QUICK,
            *extra,
            f"hydra.sweep.dir={root / 'sweep'}",
        ],
        cwd=root,
        timeout=timeout,
    )


def _cells(root: Path) -> dict[str, dict]:
    return {r["module"]: r for r in pq.read_table(root / "sweep" / "results" / "cells.parquet").to_pylist()}


@pytest.mark.slow  # 10 s on the 2-core VM
def test_a_variant_returning_none_or_an_int_fails_the_output_check(tmp_path: Path) -> None:
    res = _sweep(tmp_path, "double,returns_none,returns_int")
    assert res.returncode == 0, res.stderr[-2000:]
    cells = _cells(tmp_path)
    for name in ("returns_none", "returns_int"):
        assert cells[name]["output_check"] == "FAIL", cells[name]["output_note"]
        assert cells[name]["output_match"] is False
        assert "returns no tensor, the baseline 1: not the same kind of output" in cells[name]["output_note"]
    assert cells["double"]["output_check"] == "baseline"


@pytest.mark.slow  # 15 s on the 2-core VM: three sweeps, the last two reusing every cell
def test_a_rerun_applies_this_invocations_tolerance_to_reused_cells(tmp_path: Path) -> None:
    assert _sweep(tmp_path, "double,nearly").returncode == 0
    assert _cells(tmp_path)["nearly"]["output_check"] == "FAIL"  # 1e-4 relative, beyond float32's 1e-5
    loose = _sweep(tmp_path, "double,nearly", "correctness.rtol=1e-3")
    assert loose.returncode == 0, loose.stderr[-2000:]
    cells = _cells(tmp_path)
    assert cells["nearly"]["status"] == "cached" and cells["nearly"]["output_check"] == "pass"
    assert cells["nearly"]["output_rtol"] == pytest.approx(1e-3)
    assert _sweep(tmp_path, "double,nearly").returncode == 0  # the tolerance tightened again: applied again
    assert _cells(tmp_path)["nearly"]["output_check"] == "FAIL"


def _job_of(root: Path, module: str) -> Path:
    return next(
        p.parent
        for p in (root / "sweep").glob("*/cells.parquet")
        if pq.read_table(p, columns=["module"]).column(0)[0].as_py() == module
    )


@pytest.mark.slow  # 12 s on the 2-core VM
def test_a_truncated_output_file_makes_its_cell_run_again(tmp_path: Path) -> None:
    assert _sweep(tmp_path, "double,nearly").returncode == 0
    damaged = _job_of(tmp_path, "nearly") / "output.npz"
    damaged.write_bytes(damaged.read_bytes()[:40])
    again = _sweep(tmp_path, "double,nearly")
    assert again.returncode == 0, again.stderr[-2000:]
    cells = _cells(tmp_path)
    assert cells["nearly"]["status"] == "ok" and cells["double"]["status"] == "cached"
    assert cells["nearly"]["output_check"] == "FAIL"  # checked from the new output, not left "n/a" by the damaged one
    # Each row says which invocation measured it: the reused cell the first sweep, the rerun one this sweep.
    assert cells["nearly"]["invocation_id"] != cells["double"]["invocation_id"]
    for table in ("ops", "samples"):
        rows = pq.read_table(tmp_path / "sweep" / "results" / f"{table}.parquet").to_pandas()
        by_run = {c["run_id"]: c["invocation_id"] for c in cells.values()}
        assert (rows["invocation_id"] == rows["run_id"].map(by_run)).all()


@pytest.mark.slow  # 12 s on the 2-core VM
def test_a_fifo_in_place_of_a_table_never_hangs_a_resumed_sweep(tmp_path: Path) -> None:
    assert _sweep(tmp_path, "double,nearly").returncode == 0
    job = _job_of(tmp_path, "nearly")
    (job / "ops.arrow").unlink()
    os.mkfifo(job / "ops.arrow")
    again = _sweep(tmp_path, "double,nearly", timeout=120)  # blocking on the FIFO would time out here
    assert again.returncode == 0, again.stderr[-2000:]
    assert _cells(tmp_path)["nearly"]["status"] in ("ok", "cached")


def test_a_long_tmpdir_puts_the_fork_servers_socket_where_its_path_fits(tmp_path: Path, monkeypatch) -> None:
    import tempfile

    from neuronexp.cellprocess import forkserver

    long = tmp_path / ("t" * 60) / ("u" * 60)
    long.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    where = forkserver._socket_dir()
    try:
        assert len(str(where / "socket")) <= 107 and not str(where).startswith(str(long))
        assert (where.stat().st_mode & 0o777) == 0o700
    finally:
        where.rmdir()


@pytest.mark.slow  # 10 s on the 2-core VM
def test_a_sweep_under_a_long_tmpdir_runs(tmp_path: Path) -> None:
    long = tmp_path / ("t" * 60) / ("u" * 60)
    long.mkdir(parents=True)
    res = run_cli(
        ["-m", "module=rmsnorm_naive,rmsnorm_fused", *QUICK, f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=tmp_path,
        env={"TMPDIR": str(long)},
    )
    assert res.returncode == 0, res.stderr[-2000:]


def _code_sweep(root: Path, *extra: str):
    conf = write_module_options(root, double="layer_a.Double", nearly="layer_b.NearlyDouble")
    return run_cli(
        [
            "--config-dir",
            str(conf),
            "-m",
            "module=double,nearly",
            "baseline=double",
            *QUICK,
            *extra,
            f"hydra.sweep.dir={root / 'sweep'}",
        ],
        cwd=root,
    )


@pytest.mark.slow  # 25 s on the 2-core VM: four sweeps of two cells
def test_a_changed_layer_or_a_file_it_imports_is_a_new_cell_and_rerun_all_reruns_every_cell(tmp_path: Path) -> None:
    import time

    (tmp_path / "layer_a.py").write_text(
        "import torch\n\nclass Double(torch.nn.Module):\n"
        "    def __init__(self, **o):\n        super().__init__()\n\n"
        "    def forward(self, x):\n        return x * 2\n"
    )
    (tmp_path / "mylib.py").write_text("FACTOR = 2.0002\n")
    (tmp_path / "layer_b.py").write_text(
        "import torch\nfrom mylib import FACTOR\n\nclass NearlyDouble(torch.nn.Module):\n"
        "    def __init__(self, **o):\n        super().__init__()\n\n"
        "    def forward(self, x):\n        return x * FACTOR\n"
    )
    assert _code_sweep(tmp_path).returncode == 0
    first = _cells(tmp_path)
    assert _code_sweep(tmp_path).returncode == 0
    assert {c["status"] for c in _cells(tmp_path).values()} == {"cached"}  # nothing changed: reused
    (tmp_path / "mylib.py").write_text("FACTOR = 2.0\n")  # the fix, in a file the layer imports
    later = time.time_ns() + 10_000_000
    os.utime(tmp_path / "mylib.py", ns=(later, later))
    res = _code_sweep(tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    cells = _cells(tmp_path)
    assert cells["double"]["status"] == "cached" and cells["double"]["run_id"] == first["double"]["run_id"]
    assert cells["nearly"]["status"] == "ok" and cells["nearly"]["run_id"] != first["nearly"]["run_id"]
    assert cells["nearly"]["output_check"] == "pass"  # the new code's output, not the old one's FAIL
    assert first["nearly"]["output_check"] == "FAIL"
    forced = _code_sweep(tmp_path, "sweep.rerun=all")
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert {c["status"] for c in _cells(tmp_path).values()} == {"ok"}
