"""The output check: each cell's output against its baseline cell's, from the files the cells saved (they ran in
other processes). The rule, the tolerances by dtype, the float32 evaluation that keeps a more accurate variant from
failing, and when outputs are not compared at all: docs/profile.md, "Output check"."""

from __future__ import annotations

import math
import zipfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from neuronexp.analysis.baseline import Baseline
from neuronexp.analysis.variants import variant_label
from neuronexp.results import USABLE
from neuronexp.results.outputs import FLOAT32_OUTPUT_FILE, OUTPUT_FILE, OutputLeaf, read_outputs

# What two correct implementations of a layer (another summation order, a fused kernel, an upcast or not) may
# differ by. 16-bit outputs: four units of their last place (machine epsilon: bfloat16 2^-7, float16 2^-10), the
# output's own rounding dominating. float32: 1e-5 (about 80 epsilons), the rounding accumulated over reductions of
# thousands of elements dominating; float64 likewise. Measured in docs/profile.md, "Output check".
DEFAULT_RTOL = {"float64": 1e-9, "float32": 1e-5, "bfloat16": 2.0**-5, "float16": 2.0**-8}
ACCURACY_FACTOR = 2.0
WARNING_PREFIX = "output differs from the baseline's"
COLUMNS = ("output_check", "output_match", "max_abs_err", "max_rel_err", "output_note")


def default_rtol(dtype: str) -> float:
    return DEFAULT_RTOL.get(dtype, DEFAULT_RTOL["float32"])


def _leaf_errors(v: OutputLeaf, b: OutputLeaf, rtol: float, atol: float) -> tuple[bool, float, float, int]:
    """(within tolerance, max abs error, max rel error, elements compared) of one output tensor."""
    a, ref = v.values.astype(np.float64), b.values.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(ref)
    same_inf = np.isinf(a) & np.isinf(ref) & (np.sign(a) == np.sign(ref))
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, set to 0 below where both sides agree
        diff = np.abs(a - ref)
    diff[both_nan | same_inf] = 0.0
    matched = both_nan | same_inf
    # A NaN or inf on one side only leaves a NaN or inf difference, which fails the comparison.
    ok = bool(np.all(diff <= atol + rtol * np.abs(np.where(matched, 0.0, ref))))
    ok = ok and v.stats["nan"] == b.stats["nan"] and v.stats["inf"] == b.stats["inf"]
    finite = np.isfinite(diff)
    max_abs = float(diff[finite].max()) if finite.any() else math.inf
    nonzero = finite & (ref != 0) & np.isfinite(ref)
    max_rel = float((diff[nonzero] / np.abs(ref[nonzero])).max()) if nonzero.any() else 0.0
    if not finite.all():  # a NaN or inf on one side only: the error is unbounded, never "rel 0"
        max_rel = math.inf
    return ok, max_abs, max_rel, int(a.size)


def nonfinite_words(variant: list[OutputLeaf], baseline: list[OutputLeaf]) -> tuple[str, bool]:
    """("NaN in 15,360 of 32,768 elements (both)", whether either side has a NaN): NaN and inf named, with whose
    output holds them (whole-tensor counts); "" where every element of both is finite."""
    total = int(sum(leaf.stats["numel"] for leaf in baseline))
    words, nan = [], False
    for kind, name in (("nan", "NaN"), ("inf", "inf")):
        mine, theirs = (int(sum(leaf.stats[kind] for leaf in side)) for side in (variant, baseline))
        nan = nan or (kind == "nan" and mine + theirs > 0)
        if mine and theirs:
            who = f"{mine:,} (both)" if mine == theirs else f"{mine:,} (variant) and {theirs:,} (baseline)"
        else:
            who = f"{mine:,} (variant)" if mine else f"{theirs:,} (baseline)" if theirs else ""
        words += [f"{name} in {who.replace(' (', f' of {total:,} elements (', 1)}"] if who else []
    return "; ".join(words), nan


