"""A/B comparison of two result sets: join cells on their configuration labels, test each pair.

B is compared against A: a ratio above 1 means B is slower. Cells are joined on what was measured
(module, compile, backend, device, dtype, shape and any other override), never on what differs between
any two runs anyway (run id, start time, trace paths) or on how the measurement was taken (timing and
profiler settings), and never on labels the user names with `ignore`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from neuronexp.analysis.floor import FLOOR_FACTOR
from neuronexp.analysis.noise import noisy
from neuronexp.analysis.samples import NO_SAMPLES, samples_by_run
from neuronexp.analysis.variants import split_overrides
from neuronexp.compare.ops import op_changes
from neuronexp.formatting import fmt_word
from neuronexp.analysis.stats import CellStats, benjamini_hochberg, ci_within_threshold, compare_runs, verdict
from neuronexp.results import Results, usable
from neuronexp.analysis.variants import cell_labels

LABELS = ["experiment", "module", "compiled", "backend", "device", "device_name", "dtype", "input_shape"]
# Overrides that repeat a label column above (compared there) or only set how the measurement was taken.
_OVERRIDE_AS_LABEL = {"module", "input.shape", "input.dtype", "backend", "compile.enabled", "experiment"}
_MEASUREMENT_PREFIXES = ("timing.", "profiler", "hydra.", "baseline")
# Naming one label ignores the ones derived from it: another backend is another device.
_IMPLIED = {"backend": ("device", "device_name"), "device": ("device_name",), "module": ("compiled",)}



class CompareError(ValueError):
    """The two result sets cannot be compared (nothing matches, or a label set is ambiguous)."""


@dataclass
class Comparison:
    cells: pd.DataFrame  # one row per matched cell: labels, medians, ratio, CI, p, q, verdict
    ops: pd.DataFrame  # op-table changes: appeared, disappeared, changed most
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    threshold: float = 0.02
    alpha: float = 0.05
    inconclusive: float = 0.25  # a cell not called whose interval reaches beyond ×(1 + this) cannot be told
    ignored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # environment differences and what the statistics cannot say
    broken: list[str] = field(default_factory=list)  # ran in A, failed in B: a regression too
    fixed: list[str] = field(default_factory=list)  # failed in A, ran in B
    failed: list[str] = field(default_factory=list)  # failed in both, with both errors

    def count(self, word: str) -> int:
        return int((self.cells["verdict"] == word).sum()) if not self.cells.empty else 0

    @property
    def unresolved(self) -> int:
        """"no change" cells whose CI still allows a change of the threshold's size."""
        if self.cells.empty:
            return 0
        return int(((self.cells["verdict"] == "no change") & ~self.cells["resolved"]).sum())


# Not join keys (a new torch is exactly what one compares), but a reader should know they changed.
_ENVIRONMENT = ["torch_version", "neuronx_version", "device_name", "host", "timing_method", "threads", "allocator",
                "malloc"]


