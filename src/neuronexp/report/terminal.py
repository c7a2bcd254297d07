"""Terminal output: one cell's summary and a sweep's comparison table (rich).

Every value from the results is escaped: op names and error texts may contain "[...]", which rich would otherwise read
as markup."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from neuronexp.analysis.baseline import Baseline
from neuronexp.analysis.noise import NOISE_WARNING, NOISY_MARK, fmt_spread, noisy
from neuronexp.analysis.ops import hotspots
from neuronexp.analysis.roofline import fmt_share
from neuronexp.analysis.variants import comparison_grid
from neuronexp.formatting import (
    INTERVAL_LEGEND,
    UNPAIRED_LEGEND,
    device_word,
    fmt_bytes,
    fmt_flops,
    fmt_pct,
    fmt_us,
    has_intervals,
    short_op,
)
from neuronexp.moduletime.terminal_lines import module_lines
from neuronexp.report.fit import Trimmed, sweep_layout
from neuronexp.report.neuron_screen import neuron_screen
from neuronexp.report.summary import speedup_caption, sweep_findings
from neuronexp.report.tables import grid_table
from neuronexp.results import Results


def top_ops_table(results: Results, device: str, limit: int = 8) -> Table:
    table = Table(title=f"Top ops by self {device} time per step", title_justify="left")
    table.add_column("op")
    for name in ("calls", f"self {device}", "share"):
        table.add_column(name, justify="right")
    spots = hotspots(results.ops, top=limit).get(str(results.cells["run_id"].iloc[0]), pd.DataFrame())
    for row in spots.itertuples():
        table.add_row(
            escape(short_op(str(row.op), 60)), f"{row.calls:g}", fmt_us(row.self_device_us), fmt_pct(row.share)
        )
    return table


def print_cell(results: Results, out_dir: Path, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    cell = results.cells.iloc[0]
    console.print(
        f"[bold]{escape(str(cell['module']))}[/] · {escape(str(cell['backend']))} "
        f"({escape(str(cell['device_name']))}) · "
        f"{escape(str(cell['dtype']))} {escape(str(cell['input_shape']))}" + (" · compiled" if cell["compiled"] else "")
    )
    if cell["status"] == "cached":
        console.print(
            f"reused: this directory already holds this cell's results (run_id {escape(str(cell['run_id']))}); "
            "nothing was measured again"
        )
    if cell["status"] == "error":
        console.print(f"[red]cell failed:[/] {escape(str(cell['error']))}")
    else:
        device = device_word(cell)
        if not results.ops.empty:
            console.print(Trimmed(top_ops_table(results, device)))
        for line in module_lines(results.modules, device, console.width):  # profiler.modules=true
            console.print(escape(line), overflow="crop", no_wrap=True)
        rounds = int(cell.get("latency_rounds") or 1)
        spread = f", rounds spread {fmt_spread(cell['round_spread'])}" if rounds > 1 else ""
        threads = cell.get("threads")
        console.print(
            f"latency ({escape(str(cell['timing_method']))}, {cell['latency_samples']} samples"
            + (f" in {rounds} rounds" if rounds > 1 else "")
            + "): "
            f"median [bold]{fmt_us(cell['latency_median_us'])}[/] "
            f"(p10 {fmt_us(cell['latency_p10_us'])} – p90 {fmt_us(cell['latency_p90_us'])}{spread})"
            + (f" · {int(threads)} thread{'s' if threads != 1 else ''}" if threads == threads and threads else "")
        )
        dispatched, ops = cell.get("ops_dispatched"), f"{cell['device_ops']:g} ops"
        if dispatched == dispatched and dispatched is not None:
            ops = f"{dispatched:g} ops dispatched, {cell['device_ops']:g} executed"
        console.print(
            f"profiled per step: {device} time {fmt_us(cell['device_time_us'])}, {ops} · first call "
            f"{cell['first_call_s']:.3f} s"
        )
        for line in limit_lines(cell):
            console.print(escape(line))
        if noisy(cell):
            console.print(f"[yellow]{NOISY_MARK} noisy, not a finding:[/] {escape(str(cell.get('noise')))}")
        warnings = cell.get("warnings")  # null in the table (None, or NaN once pandas has read it): none
        text = warnings if isinstance(warnings, str) else ""
        if other := [w for w in text.split(" | ") if w and not w.startswith(NOISE_WARNING)]:
            console.print(f"[yellow]warnings:[/] {escape(' | '.join(other))}")
    for line in neuron_screen(results.cells):  # a Trainium cell: what worked, in a few lines
        console.print(escape(line))
    files = sorted(p.name for p in out_dir.iterdir() if not p.name.startswith("."))
    console.print(f"files in [cyan]{escape(str(out_dir))}[/]: {escape(', '.join(files))}")


def limit_lines(cell: pd.Series) -> list[str]:
    """A single cell's work, roofline, peak memory and output check, in words (results.contract defines each)."""
    if "bytes_min" not in cell or pd.isna(cell.get("bytes_min")):
        return []
    work = (
        f"work per call: {fmt_bytes(cell['bytes_min'])} at least (read {fmt_bytes(cell['bytes_read'])}, "
        f"written {fmt_bytes(cell['bytes_written'])}) · {fmt_flops(cell['flops'])}"
    )
    if isinstance(cell.get("flops_note"), str):
        work += f" ({cell['flops_note']})"
    lines = [work]
    achieved = f"achieved {cell['achieved_gbs']:.3g} GB/s"
    if pd.notna(cell.get("pct_peak_bw")):
        achieved += f" = {fmt_share(cell['pct_peak_bw'])} of {cell['peak_bw_gbs']:.3g} GB/s"
    if pd.notna(cell.get("flops")) and cell["flops"] > 0:
        achieved += f", {cell['achieved_tflops'] * 1e3:.3g} GFLOP/s"
        if pd.notna(cell.get("pct_peak_flops")):
            achieved += f" = {fmt_share(cell['pct_peak_flops'])} of {cell['peak_tflops'] * 1e3:.3g}"
    if isinstance(cell.get("bound"), str):
        achieved += f" · {cell['bound']}-bound"
    lines += [achieved, f"roofs: {cell.get('peak_source')}"]
    if pd.notna(cell.get("peak_memory_bytes")):
        lines.append(f"peak memory {fmt_bytes(cell['peak_memory_bytes'])} ({cell.get('peak_memory_method')})")
    if isinstance(cell.get("output_check"), str):
        lines.append(
            f"output check: {cell['output_check']}"
            + (f" ({cell['output_note']})" if isinstance(cell.get("output_note"), str) else "")
        )
    return lines


