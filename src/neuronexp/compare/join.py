"""A/B comparison of two result sets: join cells on their configuration labels, test each pair.

B is compared against A: a ratio above 1 means B is slower. Cells are joined on what was measured
(module, compile, backend, device, dtype, shape and any other override), never on what differs between
any two runs anyway (run id, start time, trace paths) or on how the measurement was taken (timing and
profiler settings), and never on labels the user names with `ignore`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import pandas as pd

from neuronexp.analysis.floor import FLOOR_FACTOR, REFERENCED_FLOOR_FACTOR, host_widened
from neuronexp.analysis.noise import noisy
from neuronexp.analysis.samples import NO_SAMPLES, samples_by_run
from neuronexp.analysis.stats import CellStats, benjamini_hochberg, ci_within_threshold, compare_runs, verdict
from neuronexp.compare.host import HOST_COLUMNS, host_moves, host_notes, implausible_notes
from neuronexp.compare.keys import CompareError, cell_names, differing_labels, expand_ignored, keyed_cells
from neuronexp.compare.notes import environment_notes, statistics_notes
from neuronexp.compare.op_changes import op_changes
from neuronexp.results import Results, usable


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
        """ "no change" cells whose CI still allows a change of the threshold's size."""
        if self.cells.empty:
            return 0
        return int(((self.cells["verdict"] == "no change") & ~self.cells["resolved"]).sum())


# How far from the limit, carried side by side (A's and B's value of each): results.contract defines them.
LIMIT_COLUMNS = [
    "bytes_min",
    "flops",
    "achieved_gbs",
    "pct_peak_bw",
    "achieved_tflops",
    "pct_peak_flops",
    "bound",
    "peak_memory_bytes",
    "output_check",
    "max_rel_err",
]


def limit_pair(a: pd.Series, b: pd.Series) -> dict[str, object]:
    """{column_a, column_b} for every limit column (None where a result set predates it)."""
    return {
        f"{col}_{side}": (cell.get(col) if col in cell else None)
        for col in LIMIT_COLUMNS
        for side, cell in (("a", a), ("b", b))
    }


def _more_runs(more: list[Results], ignored: list[str], side: str) -> list[tuple[dict[tuple, pd.Series], dict]]:
    """Further runs of a side: each one's usable cells by join key, and its samples by run_id."""
    runs = []
    for i, results in enumerate(more, start=2):
        keyed = keyed_cells(results.cells, ignored, f"{side} (run {i})")
        runs.append(({k: c for k, c in keyed.items() if usable(c["status"])}, samples_by_run(results.samples)))
    return runs


def _runs_of(key: tuple, first: pd.Series, first_samples: dict, more: list) -> tuple[list[pd.Series], list]:
    """The cell `key` in every run of a side that ran it, and its samples in each."""
    cells = [first] + [keyed[key] for keyed, _ in more if key in keyed]
    samples = [first_samples.get(str(first["run_id"]), NO_SAMPLES)]
    samples += [by_run.get(str(keyed[key]["run_id"]), NO_SAMPLES) for keyed, by_run in more if key in keyed]
    return cells, samples


