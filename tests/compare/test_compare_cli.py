"""neuronexp-compare as a user types it on a real sweep whose samples are replaced by constructed ones: the note
for a changed torch version.

(Tests that --alpha, --threshold, --seed and --ignore each change the answer were written against the single-pass
statistics and are to be redone for the rounds / hierarchical bootstrap that landed meanwhile: see issue 18.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers import run_cli
from neuronexp.results import load, to_arrow
from neuronexp.results.files import write_table

FACTOR = 1.06


def _copy(sweep: Path, dest: Path, factor: float = 1.0, **cell_labels: str) -> Path:
    """The sweep with each cell's samples evenly spread over 90–110 µs × `factor`, and its cells relabelled."""
    shutil.copytree(sweep, dest, ignore=shutil.ignore_patterns(".neuronexp.lock"))
    results = load(dest)
    samples = results.samples.copy()
    for _, rows in samples.groupby("run_id"):
        samples.loc[rows.index, "latency_us"] = np.linspace(90.0, 110.0, len(rows)) * factor
    write_table(dest / "results" / "samples.parquet", to_arrow("samples", samples))
    if cell_labels:
        write_table(dest / "results" / "cells.parquet", to_arrow("cells", results.cells.assign(**cell_labels)))
    return dest


@pytest.fixture(scope="module")
def pair(sweep: Path, tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare_cli")
    a, b = _copy(sweep, root / "a"), _copy(sweep, root / "b", FACTOR)
    n = set(load(a).samples.groupby("run_id").size())
    assert n == {20}, n  # the known answer below is for 20 samples a cell
    return a, b


def _compare(a: Path, b: Path, cwd: Path, *flags: str):
    return run_cli([str(a), str(b), *flags], cwd=cwd, script="neuronexp-compare")


def test_a_changed_torch_version_is_noted(pair, tmp_path: Path) -> None:
    a, b = pair
    before = str(load(a).cells["torch_version"].iloc[0])
    newer = _copy(b, tmp_path / "newer", 1.0, torch_version="9.9.9")
    res = _compare(a, newer, tmp_path, "--markdown", str(tmp_path / "cmp.md"))
    note = f"torch_version differs: {before} vs 9.9.9"
    assert res.returncode == 0 and note in res.stdout, res.stdout
    assert note in (tmp_path / "cmp.md").read_text()
    # And not when it is the same.
    assert "torch_version differs" not in _compare(a, b, tmp_path).stdout
