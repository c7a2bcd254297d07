"""neuronexp-compare's flags as a user types them, each shown to change the answer, on a real sweep whose samples
are replaced by constructed ones with a known answer: every cell of B exactly ×1.06 of A's.

With 20 samples spread evenly over 90–110 µs, ×1.06 gives a Mann–Whitney p of about 0.011 in every cell (the
same p in all four, so the Benjamini–Hochberg q equals it): slower at the default alpha 0.05 and threshold 2%,
no change at --alpha 0.005 or --threshold 0.1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import run_cli
from neuronexp.analysis.stats import compare_samples
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


def test_the_constructed_answer_is_what_the_statistics_say() -> None:
    base = np.linspace(90.0, 110.0, 20)
    stats = compare_samples(base, base * FACTOR)
    assert stats.ratio == pytest.approx(FACTOR) and 0.005 < stats.p_value < 0.05


def test_alpha_decides_what_is_significant(pair, tmp_path: Path) -> None:
    a, b = pair
    default = _compare(a, b, tmp_path)
    assert default.returncode == 0 and "4 slower" in default.stdout and "BH q < 0.05" in default.stdout, default.stdout
    strict = _compare(a, b, tmp_path, "--alpha", "0.005", "--fail-on-regression")
    assert strict.returncode == 0 and "4 no change" in strict.stdout and "BH q < 0.005" in strict.stdout, strict.stdout


def test_threshold_decides_what_is_large_enough(pair, tmp_path: Path) -> None:
    a, b = pair
    wide = _compare(a, b, tmp_path, "--threshold", "0.1", "--fail-on-regression")
    assert wide.returncode == 0 and "4 no change" in wide.stdout and "threshold 10.0%" in wide.stdout, wide.stdout
    narrow = _compare(a, b, tmp_path, "--threshold", "0.05", "--fail-on-regression")
    assert narrow.returncode == 1 and "4 slower" in narrow.stdout, narrow.stdout


def test_seed_picks_the_bootstrap_and_the_same_seed_repeats_it(pair, tmp_path: Path) -> None:
    a, b = pair

    def intervals(seed: str) -> pd.DataFrame:
        out = tmp_path / f"seed{seed}-{len(list(tmp_path.iterdir()))}.csv"
        assert _compare(a, b, tmp_path, "--seed", seed, "--csv", str(out)).returncode == 0
        return pd.read_csv(out).sort_values("cell")[["cell", "ci_low", "ci_high"]].reset_index(drop=True)

    zero, again, one = intervals("0"), intervals("0"), intervals("1")
    pd.testing.assert_frame_equal(zero, again)
    assert (zero["ci_low"] != one["ci_low"]).all() and (zero["ci_high"] != one["ci_high"]).all()


def test_ignore_joins_cells_whose_label_differs_on_purpose(pair, tmp_path: Path) -> None:
    a, _ = pair
    other = _copy(a, tmp_path / "other", FACTOR, experiment="another")
    refused = _compare(a, other, tmp_path)
    assert refused.returncode == 2 and "--ignore experiment" in refused.stderr, refused.stderr
    for flags in (["--ignore", "experiment"], ["--ignore", "experiment,nothing_else"]):
        joined = _compare(a, other, tmp_path, *flags)
        assert joined.returncode == 0 and "4 slower" in joined.stdout, joined.stdout + joined.stderr


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