def compare(
    a: Results,
    b: Results,
    ignore: list[str] | None = None,
    threshold: float = 0.02,
    alpha: float = 0.05,
    seed: int = 0,
    top_ops: int = 5,
    more_a: list[Results] | None = None,
    more_b: list[Results] | None = None,
    inconclusive: float = 0.25,
    floor: float | None = None,
    host_reference: bool = True,
) -> Comparison:
    """Compare B against A cell by cell (see the module docstring for how cells are joined). `more_a`, `more_b`:
    further runs of the same cells on each side; every cell's interval then resamples the runs too (a side of
    one run carries its noise floor instead, `floor` × its drift: analysis.floor). With `host_reference`, each
    interval also holds the host's own move between the sides (compare.host), and `floor` (None) defaults to
    REFERENCED_FLOOR_FACTOR where both sides have the reference, FLOOR_FACTOR where not. `inconclusive`: see
    analysis.stats.verdict.

    Raises:
        CompareError: no cell of A matches a cell of B, or labels do not identify cells uniquely.
    """
    ignored = expand_ignored(ignore or [])
    all_a, all_b = keyed_cells(a.cells, ignored, "A"), keyed_cells(b.cells, ignored, "B")
    ran_a = {k: c for k, c in all_a.items() if usable(c["status"])}
    ran_b = {k: c for k, c in all_b.items() if usable(c["status"])}
    matched = [k for k in ran_a if k in ran_b]
    if not matched and not set(all_a) & set(all_b):
        diff = differing_labels(list(all_a), list(all_b))
        hint = "; ".join(f"{k}: {'/'.join(x)} vs {'/'.join(y)}" for k, (x, y) in diff.items())
        names = " ".join(f"--ignore {k}" for k in diff)
        raise CompareError(
            f"no cell of A matches a cell of B; labels that differ: {hint or 'none'}"
            + (f" (to compare across them: {names})" if names else "")
        )
    both = [k for k in all_a if k in all_b]
    name = cell_names({**all_b, **all_a}, ignored)
    sa, sb = samples_by_run(a.samples), samples_by_run(b.samples)
    runs_a, runs_b = _more_runs(more_a or [], ignored, "A"), _more_runs(more_b or [], ignored, "B")
    rows, pairs = [], []
    for i, key in enumerate(matched):
        ca, cb = ran_a[key], ran_b[key]
        (cells_a, samples_a), (cells_b, samples_b) = _runs_of(key, ca, sa, runs_a), _runs_of(key, cb, sb, runs_b)
        moves = host_moves(cells_a, cells_b)
        referenced = host_reference and all(math.isfinite(m) for m in moves.values())
        factor = floor if floor is not None else REFERENCED_FLOOR_FACTOR if referenced else FLOOR_FACTOR
        stats = compare_runs(samples_a, samples_b, seed=seed + i, floor=factor)
        if referenced:
            low, high = host_widened(stats.ci_low, stats.ci_high, list(moves.values()))
            stats = dataclasses.replace(stats, ci_low=low, ci_high=high)
        label = name[key]
        pairs.append((str(ca["run_id"]), str(cb["run_id"]), label))
        rows.append(
            {
                "cell": label,
                **dict(key),
                "run_id_a": ca["run_id"],
                "run_id_b": cb["run_id"],
                **vars(stats),
                **moves,
                "noisy": any(noisy(c) for c in cells_a + cells_b),
                **limit_pair(ca, cb),
            }
        )
    cells = pd.DataFrame(
        rows,
        columns=[
            "cell",
            *dict(both[0]),
            "run_id_a",
            "run_id_b",
            *CellStats.__dataclass_fields__,
            *HOST_COLUMNS.values(),
            "noisy",
            *(f"{c}_{s}" for c in LIMIT_COLUMNS for s in "ab"),
        ],
    )
    cells["q_value"] = benjamini_hochberg(cells["p_value"])
    # Noise widens the interval (the floor, or the runs), it does not veto the call: a noisy cell is called too.
    cells["verdict"] = [
        verdict(
            r.ratio, r.q_value, alpha, threshold, r.rounds_a > 1 and r.rounds_b > 1, r.ci_low, r.ci_high, inconclusive
        )
        for r in cells.itertuples()
    ]
    cells["resolved"] = [ci_within_threshold(lo, hi, threshold) for lo, hi in zip(cells["ci_low"], cells["ci_high"])]
    only_a = [name[k] for k in all_a if k not in all_b]
    only_b = [name[k] for k in all_b if k not in all_a]
    broken = [name[k] for k in both if k in ran_a and k not in ran_b]
    fixed = [name[k] for k in both if k in ran_b and k not in ran_a]
    failed = [
        f"{name[k]} (A: {_error(all_a[k])}; B: {_error(all_b[k])})" for k in both if k not in ran_a and k not in ran_b
    ]
    ops = op_changes(a.ops, b.ops, pairs, top=top_ops)
    notes = environment_notes(a.cells, b.cells) + statistics_notes(cells, threshold)
    notes += host_notes(cells, threshold, host_reference)
    notes += implausible_notes([a.cells, b.cells, *(r.cells for r in [*(more_a or []), *(more_b or [])])])
    if runs_a or runs_b:
        notes.insert(
            0,
            f"runs: {len(runs_a) + 1} of A, {len(runs_b) + 1} of B; each interval resamples the runs, "
            "their rounds and samples, so it holds the process-to-process variance too",
        )
    for side, more, column in (("A", runs_a, "runs_a"), ("B", runs_b, "runs_b")):
        short = cells[cells[column] < len(more) + 1] if more else cells.iloc[0:0]
        if len(short):
            notes.append(
                f"{len(short)} cell(s) missing from a further run of {side} (compared over fewer runs): "
                f"{', '.join(map(str, short['cell']))}"
            )
    return Comparison(cells, ops, only_a, only_b, threshold, alpha, inconclusive, ignored, notes, broken, fixed, failed)


def _error(cell: pd.Series) -> str:
    text = str(cell.get("error") or cell["status"]).strip().splitlines()
    return (text[0] if text else str(cell["status"]))[:160]