def environment_notes(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    notes = []
    for col in _ENVIRONMENT:
        if col in a.columns and col in b.columns:
            va, vb = (sorted({fmt_word(v) for v in side[col].dropna()}) for side in (a, b))
            if va != vb:
                notes.append(f"{col} differs: {'/'.join(va) or '—'} vs {'/'.join(vb) or '—'}")
    return notes


def statistics_notes(cells: pd.DataFrame, threshold: float) -> list[str]:
    """What the intervals rest on: a side of one run (its noise floor), one round on a side, noisy cells."""
    notes: list[str] = []
    if cells.empty:
        return notes
    floored = cells[(cells["runs_a"] < 2) | (cells["runs_b"] < 2)]
    if len(floored):
        notes.append(f"{len(floored)} cell(s) have one run on a side: their intervals add a process-to-process term "
                     "measured from each side's drift over its rounds (floor_a/floor_b); --also-a/--also-b measure it")
    single = cells[(cells["rounds_a"] < 2) | (cells["rounds_b"] < 2)]
    if len(single):
        notes.append(f"{len(single)} cell(s) have one timing round on a side: only a difference whose whole interval "
                     f"lies beyond ±{threshold:.0%} is called (timing.rounds > 1 on both sides lifts this)")
    flagged = cells[cells["noisy"]] if "noisy" in cells.columns else cells.iloc[0:0]
    if len(flagged):
        notes.append(f"noisy in A or B (their `noise` column says why; the interval holds that noise, so a call there "
                     f"still stands): {', '.join(map(str, flagged['cell']))}")
    return notes


def expand_ignored(names: list[str]) -> list[str]:
    out = list(dict.fromkeys(names))
    for name in names:
        out += [n for n in _IMPLIED.get(name, ()) if n not in out]
    return out


def join_labels(cell: pd.Series, ignored: list[str]) -> dict[str, str]:
    labels = {c: str(cell[c]) for c in LABELS if c not in ignored}
    for override in split_overrides(cell.get("overrides") or ""):
        key, _, value = override.lstrip("+~").partition("=")
        if key not in _OVERRIDE_AS_LABEL and not key.startswith(_MEASUREMENT_PREFIXES) and key not in ignored:
            labels[key] = value
    return labels


def _keyed(cells: pd.DataFrame, ignored: list[str], side: str) -> dict[tuple, pd.Series]:
    keyed: dict[tuple, pd.Series] = {}
    for _, cell in cells.iterrows():
        key = tuple(sorted(join_labels(cell, ignored).items()))
        if key in keyed:
            raise CompareError(f"two cells of {side} have the same labels once {', '.join(ignored) or 'nothing'} "
                               f"is ignored: {dict(key)}")
        keyed[key] = cell
    return keyed


def cell_names(keyed: dict[tuple, pd.Series], ignored: list[str]) -> dict[tuple, str]:
    """Each cell's name, as every other view names it (analysis.variants.cell_labels over the cells of A and
    B together), from the labels the cells were joined on: ignored ones left out."""
    rows = []
    for key, cell in keyed.items():
        row = cell.to_dict()
        row["overrides"] = ",".join(f"{k}={v}" for k, v in key if k not in LABELS)
        row.update({col: "*" for col in ignored if col in row and col not in ("module", "compiled")})
        rows.append(row)
    return dict(zip(keyed, cell_labels(pd.DataFrame(rows)))) if rows else {}


def differing_labels(keys_a: list[tuple], keys_b: list[tuple]) -> dict[str, tuple[list[str], list[str]]]:
    """Labels whose values never overlap between A and B: the usual reason nothing matches."""
    def values(keys: list[tuple]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for key in keys:
            for k, v in key:
                out.setdefault(k, set()).add(v)
        return out

    va, vb = values(keys_a), values(keys_b)
    return {k: (sorted(va.get(k, {"—"})), sorted(vb.get(k, {"—"}))) for k in sorted(set(va) | set(vb))
            if not va.get(k, set()) & vb.get(k, set())}


# How far from the limit, carried side by side (A's and B's value of each): results.schema defines them.
LIMIT_COLUMNS = ["bytes_min", "flops", "achieved_gbs", "pct_peak_bw", "achieved_tflops", "pct_peak_flops", "bound",
                 "peak_memory_bytes", "output_check", "max_rel_err"]


def limit_pair(a: pd.Series, b: pd.Series) -> dict[str, object]:
    """{column_a, column_b} for every limit column (None where a result set predates it)."""
    return {f"{col}_{side}": (cell.get(col) if col in cell else None) for col in LIMIT_COLUMNS for side, cell in (("a", a), ("b", b))}


def _more_runs(more: list[Results], ignored: list[str], side: str) -> list[tuple[dict[tuple, pd.Series], dict]]:
    """Further runs of a side: each one's usable cells by join key, and its samples by run_id."""
    runs = []
    for i, results in enumerate(more, start=2):
        keyed = _keyed(results.cells, ignored, f"{side} (run {i})")
        runs.append(({k: c for k, c in keyed.items() if usable(c["status"])}, samples_by_run(results.samples)))
    return runs


def _runs_of(key: tuple, first: pd.Series, first_samples: dict, more: list) -> tuple[list[pd.Series], list]:
    """The cell `key` in every run of a side that ran it, and its samples in each."""
    cells = [first] + [keyed[key] for keyed, _ in more if key in keyed]
    samples = [first_samples.get(str(first["run_id"]), NO_SAMPLES)]
    samples += [by_run.get(str(keyed[key]["run_id"]), NO_SAMPLES) for keyed, by_run in more if key in keyed]
    return cells, samples


def compare(a: Results, b: Results, ignore: list[str] | None = None, threshold: float = 0.02,
            alpha: float = 0.05, seed: int = 0, top_ops: int = 5, more_a: list[Results] | None = None,
            more_b: list[Results] | None = None, inconclusive: float = 0.25,
            floor: float = FLOOR_FACTOR) -> Comparison:
    """Compare B against A cell by cell (see the module docstring for how cells are joined). `more_a`, `more_b`:
    further runs of the same cells on each side; every cell's interval then resamples the runs too (a side of
    one run carries its noise floor instead, `floor` × its drift: analysis.floor). `inconclusive`: see
    analysis.stats.verdict.

    Raises:
        CompareError: no cell of A matches a cell of B, or labels do not identify cells uniquely.
    """
    ignored = expand_ignored(ignore or [])
    all_a, all_b = _keyed(a.cells, ignored, "A"), _keyed(b.cells, ignored, "B")
    ran_a = {k: c for k, c in all_a.items() if usable(c["status"])}
    ran_b = {k: c for k, c in all_b.items() if usable(c["status"])}
    matched = [k for k in ran_a if k in ran_b]
    if not matched and not set(all_a) & set(all_b):
        diff = differing_labels(list(all_a), list(all_b))
        hint = "; ".join(f"{k}: {'/'.join(x)} vs {'/'.join(y)}" for k, (x, y) in diff.items())
        names = " ".join(f"--ignore {k}" for k in diff)
        raise CompareError(f"no cell of A matches a cell of B; labels that differ: {hint or 'none'}"
                           + (f" (to compare across them: {names})" if names else ""))
    both = [k for k in all_a if k in all_b]
    name = cell_names({**all_b, **all_a}, ignored)
    sa, sb = samples_by_run(a.samples), samples_by_run(b.samples)
    runs_a, runs_b = _more_runs(more_a or [], ignored, "A"), _more_runs(more_b or [], ignored, "B")
    rows, pairs = [], []
    for i, key in enumerate(matched):
        ca, cb = ran_a[key], ran_b[key]
        (cells_a, samples_a), (cells_b, samples_b) = _runs_of(key, ca, sa, runs_a), _runs_of(key, cb, sb, runs_b)
        stats = compare_runs(samples_a, samples_b, seed=seed + i, floor=floor)
        label = name[key]
        pairs.append((str(ca["run_id"]), str(cb["run_id"]), label))
        rows.append({"cell": label, **dict(key), "run_id_a": ca["run_id"], "run_id_b": cb["run_id"], **vars(stats),
                     "noisy": any(noisy(c) for c in cells_a + cells_b), **limit_pair(ca, cb)})
    cells = pd.DataFrame(rows, columns=["cell", *dict(both[0]), "run_id_a", "run_id_b", *CellStats.__dataclass_fields__,
                                        "noisy", *(f"{c}_{s}" for c in LIMIT_COLUMNS for s in "ab")])
    cells["q_value"] = benjamini_hochberg(cells["p_value"])
    # Noise widens the interval (the floor, or the runs), it does not veto the call: a noisy cell is called too.
    cells["verdict"] = [verdict(r.ratio, r.q_value, alpha, threshold, r.rounds_a > 1 and r.rounds_b > 1, r.ci_low,
                                r.ci_high, inconclusive) for r in cells.itertuples()]
    cells["resolved"] = [ci_within_threshold(lo, hi, threshold) for lo, hi in zip(cells["ci_low"], cells["ci_high"])]
    only_a = [name[k] for k in all_a if k not in all_b]
    only_b = [name[k] for k in all_b if k not in all_a]
    broken = [name[k] for k in both if k in ran_a and k not in ran_b]
    fixed = [name[k] for k in both if k in ran_b and k not in ran_a]
    failed = [f"{name[k]} (A: {_error(all_a[k])}; B: {_error(all_b[k])})"
              for k in both if k not in ran_a and k not in ran_b]
    ops = op_changes(a.ops, b.ops, pairs, top=top_ops)
    notes = environment_notes(a.cells, b.cells) + statistics_notes(cells, threshold)
    if runs_a or runs_b:
        notes.insert(0, f"runs: {len(runs_a) + 1} of A, {len(runs_b) + 1} of B; each interval resamples the runs, "
                        "their rounds and samples, so it holds the process-to-process variance too")
    for side, more, column in (("A", runs_a, "runs_a"), ("B", runs_b, "runs_b")):
        short = cells[cells[column] < len(more) + 1] if more else cells.iloc[0:0]
        if len(short):
            notes.append(f"{len(short)} cell(s) missing from a further run of {side} (compared over fewer runs): "
                         f"{', '.join(map(str, short['cell']))}")
    return Comparison(cells, ops, only_a, only_b, threshold, alpha, inconclusive, ignored, notes, broken, fixed, failed)


def _error(cell: pd.Series) -> str:
    text = str(cell.get("error") or cell["status"]).strip().splitlines()
    return (text[0] if text else str(cell["status"]))[:160]
