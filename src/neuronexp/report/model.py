"""The report model: what a run or sweep directory says, gathered once for the HTML and Markdown renderers.

Plain frames and strings only; formatting belongs to report.html / report.markdown, pictures to report.plots."""

from __future__ import annotations

import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from neuronexp.analysis.baseline import Baseline, describe_baseline, parse_baseline
from neuronexp.analysis.correctness import add_output_checks
from neuronexp.analysis.ops import fusion_table, hotspots
from neuronexp.analysis.variants import add_speedups, names
from neuronexp.formatting import yaml_error_line
from neuronexp.report.findings import INTERVAL_COLUMNS, findings, speedup_intervals
from neuronexp.results import LinkRefused, Results, read_any, read_regular

# env.json keys worth a line in the report, in reading order, with their labels.
_ENV_FIELDS = [
    ("host", "host"),
    ("platform", "platform"),
    ("python", "python"),
    ("torch_version", "torch"),
    ("torch_neuronx_version", "torch-neuronx"),
    ("neuronx_cc_version", "neuronx-cc"),
    ("cuda_runtime", "CUDA runtime"),
    ("cpu_count", "CPU cores"),
    ("torch_threads", "torch threads"),
    ("git_commit", "git commit"),
    ("git_dirty", "uncommitted changes"),
    ("neuronexp_version", "neuronexp"),
]
# env.json's CPU settings (host.machine), with their labels; the kernel command line stays in env.json.
_CPU_FIELDS = [
    ("governor", "CPU governor"),
    ("boost", "turbo/boost"),
    ("smt", "SMT"),
    ("isolcpus", "isolated CPUs"),
    ("nohz_full", "tickless CPUs"),
]
# A cell column naming the Neuron profile folder (the Neuron backend writes neuron_profile_dir, relative to
# the job directory); a `neuron_profile/` folder in the job directory is the fallback.
_PROFILE_COLUMN = re.compile(r"^neuron_profile")


class ReportError(ValueError):
    """The directory holds nothing to report on."""


@dataclass(kw_only=True)
class Report:
    source: Path
    out_dir: Path
    kind: str  # "sweep" or "run"
    title: str
    baseline: str | None  # its name (Baseline.name); None: no cell matched it, or none was set
    results: Results  # cells gain: variant, input, trace_link, profile_link (relative to out_dir)
    environment: list[tuple[str, str]] = field(default_factory=list)
    hotspots: dict[str, pd.DataFrame] = field(default_factory=dict)  # run_id → op, calls, self_device_us, share
    fusion: pd.DataFrame = field(default_factory=pd.DataFrame)
    findings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # job directories of planned cells that never finished
    # run_id, speedup, ci_low, ci_high over the baseline (findings.speedup_intervals): stated and plotted.
    intervals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=INTERVAL_COLUMNS))

    @property
    def cells(self) -> pd.DataFrame:
        return self.results.cells

    @property
    def shown_source(self) -> str:
        """The directory reported on as a shared report names it, never by its absolute path: its name where the report
        is written into it, else the way from the report's directory to it."""
        way = _relative(self.source, self.out_dir.resolve())
        return self.source.name if way == "." else way


def configured_baseline(job_dirs: list[Path]) -> Baseline | None:
    """The `baseline` the sweep was run with (from a job's config.yaml), as key: value pairs."""
    for d in job_dirs[:1]:
        if _present(d / "config.yaml"):
            # Read as data, never resolved: a results directory is not trusted config, and an interpolation in it
            # (`${oc.env:SECRET}`) must not read this machine's environment. neuronexp wrote it resolved.
            try:
                stream = io.StringIO(read_regular(d / "config.yaml").decode("utf-8"))
                stream.name = str(d / "config.yaml")  # what YAML's errors name the file by
                config = yaml.safe_load(stream)
            except LinkRefused:
                raise
            except yaml.YAMLError as exc:
                raise ReportError(yaml_error_line(exc)) from None
            except (OSError, UnicodeDecodeError) as exc:
                raise ReportError(
                    f"{d / 'config.yaml'}: cannot be read ({exc}); neuronexp wrote it, so it was changed since"
                ) from None
            if not isinstance(config, dict):
                raise ReportError(f"{d / 'config.yaml'}: not a neuronexp config (a YAML mapping of keys)")
            return parse_baseline(config.get("baseline"))
    return None


def _present(path: Path) -> bool:
    """A file to read (a link is there too: reading it refuses it, results.regular)."""
    return path.is_file() or path.is_symlink()


def _json_object(path: Path) -> dict:
    try:
        value = json.loads(read_regular(path))
    except ValueError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc}); neuronexp writes it, so it was changed since") from None
    if not isinstance(value, dict):
        raise ReportError(f"{path}: not the environment record neuronexp writes (a JSON object)")
    return value


