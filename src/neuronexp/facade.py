"""`neuronexp.Results`: a run's or sweep's tables and, as methods, what the reader commands do with them (HTA's
TraceAnalysis is the model: one object, methods that delegate to the analyses): the findings as data and in words, the
hotspots, a comparison with another result set, the report and the speedup chart, each by the code its command runs.
A notebook shows it as a short table of the findings. `neuronexp.load`, `run` and `sweep` return it."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from neuronexp.analysis.ops import hotspots
from neuronexp.compare import CompareOptions, compare
from neuronexp.compare.join import Comparison
from neuronexp.formatting import fmt_speedup_ci, fmt_us
from neuronexp.report.findings import FINDING_COLUMNS, finding_table
from neuronexp.report.html import render_results
from neuronexp.report.model import Report, ReportError, build_report
from neuronexp.report.plots import report_colours, speedup_figure
from neuronexp.report.tables import status_line
from neuronexp.report.write import write_report
from neuronexp.results import Results as Tables
from neuronexp.results import load as load_tables


def load(*paths: str | os.PathLike[str]) -> Results:
    """`neuronexp.load`: the tables of run or sweep directories (or glob patterns), as results.load reads them."""
    return Results.of_tables(load_tables(*paths))


class Results(Tables):
    """The tables (`cells, ops, samples = res` still unpacks; `res.modules` as before) and the readers' methods. The
    methods read the files of the one run or sweep directory the tables were loaded from (`source`)."""

    @classmethod
    def of_tables(cls, tables: Tables) -> Results:
        return cls(tables.cells, tables.ops, tables.samples, tables.__dict__.get("_modules"))

    @property
    def source(self) -> Path | None:
        """The run or sweep directory the tables came from; None when they came from several, or from none."""
        dirs = self._sources()
        return Path(dirs[0]) if len(dirs) == 1 else None

    def _sources(self) -> list[str]:
        cells = self.cells
        return list(dict.fromkeys(cells["source_dir"].dropna().astype(str))) if "source_dir" in cells else []

    def _directory(self) -> Path:
        """`source`, or ReportError saying why there is none."""
        if self.source is None:
            held = ", ".join(self._sources()) or "none: tables built in memory"
            raise ReportError(f"this needs the results of one run or sweep directory; these come from {held}")
        return self.source

    @cached_property
    def _report(self) -> Report:
        """The report's model of `source` (report.model), read once: findings, hotspots and the chart all use it."""
        return build_report(self._directory())

    @cached_property
    def findings(self) -> pd.DataFrame:
        """The findings as data (report.findings.finding_table): one row per cell with its group's input, its name,
        whether it is the baseline, its median, its speedup with the 95% interval, its outcome in the group
        (fastest, tie, slower, noisy, no finding) and the group's sentence, as neuronexp-report words it."""
        report = self._report
        every = hotspots(report.results.ops, top=len(report.results.ops))
        return finding_table(report.cells, report.results.samples, report.hotspots, all_ops=every)

    def hotspots(self, top: int = 8) -> pd.DataFrame:
        """Each cell's `top` operators by self time per profiled step (the report's Hotspots): variant, input, op,
        calls and self time per step, share of the step."""
        report = self._report
        named = report.cells.assign(run_id=report.cells["run_id"].astype(str)).set_index("run_id")
        frames = [
            ops.assign(variant=named.at[run, "variant"], input=named.at[run, "input"], run_id=run)
            for run, ops in hotspots(report.results.ops, top=top).items()
            if run in named.index
        ]
        columns = ["variant", "input", "op", "calls", "self_device_us", "share", "run_id"]
        return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)

    def compare(self, other: Tables, **options: Any) -> Comparison:
        """`neuronexp-compare SELF OTHER`: `other` (B) against these results (A), cell by cell; `options` are
        CompareOptions' fields (ignore, criteria, seed, host_reference, paired, ...)."""
        return compare(self, other, CompareOptions(**options))

    def report(self, path: str | os.PathLike[str] | None = None, baseline: str | None = None, top: int = 8) -> Path:
        """`neuronexp-report SOURCE --out PATH`: report.html and report.md written (default: into `source`); the
        page's path."""
        source = self._directory()
        out = Path(path) if path is not None else source
        write_report(source, out, baseline=baseline, top=top)
        return out / "report.html"

    def plot(self) -> Figure:
        """The report's speedup chart (report.plots.speedup_figure): every cell's speedup over its baseline per input,
        with the 95% interval the findings state as whiskers. A notebook draws it."""
        report = self._report
        figure = speedup_figure(report.cells, report.baseline, report_colours(report), report.intervals)
        if figure is None:
            raise ReportError("no speedup to draw: no cell has a baseline (sweep with baseline=MODULE, or report one)")
        return figure

    def _summary(self) -> tuple[str, list[list[str]], list[str]]:
        """The first line, the findings table's rows and the sentences, as both reprs show them."""
        tables = f"cells ({len(self.cells)}), ops ({len(self.ops)}), samples ({len(self.samples)})"
        try:
            report, found = self._report, self.findings
        except ReportError:
            where = f" from {', '.join(self._sources())}" if self._sources() else ""
            return f"neuronexp.Results{where} · tables: {tables}", [], []
        head = f"neuronexp.Results · {report.kind} {self.source} · {status_line(report)}"
        head += f" · baseline {report.baseline or '—'} · tables: {tables}"
        cells = report.cells.set_index(report.cells["run_id"].astype(str))
        rows = [
            [r.input, r.variant, fmt_us(r.latency_median_us), fmt_speedup_ci(cells.loc[r.run_id]) or "—", r.outcome]
            for r in found.itertuples()
        ]
        return head, rows, list(report.findings)

    def __repr__(self) -> str:
        head, _, sentences = self._summary()
        return "\n".join([head, *sentences])

    def _repr_html_(self) -> str:
        head, rows, sentences = self._summary()
        return render_results(head, ["input", "variant", "median", "speedup (95% CI)", "outcome"], rows, sentences)


__all__ = ["FINDING_COLUMNS", "Results", "load"]