def compare_outputs(
    variant: list[OutputLeaf], baseline: list[OutputLeaf], rtol: float, atol: float | None
) -> dict[str, Any]:
    """The check's columns for one cell (docs/profile.md, "Output check"); `atol` None: rtol × the
    baseline's RMS."""
    if len(variant) != len(baseline):
        kind = "no tensor" if not variant else f"{len(variant)} tensor(s)"
        return _failed(f"returns {kind}, the baseline {len(baseline)}: not the same kind of output")
    ok, max_abs, max_rel, compared, total, limits = True, 0.0, 0.0, 0, 0, []
    for i, (v, b) in enumerate(zip(variant, baseline)):
        if v.shape != b.shape:
            return _failed(f"output {i} has shape {list(v.shape)}, the baseline's {list(b.shape)}")
        if v.index.shape != b.index.shape or not np.array_equal(v.index, b.index):
            return _unchecked("the two outputs were sampled at different positions (saved by different versions)")
        rms = b.stats["rms"]
        leaf_atol = atol if atol is not None else rtol * (rms if math.isfinite(rms) else 0.0)
        leaf_ok, leaf_abs, leaf_rel, n = _leaf_errors(v, b, rtol, leaf_atol)
        ok, max_abs, max_rel = ok and leaf_ok, max(max_abs, leaf_abs), max(max_rel, leaf_rel)
        compared, total = compared + n, total + int(b.stats["numel"])
        limits.append(leaf_atol)
    where = f"{compared:,} of {total:,} elements" + (" (a fixed sample)" if compared < total else "")
    note = f"max |Δ| {max_abs:.3g} vs atol {max(limits, default=0):.3g} + rtol {rtol:.3g}·|baseline|, {where}"
    named, nan = nonfinite_words(variant, baseline)
    ok = ok and not nan  # a NaN is never a result that matches, even where both sides have it
    note = f"{named}: {note}" if named else note
    return {
        "output_check": "pass" if ok else "FAIL",
        "output_match": ok,
        "max_abs_err": max_abs,
        "max_rel_err": max_rel,
        "output_note": note,
    }


def _max_error(a: OutputLeaf, b: OutputLeaf) -> float:
    diff = np.abs(a.values.astype(np.float64) - b.values.astype(np.float64))
    return float(diff[np.isfinite(diff)].max(initial=0.0))


def as_accurate(
    variant: list[OutputLeaf], baseline: list[OutputLeaf], wide: list[OutputLeaf], check: dict[str, Any]
) -> dict[str, Any]:
    """`check` (a FAIL of the elementwise rule) turned into a pass when the variant is no less accurate than the
    baseline against the baseline's float32 evaluation `wide`, up to ACCURACY_FACTOR (docs/profile.md,
    "Output check")."""
    if check["max_abs_err"] is None or len(wide) != len(baseline):
        return check
    errors = []
    for v, b, w in zip(variant, baseline, wide):
        if (
            w.shape != b.shape
            or not np.array_equal(w.index, b.index)
            or v.stats["nan"] != b.stats["nan"]
            or v.stats["inf"] != b.stats["inf"]
            or v.stats["nan"] > 0  # a NaN is never more accurate
        ):
            return check
        slack = DEFAULT_RTOL["float32"] * (w.stats["rms"] if math.isfinite(w.stats["rms"]) else 0.0)
        errors.append((_max_error(v, w), _max_error(b, w), slack))
    if not all(mine <= ACCURACY_FACTOR * theirs + slack for mine, theirs, slack in errors):
        return check
    mine, theirs = max(e[0] for e in errors), max(e[1] for e in errors)
    note = (
        f"{check['output_note']}: beyond the elementwise tolerance, but no less accurate than the baseline: "
        f"against the baseline evaluated in float32, max |Δ| {mine:.3g}, the baseline's own {theirs:.3g} "
        f"(up to {ACCURACY_FACTOR:g}× allowed)"
    )
    return {**check, "output_check": "pass", "output_match": True, "output_note": note}


def _failed(why: str) -> dict[str, Any]:
    return {"output_check": "FAIL", "output_match": False, "max_abs_err": None, "max_rel_err": None, "output_note": why}


def _unchecked(why: str, check: str = "n/a") -> dict[str, Any]:
    return {"output_check": check, "output_match": None, "max_abs_err": None, "max_rel_err": None, "output_note": why}


def _number(value: Any) -> float | None:
    return float(value) if value is not None and not (isinstance(value, float) and math.isnan(value)) else None


