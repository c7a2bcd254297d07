"""The output check from saved files: pass, a deliberately wrong output flagged, and what cannot be compared."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neuronexp.analysis.baseline import parse_baseline
from neuronexp.analysis.correctness import DEFAULT_RTOL, add_output_checks, compare_outputs, default_rtol, what_keys
from neuronexp.results.outputs import (
    FLOAT32_OUTPUT_FILE,
    OUTPUT_FILE,
    SAMPLE_ELEMENTS,
    OutputLeaf,
    read_outputs,
    sample_index,
    write_outputs,
)


def leaf(values: np.ndarray, index: np.ndarray | None = None, numel: int | None = None) -> OutputLeaf:
    finite = values[np.isfinite(values)]
    stats = {
        "numel": float(numel or values.size),
        "rms": float(np.sqrt(np.mean(finite**2))) if finite.size else np.nan,
        "abs_max": float(np.abs(finite).max()) if finite.size else np.nan,
        "nan": float(np.isnan(values).sum()),
        "inf": float(np.isinf(values).sum()),
    }
    return OutputLeaf(values.shape, values.astype(np.float32), np.empty(0, np.int64) if index is None else index, stats)


@pytest.fixture
def reference() -> np.ndarray:
    return np.random.default_rng(0).standard_normal(4096).astype(np.float32)


def test_equal_outputs_pass_with_zero_error(reference: np.ndarray) -> None:
    check = compare_outputs([leaf(reference)], [leaf(reference.copy())], rtol=1e-5, atol=None)
    assert check["output_check"] == "pass" and check["output_match"] is True
    assert check["max_abs_err"] == 0.0 and check["max_rel_err"] == 0.0 and "4,096 of 4,096" in check["output_note"]


def test_a_wrong_variant_is_flagged(reference: np.ndarray) -> None:
    check = compare_outputs([leaf(reference * 1.5)], [leaf(reference)], rtol=default_rtol("bfloat16"), atol=None)
    assert check["output_check"] == "FAIL" and check["output_match"] is False
    assert check["max_rel_err"] == pytest.approx(0.5, rel=1e-5)
    assert check["max_abs_err"] == pytest.approx(0.5 * np.abs(reference).max(), rel=1e-5)


def test_rounding_within_the_dtype_passes(reference: np.ndarray) -> None:
    # Two bfloat16 roundings apart everywhere: within four units of the last place.
    rounded = reference * (1 + 2 * 2.0**-8)
    assert compare_outputs([leaf(rounded)], [leaf(reference)], default_rtol("bfloat16"), None)["output_match"] is True
    assert compare_outputs([leaf(rounded)], [leaf(reference)], default_rtol("float32"), None)["output_match"] is False
    assert DEFAULT_RTOL["float16"] < DEFAULT_RTOL["bfloat16"]


def test_nan_inf_shape_and_count_mismatches(reference: np.ndarray) -> None:
    with_nan = reference.copy()
    with_nan[7] = np.nan
    one_side = compare_outputs([leaf(with_nan)], [leaf(reference)], 1e-2, None)
    assert one_side["output_match"] is False and one_side["output_note"].startswith(
        "NaN in 1 of 4,096 elements (variant)"
    )
    baseline_only = compare_outputs([leaf(reference)], [leaf(with_nan)], 1e-2, None)["output_note"]
    assert baseline_only.startswith("NaN in 1 of 4,096 elements (baseline): ")
    # NaN where the baseline has it too: the two agree, but a NaN is never a result, so never a pass (issue 43).
    both = compare_outputs([leaf(with_nan)], [leaf(with_nan.copy())], 1e-2, None)
    more = with_nan.copy()
    more[9] = np.nan
    unequal = compare_outputs([leaf(more)], [leaf(with_nan)], 1e-2, None)["output_note"]
    assert unequal.startswith("NaN in 2 of 4,096 elements (variant) and 1 (baseline): ")
    assert both["output_check"] == "FAIL" and both["output_note"].startswith("NaN in 1 of 4,096 elements (both): ")
    with_inf = reference.copy()
    with_inf[3] = np.inf
    same_inf = compare_outputs([leaf(with_inf)], [leaf(with_inf.copy())], 1e-2, None)  # an inf where both have it
    assert same_inf["output_match"] is True and same_inf["output_note"].startswith("inf in 1 of 4,096 elements (both)")
    assert compare_outputs([leaf(reference)], [leaf(reference)], 1e-2, None)["output_note"].startswith("max |Δ| 0")
    shape = compare_outputs([leaf(reference.reshape(64, 64))], [leaf(reference)], 1e-2, None)
    assert shape["output_check"] == "FAIL" and "shape [64, 64]" in shape["output_note"]
    two = compare_outputs([leaf(reference), leaf(reference)], [leaf(reference)], 1e-2, None)
    assert two["output_check"] == "FAIL" and "2 tensor(s)" in two["output_note"]
    other = compare_outputs([leaf(reference[:10], np.arange(10))], [leaf(reference[:10], np.arange(1, 11))], 1e-2, None)
    assert other["output_check"] == "n/a" and other["output_match"] is None


def test_samples_are_bounded_and_the_same_for_the_same_size(tmp_path: Path) -> None:
    assert sample_index(SAMPLE_ELEMENTS).size == 0  # small enough: the whole tensor is kept
    big = sample_index(10 * SAMPLE_ELEMENTS)
    assert big.size == SAMPLE_ELEMENTS and np.all(np.diff(big) > 0) and big[-1] < 10 * SAMPLE_ELEMENTS
    assert np.array_equal(big, sample_index(10 * SAMPLE_ELEMENTS))
    values = np.arange(10, dtype=np.float32)
    write_outputs(tmp_path / OUTPUT_FILE, [leaf(values)])
    (back,) = read_outputs(tmp_path / OUTPUT_FILE)
    assert back.shape == (10,) and np.array_equal(back.values, values) and back.index.size == 0


def _cells(tmp_path: Path, outputs: dict[str, np.ndarray | None], baseline: str = "a") -> tuple[pd.DataFrame, dict]:
    rows, dirs = [], {}
    for run_id, values in outputs.items():
        job = tmp_path / run_id
        job.mkdir()
        if values is not None:
            write_outputs(job / OUTPUT_FILE, [leaf(values)])
        dirs[run_id] = job
        rows.append(
            {
                "run_id": run_id,
                "module": f"m_{run_id}",
                "compiled": False,
                "dtype": "float32",
                "status": "ok",
                "baseline_run_id": baseline,
                "output_tensors": 1 if values is not None else None,
                "output_rtol": None,
                "output_atol": None,
                "warnings": None,
                "output_check": "no baseline" if values is not None else "off",
            }
        )
    return pd.DataFrame(rows), dirs


def test_checks_from_files_with_a_warning_in_the_failing_row(tmp_path: Path, reference: np.ndarray) -> None:
    cells, dirs = _cells(tmp_path, {"a": reference, "b": reference.copy(), "c": reference * 1.5, "d": None})
    checked = add_output_checks(cells, dirs).set_index("run_id")
    assert list(checked["output_check"]) == ["baseline", "pass", "FAIL", "off"]
    assert checked.loc["c", "warnings"].startswith("output differs from the baseline's (m_a) beyond tolerance")
    assert checked.loc["b", "warnings"] is None and checked.loc["b", "max_abs_err"] == 0.0
    again = add_output_checks(checked.reset_index(), dirs).set_index("run_id")  # a report run twice: one warning
    assert again.loc["c", "warnings"].count("output differs") == 1
    alone = add_output_checks(cells.assign(baseline_run_id=None), dirs)
    assert set(alone["output_check"]) == {"no baseline", "off"}  # nothing to compare with: said so, not "pass"


def test_a_missing_baseline_output_is_not_a_pass(tmp_path: Path, reference: np.ndarray) -> None:
    cells, dirs = _cells(tmp_path, {"a": reference, "b": reference})
    (dirs["a"] / OUTPUT_FILE).unlink()
    checked = add_output_checks(cells, dirs).set_index("run_id")
    assert checked.loc["b", "output_check"] == "n/a" and checked.loc["b", "output_match"] is None


def test_a_rule_that_changes_what_is_computed_is_not_checked(tmp_path: Path, reference: np.ndarray) -> None:
    cells, dirs = _cells(tmp_path, {"a": reference, "b": reference * 3})
    checked = add_output_checks(cells, dirs, parse_baseline({"module.intermediate_size": 32})).set_index("run_id")
    assert checked.loc["b", "output_check"] == "n/a" and "module.intermediate_size" in checked.loc["b", "output_note"]
    assert (
        what_keys(parse_baseline({"module": "x", "compile.enabled": False, "input.dtype": "float32", "backend": "cpu"}))
        == []
    )
    assert what_keys(parse_baseline("input.seed=1,module=a")) == ["input.seed"] and what_keys(
        parse_baseline("dims.seq=64")
    ) == ["dims.seq"]


def test_a_bfloat16_cell_against_a_float32_baseline_gets_the_looser_tolerance(
    tmp_path: Path, reference: np.ndarray
) -> None:
    cells, dirs = _cells(tmp_path, {"a": reference, "b": reference * (1 + 2.0**-7)})
    cells.loc[cells["run_id"] == "b", "dtype"] = "bfloat16"
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "pass"
    cells["dtype"] = ["bfloat16", "float32"]  # a float32 cell against a bfloat16 reference: the reference's precision
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "pass"


def test_the_cells_own_rtol_and_atol_decide(tmp_path: Path, reference: np.ndarray) -> None:
    """correctness.rtol/atol land in the row (output_rtol/output_atol) and the check uses them, not the defaults."""
    shift = 0.01 * float(np.abs(reference).max())  # every element off by the same amount: atol decides
    cells, dirs = _cells(tmp_path, {"a": reference, "b": reference + shift})
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "FAIL"
    cells["output_rtol"], cells["output_atol"] = 0.0, 1.01 * shift
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "pass"
    cells["output_atol"] = 0.99 * shift
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "FAIL"
    # A relative tolerance alone: elements near zero fail it (the normal draw has some below 2 · shift).
    assert np.any(np.abs(reference) < 2 * shift)
    cells["output_rtol"], cells["output_atol"] = 0.5, 0.0
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "FAIL"


def test_a_variant_no_less_accurate_than_its_baseline_passes_against_the_float32_evaluation(
    tmp_path: Path, reference: np.ndarray
) -> None:
    """The elementwise rule fails b (it and a differ by up to 0.07), but b is closer than a to a's float32
    evaluation: pass, with both errors in the note. c is off by half: still FAIL. A tolerance the user set
    is applied as given."""
    rng = np.random.default_rng(1)
    a = reference + rng.choice([-0.05, 0.05], reference.size).astype(np.float32)  # the baseline, less accurate
    b = reference + rng.choice([-0.02, 0.02], reference.size).astype(np.float32)
    cells, dirs = _cells(tmp_path, {"a": a, "b": b, "c": reference * 1.5})
    cells["dtype"] = "bfloat16"
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "FAIL"  # no evaluation yet
    write_outputs(dirs["a"] / FLOAT32_OUTPUT_FILE, [leaf(reference)])
    checked = add_output_checks(cells, dirs).set_index("run_id")
    assert checked.loc["b", "output_check"] == "pass" and checked.loc["b", "output_match"]
    assert checked.loc["b", "max_abs_err"] == pytest.approx(0.07, rel=1e-3)  # still the difference from a
    assert "max |Δ| 0.02, the baseline's own 0.05 (up to 2× allowed)" in checked.loc["b", "output_note"]
    assert checked.loc["b", "warnings"] is None
    assert checked.loc["c", "output_check"] == "FAIL" and "float32" not in checked.loc["c", "output_note"]
    cells["output_rtol"] = default_rtol("bfloat16")  # the same tolerance, set by the user: elementwise only
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "FAIL"
    # Twice the baseline's error is the limit: a variant off by 0.11 against a baseline off by 0.05 fails.
    (tmp_path / "far").mkdir()
    cells, dirs = _cells(
        tmp_path / "far", {"a": a, "d": reference + rng.choice([-0.11, 0.11], reference.size).astype(np.float32)}
    )
    cells["dtype"] = "bfloat16"
    write_outputs(dirs["a"] / FLOAT32_OUTPUT_FILE, [leaf(reference)])
    assert add_output_checks(cells, dirs).set_index("run_id").loc["d", "output_check"] == "FAIL"


def test_an_all_nan_output_has_an_unbounded_relative_error_not_zero(reference: np.ndarray) -> None:
    check = compare_outputs([leaf(np.full_like(reference, np.nan))], [leaf(reference)], 1e-2, None)
    assert check["output_check"] == "FAIL" and check["max_rel_err"] == np.inf and check["max_abs_err"] == np.inf


def test_large_elements_need_the_relative_term() -> None:
    """One element far above the output's RMS: off by rtol/2 of itself, it is beyond atol (rtol × RMS) and within
    tolerance only through rtol·|baseline|."""
    rtol = default_rtol("bfloat16")
    ref = np.full(4096, 1e-3, dtype=np.float32)
    ref[7] = 1000.0
    variant = ref.copy()
    variant[7] = 1000.0 * (1 + rtol / 2)
    atol = rtol * float(np.sqrt(np.mean(ref.astype(np.float64) ** 2)))
    assert abs(float(variant[7]) - 1000.0) > 10 * atol  # atol alone cannot pass it
    assert compare_outputs([leaf(variant)], [leaf(ref)], rtol, None)["output_check"] == "pass"
    assert compare_outputs([leaf(variant)], [leaf(ref)], rtol, 0.0)["output_check"] == "pass"  # rtol alone
    variant[7] = 1000.0 * (1 + 2 * rtol)
    assert compare_outputs([leaf(variant)], [leaf(ref)], rtol, None)["output_check"] == "FAIL"


def test_a_nan_in_the_baseline_is_said_in_its_row_and_fails_every_cell_against_it(
    tmp_path: Path, reference: np.ndarray
) -> None:
    with_nan = reference.copy()
    with_nan[:5] = np.nan
    cells, dirs = _cells(tmp_path, {"a": with_nan, "b": with_nan.copy(), "c": reference})
    cells["output_nonfinite"] = [5, 5, 0]
    checked = add_output_checks(cells, dirs).set_index("run_id")
    assert checked.loc["a", "output_note"].endswith("; NaN or inf in 5 elements of its own output: no finding")
    assert (
        checked.loc["b", "output_check"] == "FAIL"
        and "NaN in 5 of 4,096 elements (both)" in checked.loc["b", "warnings"]
    )
    assert checked.loc["c", "output_note"].startswith("NaN in 5 of 4,096 elements (baseline)")


def test_a_nan_is_never_turned_into_a_pass_by_the_float32_evaluation(tmp_path: Path, reference: np.ndarray) -> None:
    with_nan = reference.copy()
    with_nan[0] = np.nan
    cells, dirs = _cells(tmp_path, {"a": with_nan * (1 + 2.0**-6), "b": with_nan})
    cells["dtype"] = "bfloat16"
    write_outputs(dirs["a"] / FLOAT32_OUTPUT_FILE, [leaf(with_nan)])  # b is its float32 evaluation: "as accurate"
    assert add_output_checks(cells, dirs).set_index("run_id").loc["b", "output_check"] == "FAIL"
