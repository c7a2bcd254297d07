"""Sweep aggregation: read every job directory from disk, join, add speedups, write `results/`.

Reads the files the jobs left, not in-memory returns, so it works the same when jobs ran in other processes or on other
hosts that share the sweep directory."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from neuronexp.analysis.baseline import Baseline
from neuronexp.analysis.correctness import add_output_checks
from neuronexp.analysis.noise import Thresholds, judge_cells
from neuronexp.analysis.variants import add_speedups
from neuronexp.report.summary import summary_markdown, sweep_findings
from neuronexp.results import job_dirs_of, read_jobs, run_dirs, to_arrow
from neuronexp.results.files import atomic_write_text, write_csv, write_table


@dataclass
class SweepOutcome:
    cells: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    op_rows: int = 0  # (bench/aggregate_scale.py reports it)
    findings: list[str] = field(default_factory=list)  # report.summary.sweep_findings, made once

    @property
    def failed(self) -> int:
        return int((self.cells["status"] == "error").sum()) + len(self.missing)


def aggregate(
    sweep_dir: Path,
    baseline: Baseline | None,
    cached: set[str] | frozenset[str] = frozenset(),
    noise: Thresholds | None = None,
    tolerances: dict[str, tuple[float | None, float | None]] | None = None,
) -> SweepOutcome:
    """Write `results/{cells,ops,samples}.{parquet,csv}` and `results/summary.md` for a sweep. `cached`: run_ids reused
    from an earlier run of the sweep rather than measured now; their rows say `cached` here (the job's own files are
    left as they were written). `noise`: the sweep's thresholds, applied to every cell again (a reused cell was judged
    by the thresholds of its own run). `tolerances`: run_id → this invocation's (correctness.rtol, correctness.atol),
    which the output check applies instead of those a reused cell ran with (docs: applied when results are gathered)."""
    job_dirs = job_dirs_of(sweep_dir)
    tables, missing = read_jobs(job_dirs)
    cells = tables["cells"].to_pandas()
    cells.loc[cells["run_id"].isin(cached) & (cells["status"] == "ok"), "status"] = "cached"
    if noise is not None:
        cells = judge_cells(cells, noise)
    if tolerances and "output_rtol" in cells:
        now = cells["run_id"].map(tolerances)
        known = now.notna()
        for i, col in enumerate(("output_rtol", "output_atol")):
            cells.loc[known, col] = [float("nan") if t[i] is None else float(t[i]) for t in now[known]]
    cells = add_speedups(cells, baseline, tables["samples"].to_pandas())
    # Outputs compared from the files each cell saved: the cells ran in other processes, maybe on other hosts.
    cells = add_output_checks(cells, run_dirs(list(cells["run_id"]), job_dirs), baseline)
    tables["cells"] = to_arrow("cells", cells)
    out = sweep_dir / "results"
    if out.is_symlink():  # planted after the sweep's up-front check: never written through
        raise NotADirectoryError(f"{out} is a symbolic link; neuronexp never writes through one")
    out.mkdir(exist_ok=True)
    for name, table in tables.items():
        write_table(out / f"{name}.parquet", table)
        write_csv(out / f"{name}.csv", table)
    # The findings once, from the tables in hand: summary.md and the terminal print the same lines.
    found = sweep_findings(cells, sweep_dir, (tables["ops"].to_pandas(), tables["samples"].to_pandas()))
    atomic_write_text(out / "summary.md", summary_markdown(cells, missing, baseline, sweep_dir, found))
    return SweepOutcome(cells, missing, tables["ops"].num_rows, found)