def environment_rows(cells: pd.DataFrame, job_dirs: list[Path]) -> list[tuple[str, str]]:
    """(label, value) pairs; a value that differs across jobs lists every distinct value."""
    envs = [_json_object(d / "env.json") for d in job_dirs if _present(d / "env.json")]

    def distinct(values) -> str:
        vals = [str(v) for v in dict.fromkeys(values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
        return "; ".join(vals)

    rows = [
        (label, distinct(cells[col]))
        for label, col in (
            ("experiment", "experiment"),
            ("backend", "backend"),
            ("device", "device_name"),
            ("dtype", "dtype"),
            ("latency method", "timing_method"),
            ("profiled time source", "device_time_source"),
            ("allocator", "allocator"),
            ("malloc", "malloc"),
            ("threads", "threads"),
            ("timing rounds", "latency_rounds"),
            ("profile schedule", "profile_schedule"),
        )
        if col in cells.columns
    ]
    rows.append(("variants", distinct(cells["variant"])))
    rows.append(("shapes", distinct(cells.sort_values("numel", kind="stable")["input_shape"])))
    started = cells["started_at"].dropna().sort_values()
    if len(started):
        rows.append(("started", f"{started.iloc[0]} … {started.iloc[-1]}" if len(started) > 1 else started.iloc[0]))
    rows += [(label, distinct(env.get(key) for env in envs)) for key, label in _ENV_FIELDS]
    settings: list[dict] = [s if isinstance(s := env.get("cpu_settings"), dict) else {} for env in envs]
    rows += [(label, distinct(s.get(key) for s in settings)) for key, label in _CPU_FIELDS]
    neuron_env = {k: v for env in envs for k, v in (env.get("neuron_env") or {}).items()}
    rows += [(k, str(v)) for k, v in sorted(neuron_env.items())]
    return [(k, v) for k, v in rows if v]


def _relative(path: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(path, out_dir)).as_posix()


def links(cells: pd.DataFrame, by_run: dict[str, Path], out_dir: Path) -> tuple[list, list]:
    """Each cell's trace and Neuron profile folder, relative to the report (None when absent)."""
    profile_cols = [c for c in cells.columns if _PROFILE_COLUMN.match(c)]
    traces, profiles = [], []
    for _, cell in cells.iterrows():
        job = by_run.get(str(cell["run_id"]))
        trace = cell.get("trace_path")
        trace_file = (job / trace) if job is not None and isinstance(trace, str) and trace else None
        # A trace planted as a link is not linked to: the report points at the results' own files only.
        shown = trace_file is not None and trace_file.is_file() and not trace_file.is_symlink()
        traces.append(_relative(trace_file, out_dir) if shown and trace_file is not None else None)
        named = [Path(str(cell[c])) for c in profile_cols if isinstance(cell[c], str) and cell[c]]
        candidates = [p if p.is_absolute() or job is None else job / p for p in named]
        candidates += [job / "neuron_profile"] if job is not None else []
        found = next((p for p in candidates if p.exists()), None)
        profiles.append(_relative(found, out_dir) if found is not None else None)
    return traces, profiles


def build_report(source: Path, out_dir: Path | None = None, baseline: str | None = None, top: int = 8) -> Report:
    """Gather everything a report shows for a run or sweep directory. Raises ReportError where `source` holds no
    results, or only an empty table."""
    source = Path(source)
    if source.exists() and not source.is_dir():
        raise ReportError(
            f"{source}: is a file, not a directory; point at a run directory (with cells.parquet) "
            "or a sweep directory (with results/ or job directories)"
        )
    if not source.is_dir():
        raise ReportError(f"{source}: no such directory")
    out_dir = Path(out_dir) if out_dir is not None else source
    try:
        found = read_any(source)
    except FileNotFoundError as exc:
        raise ReportError(str(exc)) from None
    results, kind, by_run = found.results, found.kind, found.job_dir_of
    cells = results.cells
    if cells.empty:
        raise ReportError(f"{source}: the results hold no cells")
    dirs = list(dict.fromkeys(by_run.values()))
    rule = parse_baseline(baseline) if baseline is not None else configured_baseline(dirs)
    cells = add_speedups(cells, rule, results.samples)  # the same rule as the sweep's, whichever baseline was asked for
    cells = add_output_checks(cells, by_run, rule)  # against the same baselines, from the outputs the cells saved
    variant, _, inputs = names(cells)  # the names every table, plot and finding uses: never two cells alike
    cells = cells.assign(variant=variant, input=inputs.agg(" ".join, axis=1))
    if baseline is not None and rule and cells["baseline_run_id"].isna().all():
        modules = ", ".join(sorted(cells["module"].astype(str).unique()))
        raise ReportError(
            f"--baseline {baseline}: no cell matches it (modules here: {modules}); give KEY=VALUE pairs "
            "that pick one cell of each group, e.g. module=NAME or compile.enabled=false"
        )
    baseline = describe_baseline(rule) if cells["baseline_run_id"].notna().any() else None
    cells["trace_link"], cells["profile_link"] = links(cells, by_run, out_dir)
    results = results._replace(cells=cells)
    every = hotspots(results.ops, top=len(results.ops))  # every op of each cell: what the findings' "why" reads
    spots = {run: ops.head(top) for run, ops in every.items()}
    experiment = "; ".join(dict.fromkeys(cells["experiment"].astype(str)))
    title = f"neuronexp report: {experiment}" + (
        f" · {cells['variant'].iloc[0]} {cells['input_shape'].iloc[0]}" if kind == "run" else ""
    )
    return Report(
        source=source.resolve(),
        out_dir=out_dir,
        kind=kind,
        title=title,
        baseline=baseline,
        results=results,
        environment=environment_rows(cells, dirs),
        hotspots=spots,
        fusion=fusion_table(cells, results.ops),
        findings=findings(cells, results.samples, spots, all_ops=every),
        intervals=speedup_intervals(cells),  # what add_speedups put in the cells: the same figures, not resampled
        missing=found.missing,
    )