def rich_table(cells: pd.DataFrame, title: str, baseline: Baseline | None = None) -> Table:
    """The variants side by side, the report's section (report.tables.grid_table) as a rich table."""
    grid = grid_table(cells, baseline)
    table = Table(title=escape(title), show_lines=True, title_justify="left")
    for i, header in enumerate(grid.headers):
        table.add_column(escape(header), no_wrap=i < grid.labels)
    for row in grid.rows:
        table.add_row(*map(escape, row))
    return table


# A figure and its unit ("68.3 µs") are folded as one word: a no-break space while folding (textwrap breaks only at
# ASCII whitespace), a space again after.
_FIGURE_UNIT = re.compile(r"(\d) (ns|µs|ms|s)\b")


def print_findings(lines: list[str], console: Console) -> None:
    """Findings (report.findings), each folded at the console's width between words, its continuation lines
    indented: each input's line stands out."""
    for line in lines:
        glued = _FIGURE_UNIT.sub("\\1\u00a0\\2", line)
        folded = textwrap.fill(
            glued, console.width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
        )
        console.print(Text(folded.replace("\u00a0", " ")))


def print_sweep(
    cells: pd.DataFrame,
    baseline: Baseline | None,
    sweep_dir: Path,
    console: Console | None = None,
    not_run: int = 0,
    findings: list[str] | None = None,
) -> None:
    """The comparison, its findings (made by the sweep once, else here), each failed cell's whole error, and a last
    line: the error rows, `not_run` planned cells with no row (interrupted: not failures), where the results are
    (never wrapped: a path is pasted back)."""
    console = console or Console(highlight=False)
    failed = int((cells["status"] == "error").sum()) if not cells.empty else 0
    if not cells.empty:
        caption = speedup_caption(cells, baseline)
        title = (
            f"neuronexp sweep · {len(cells)} cells · median latency {caption} · profiled time/step · ops/step · "
            "hotspot · % of peak BW (or FLOP/s)"
        )
        # At the terminal's width: side by side when that fits, else one line per cell (report.fit).
        short = f"neuronexp sweep · {len(cells)} cells · {caption}"
        for part in sweep_layout(console, cells, short, baseline, rich_table(cells, title, baseline)):
            console.print(Trimmed(part))
        if "speedup_method" in cells and (cells["speedup_method"] == "unpaired").any():
            console.print(escape(UNPAIRED_LEGEND))
        if has_intervals(cells):
            console.print(escape(INTERVAL_LEGEND))
        # Per input: who wins or the tie, and why (the lines the sweep made once for summary.md too).
        print_findings(sweep_findings(cells, sweep_dir) if findings is None else findings, console)
        _, _, grid = comparison_grid(cells, baseline)
        for key, by_variant in grid.items():  # the table cuts an error's text; here it is whole
            for variant, cell in by_variant.items():
                if cell["status"] == "error":
                    console.print(
                        f"[red]failed:[/] {escape(variant)} · {escape(' '.join(map(str, key)))}: "
                        f"{escape(str(cell['error']))}"
                    )
    for line in neuron_screen(cells):  # Trainium cells: what worked, in a few lines
        console.print(escape(line))
    counts = ([f"[red]{failed} failed[/]"] if failed else []) + ([f"[yellow]{not_run} not run[/]"] if not_run else [])
    tail = ", ".join(counts) or "all cells ok"
    where, files = escape(str(sweep_dir / "results")), "(summary.md, cells/ops/samples .parquet + .csv)"
    line = f"{tail} · results in [cyan]{where}[/] {files}"
    if Text.from_markup(line).cell_len <= console.width:
        console.print(line)
    else:  # the path on a line of its own, never folded, whatever the width: it is pasted back as it is
        console.print(f"{tail} · results {files} in:")
        console.print(f"[cyan]{where}[/]", soft_wrap=True)