def what_keys(baseline: Baseline | None) -> list[str]:
    """The baseline rule's keys that change what is computed (a constructor argument, an input, the model's
    dimensions) rather than how."""
    return [k for k in baseline or {} if k.startswith(("module.", "input.", "dims.", "shapes")) and k != "input.dtype"]


def _check_cell(
    cell: dict[str, Any],
    by_run: dict[str, dict[str, Any]],
    job_dir_of: dict[str, Path],
    other_function: list[str],
    read: Callable[[Path], list[OutputLeaf]],
) -> dict[str, Any] | None:
    """The check's columns for one cell; None leaves the cell's own (off, not saved, not run)."""
    if cell.get("status") not in USABLE or _number(cell.get("output_tensors")) is None:
        return None
    ref_id = cell.get("baseline_run_id")
    if not isinstance(ref_id, str):
        return _unchecked(
            "no baseline cell to compare with (set baseline=...; a single run compares nothing)", "no baseline"
        )
    if ref_id == cell["run_id"]:
        bad = _number(cell.get("output_nonfinite"))
        own = f"; NaN or inf in {bad:,.0f} elements of its own output: no finding" if bad else ""
        return _unchecked(f"the reference the other cells of its group are checked against{own}", "baseline")
    if other_function:
        return _unchecked(
            f"the baseline differs in {', '.join(other_function)}: another function or other inputs, "
            "so outputs are not compared"
        )
    ref = by_run.get(ref_id)
    if ref is None or ref.get("status") not in USABLE or _number(ref.get("output_tensors")) is None:
        return _unchecked("the baseline cell has no saved output (failed, or its check was off)")
    paths = [job_dir_of.get(str(r)) for r in (cell["run_id"], ref_id)]
    try:
        mine, theirs = (read(p / OUTPUT_FILE) for p in paths if p is not None)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:  # damaged since its cell was checked
        return _unchecked(f"an output file is missing or unreadable ({type(exc).__name__})")
    rtol, atol = _number(cell.get("output_rtol")), _number(cell.get("output_atol"))
    by_dtype = max(default_rtol(str(cell.get("dtype"))), default_rtol(str(ref.get("dtype"))))
    check = compare_outputs(mine, theirs, by_dtype if rtol is None else rtol, atol)
    wide_file = paths[1] / FLOAT32_OUTPUT_FILE if paths[1] is not None else None
    if check["output_match"] is not False or rtol is not None or atol is not None or wide_file is None:
        return check
    try:
        return as_accurate(mine, theirs, read(wide_file), check) if wide_file.is_file() else check
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return check


def _with_warning(warnings: Any, check: dict[str, Any], ref_name: str) -> str | None:
    text = warnings if isinstance(warnings, str) else ""
    parts = [w for w in text.split(" | ") if w and not w.startswith(WARNING_PREFIX)]
    if check.get("output_match") is False:
        parts.append(f"{WARNING_PREFIX} ({ref_name}) beyond tolerance: {check['output_note']}")
    return " | ".join(parts) or None


def add_output_checks(
    cells: pd.DataFrame, job_dir_of: dict[str, Path], baseline: Baseline | None = None
) -> pd.DataFrame:
    """`cells` with the check's columns filled for every cell that saved its output, and a warning in the
    row of each cell beyond tolerance. Needs `baseline_run_id` (analysis.variants.add_speedups), computed from
    the rule `baseline`."""
    if cells.empty or "output_tensors" not in cells or "baseline_run_id" not in cells:
        return cells
    cells = cells.copy()
    for col in COLUMNS:
        cells[col] = cells[col].astype(object) if col in cells else None
    by_run = {str(r["run_id"]): r for r in cells.to_dict("records")}
    read = lru_cache(maxsize=16)(read_outputs)  # a baseline's file is read once for the cells of its group
    other_function = what_keys(baseline)
    for idx, cell in zip(cells.index, cells.to_dict("records")):
        check = _check_cell(cell, by_run, job_dir_of, other_function, read)
        if check is None:
            continue
        for col, value in check.items():
            cells.at[idx, col] = value
        ref = by_run.get(str(cell.get("baseline_run_id")))
        cells.at[idx, "warnings"] = _with_warning(cell.get("warnings"), check, variant_label(ref) if ref else "?")
    return cells
