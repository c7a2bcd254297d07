"""A/B comparison of two result sets: join cells on their configuration labels, test each pair.

B is compared against A: a ratio above 1 means B is slower. Cells are joined on what was measured
(module, compile, backend, device, dtype, shape and any other override), never on what differs between
any two runs anyway (run id, start time, trace paths) or on how the measurement was taken (timing and
profiler settings), and never on labels the user names with `ignore`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from neuronexp.analysis.floor import FLOOR_FACTOR, REFERENCED_FLOOR_FACTOR, host_widened
from neuronexp.analysis.noise import noisy
from neuronexp.analysis.samples import NO_SAMPLES, samples_by_run
from neuronexp.analysis.stats import (
    CellStats,
    Criteria,
    benjamini_hochberg,
    ci_within_threshold,
    compare_run_pairs,
    compare_runs,
    verdict,
)
from neuronexp.compare.host import HOST_COLUMNS, excusable, host_moves, host_notes, implausible_notes
from neuronexp.compare.keys import CompareError, cell_names, differing_labels, expand_ignored, keyed_cells
from neuronexp.compare.notes import environment_notes, machine_notes, statistics_notes
from neuronexp.compare.op_changes import op_changes
from neuronexp.results import Results, usable
from neuronexp.results.environment import environments


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    """How compare joins and decides (neuronexp-compare's flags): `ignore`, labels not joined on; `criteria`, when a
    ratio is a change; `seed`, the bootstrap's; `top_ops`, op changes kept per cell; `floor`, the noise floor's factor
    for a side of one run (None: REFERENCED_FLOOR_FACTOR where both sides have the host reference, FLOOR_FACTOR where
    not: analysis.floor); `host_reference`, each interval also holds the host's own move between the sides;
    `paired`, the sides' runs were made in pairs, the i-th of A next to the i-th of B (a CI job interleaving them)."""

    ignore: Sequence[str] = ()
    criteria: Criteria = Criteria()
    seed: int = 0
    top_ops: int = 5
    floor: float | None = None
    host_reference: bool = True
    paired: bool = False  # A's runs and B's in pairs, by their order (analysis.stats.compare_run_pairs)


@dataclass(kw_only=True)
class Comparison:
    cells: pd.DataFrame  # one row per matched cell: labels, medians, ratio, CI, p, q, verdict
    ops: pd.DataFrame  # op-table changes: appeared, disappeared, changed most
    criteria: Criteria = Criteria()
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
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


@dataclass(frozen=True)
class _Side:
    """One side of the comparison, its runs in order (the first, then further runs of the same cells)."""

    every: dict[tuple, pd.Series]  # the first run's cells by join key, failed ones too
    runs: list[tuple[dict[tuple, pd.Series], dict]]  # each run's usable cells by key, and its samples by run_id
    tables: list[pd.DataFrame]  # each run's cells

    @property
    def ran(self) -> dict[tuple, pd.Series]:
        return self.runs[0][0]

    def runs_of(self, key: tuple) -> tuple[list[pd.Series], list]:
        """The cell `key` in every run of this side that ran it, and its samples in each."""
        cells = [keyed[key] for keyed, _ in self.runs if key in keyed]
        return cells, [s for s in self.each_run(key) if s is not None]

    def each_run(self, key: tuple) -> list:
        """The cell `key`'s samples in each run of this side, in order; None for a run that did not run it."""
        return [
            by_run.get(str(keyed[key]["run_id"]), NO_SAMPLES) if key in keyed else None for keyed, by_run in self.runs
        ]


def _side(every: dict[tuple, pd.Series], runs: list[Results], ignored: list[str], name: str) -> _Side:
    """A side from its runs, the first keyed already (`every`); a further run's errors name it "A (run 2)", ..."""
    keyed = [every] + [keyed_cells(r.cells, ignored, f"{name} (run {i})") for i, r in enumerate(runs[1:], start=2)]
    ran = [{k: c for k, c in cells.items() if usable(c["status"])} for cells in keyed]
    return _Side(every, [(cells, samples_by_run(r.samples)) for cells, r in zip(ran, runs)], [r.cells for r in runs])


def _interval(a: _Side, b: _Side, key: tuple, moves: dict[str, float], options: CompareOptions, seed: int) -> CellStats:
    """One cell's statistics over every run of each side, or over the pairs of runs (`paired`, two pairs or more);
    with the host reference on both sides, the interval also holds how far the host itself moved between them
    (compare.host), except over pairs: there the pairs' spread holds the host's drift already, and widening by the
    reference too (whose own noise is large on a loaded host) made an unchanged head inconclusive (docs/history.md)."""
    referenced = options.host_reference and all(excusable(m) for m in moves.values())
    pairs = [(x, y) for x, y in zip(a.each_run(key), b.each_run(key)) if x is not None and y is not None]
    if options.paired and len(pairs) > 1:
        return compare_run_pairs(pairs, seed=seed)
    floor = options.floor
    factor = floor if floor is not None else REFERENCED_FLOOR_FACTOR if referenced else FLOOR_FACTOR
    stats = compare_runs(a.runs_of(key)[1], b.runs_of(key)[1], seed=seed, floor=factor)
    if not referenced:
        return stats
    low, high = host_widened(stats.ci_low, stats.ci_high, list(moves.values()))
    return dataclasses.replace(stats, ci_low=low, ci_high=high)


def _compared(a: _Side, b: _Side, key: tuple, options: CompareOptions, seed: int) -> tuple[dict, CellStats]:
    """One matched cell's row (its labels, run ids, statistics, host moves, noise and limits) and its statistics."""
    cells_a, cells_b = a.runs_of(key)[0], b.runs_of(key)[0]
    moves = host_moves(cells_a, cells_b)
    stats = _interval(a, b, key, moves, options, seed)
    row = {
        **dict(key),
        "run_id_a": cells_a[0]["run_id"],
        "run_id_b": cells_b[0]["run_id"],
        **vars(stats),
        **moves,
        "noisy": any(noisy(c) for c in cells_a + cells_b),
        # A's and B's value of each limit column (None where a result set predates it).
        **{f"{col}_{side}": c.get(col) for col in LIMIT_COLUMNS for side, c in (("a", cells_a[0]), ("b", cells_b[0]))},
    }
    return row, stats


def _matched(a: _Side, b: _Side, name: dict[tuple, str], options: CompareOptions) -> pd.DataFrame:
    """One row per cell that ran on both sides, with its q-value (Benjamini–Hochberg across cells), its verdict and
    whether its interval rules out a change of the threshold's size (`resolved`)."""
    matched = [k for k in a.ran if k in b.ran]
    compared = [_compared(a, b, key, options, options.seed + i) for i, key in enumerate(matched)]
    labels = dict(next(k for k in a.every if k in b.every))
    columns = ["cell", *labels, "run_id_a", "run_id_b", *CellStats.__dataclass_fields__, *HOST_COLUMNS.values()]
    columns += ["noisy", *(f"{c}_{s}" for c in LIMIT_COLUMNS for s in "ab")]
    cells = pd.DataFrame([{"cell": name[k], **row} for k, (row, _) in zip(matched, compared)], columns=columns)
    cells["q_value"] = benjamini_hochberg(cells["p_value"])
    # Noise widens the interval (the floor, or the runs), it does not veto the call: a noisy cell is called too.
    cells["verdict"] = [verdict(s, q, options.criteria) for (_, s), q in zip(compared, cells["q_value"])]
    intervals = zip(cells["ci_low"], cells["ci_high"])
    cells["resolved"] = [ci_within_threshold(lo, hi, options.criteria.threshold) for lo, hi in intervals]
    return cells


def _unmatched(a: _Side, b: _Side, name: dict[tuple, str]) -> dict[str, list[str]]:
    """The cells not compared, by reason (Comparison's lists): failed in both with both errors, and so on."""
    both = [k for k in a.every if k in b.every]
    return {
        "only_a": [name[k] for k in a.every if k not in b.every],
        "only_b": [name[k] for k in b.every if k not in a.every],
        "broken": [name[k] for k in both if k in a.ran and k not in b.ran],
        "fixed": [name[k] for k in both if k in b.ran and k not in a.ran],
        "failed": [
            f"{name[k]} (A: {_error(a.every[k])}; B: {_error(b.every[k])})"
            for k in both
            if k not in a.ran and k not in b.ran
        ],
    }


def _notes(a: _Side, b: _Side, cells: pd.DataFrame, options: CompareOptions) -> list[str]:
    """What the table cannot say: how the sides' environments differ, what the statistics and the host reference
    cannot tell, implausible figures and, with further runs, what the intervals resample and the cells they miss."""
    threshold = options.criteria.threshold
    notes = environment_notes(a.tables[0], b.tables[0]) + statistics_notes(cells, threshold)
    paired = options.paired and len(a.runs) > 1
    notes += host_notes(cells, threshold, options.host_reference and not paired, paired)
    notes += implausible_notes([a.tables[0], b.tables[0], *a.tables[1:], *b.tables[1:]])
    notes += machine_notes(*(environments(pd.concat(side.tables, ignore_index=True)) for side in (a, b)))
    if len(a.runs) == 1 and len(b.runs) == 1:
        return notes
    together = (
        "in pairs (the i-th of A next to the i-th of B): each ratio is the median over the pairs of B's ÷ A's, and "
        "each interval resamples the pairs"
        if options.paired
        else "each interval resamples the runs"
    )
    notes.insert(
        0,
        f"runs: {len(a.runs)} of A, {len(b.runs)} of B; {together}, their rounds and samples, so it holds the "
        "process-to-process variance too",
    )
    for side, runs, column in (("A", len(a.runs), "runs_a"), ("B", len(b.runs), "runs_b")):
        short = cells.loc[cells[column] < runs, "cell"] if runs > 1 else []
        if len(short):
            notes.append(
                f"{len(short)} cell(s) missing from a further run of {side} (compared over fewer runs): "
                f"{', '.join(map(str, short))}"
            )
    return notes


def compare(
    a: Results,
    b: Results,
    options: CompareOptions | None = None,
    more_a: list[Results] | None = None,
    more_b: list[Results] | None = None,
) -> Comparison:
    """Compare B against A cell by cell (see the module docstring for how cells are joined), as `options` say.
    `more_a`, `more_b`: further runs of the same cells on each side; every cell's interval then resamples the runs
    too (a side of one run carries its noise floor instead: analysis.floor).

    Raises:
        CompareError: no cell of A matches a cell of B, or labels do not identify cells uniquely.
    """
    options = options or CompareOptions()
    ignored = expand_ignored(list(options.ignore))
    every_a, every_b = keyed_cells(a.cells, ignored, "A"), keyed_cells(b.cells, ignored, "B")
    if not set(every_a) & set(every_b):
        diff = differing_labels(list(every_a), list(every_b))
        hint = "; ".join(f"{k}: {'/'.join(x)} vs {'/'.join(y)}" for k, (x, y) in diff.items())
        names = " ".join(f"--ignore {k}" for k in diff)
        raise CompareError(
            f"no cell of A matches a cell of B; labels that differ: {hint or 'none'}"
            + (f" (to compare across them: {names})" if names else "")
        )
    side_a, side_b = (
        _side(every_a, [a, *(more_a or [])], ignored, "A"),
        _side(every_b, [b, *(more_b or [])], ignored, "B"),
    )
    name = cell_names({**every_b, **every_a}, ignored)
    cells = _matched(side_a, side_b, name, options)
    pairs = list(zip(cells["run_id_a"].astype(str), cells["run_id_b"].astype(str), cells["cell"]))
    return Comparison(
        cells=cells,
        ops=op_changes(a.ops, b.ops, pairs, top=options.top_ops),
        criteria=options.criteria,
        ignored=ignored,
        notes=_notes(side_a, side_b, cells, options),
        **_unmatched(side_a, side_b, name),
    )


def _error(cell: pd.Series) -> str:
    text = str(cell.get("error") or cell["status"]).strip().splitlines()
    return (text[0] if text else str(cell["status"]))[:160]
