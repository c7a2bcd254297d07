"""Numbers and names as people read them, and text made safe for Markdown tables. Plain functions;
imports nothing else from neuronexp."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, TypeGuard


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _shown(value: Any) -> TypeGuard[float]:
    """Not missing: a figure to print (a checker then reads it as a number, not None)."""
    return not _missing(value)


def fmt_us(value: float | None) -> str:
    """Three significant digits, in µs, ms or s."""
    if not _shown(value):
        return "—"
    for scale, unit in ((1e6, "s"), (1e3, "ms"), (1.0, "µs")):
        if abs(value) >= scale or unit == "µs":
            v = value / scale
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:,.0f} {unit}"
    raise AssertionError("unreachable")


def fmt_pct(value: float | None) -> str:
    return "—" if not _shown(value) else f"{100 * value:.1f}%"


UNPAIRED_MARK = "†"  # after a speedup timed apart from its baseline (analysis.paired)
UNPAIRED_LEGEND = f"{UNPAIRED_MARK} unpaired: timed apart from its baseline, so drift between the two is in it"
# Under every table of speedups with intervals: an interval holds this run's drift, not the host's change between runs
# (one run's interval held a rerun's figure 37% of the time on a shared VM: docs/history.md, "Measured").
INTERVAL_LEGEND = "(lo–hi): this run's 95% interval; on a changing host a rerun can land outside it"


def has_intervals(cells: Any) -> bool:
    """Some speedup in the table carries an interval (a sweep with a baseline whose cells were timed)."""
    return "speedup_ci_low" in cells and bool(cells["speedup_ci_low"].notna().any())


def fmt_speedup_ci(cell: Any) -> str:
    """A cell's speedup with its 95% interval, "×1.25 (1.18–1.31)", marked when unpaired; "" without a speedup."""
    value = cell.get("speedup_vs_baseline")
    if _missing(value) or not math.isfinite(float(value)):
        return ""
    low, high = cell.get("speedup_ci_low"), cell.get("speedup_ci_high")
    text = f"×{float(value):.2f}"
    if not (_missing(low) or _missing(high)) and math.isfinite(float(low)) and math.isfinite(float(high)):
        text += f" ({float(low):.2f}–{float(high):.2f})"
    return text + (UNPAIRED_MARK if cell.get("speedup_method") == "unpaired" else "")


def fmt_ratio(ratio: float) -> str:
    return "—" if not math.isfinite(ratio) else f"×{ratio:.3f} {(ratio - 1) * 100:+.1f}%"


def fmt_ci(low: float, high: float) -> str:
    return "—" if not (math.isfinite(low) and math.isfinite(high)) else f"{low:.3f}–{high:.3f}"


def fmt_delta(us: float) -> str:
    return ("+" if us >= 0 else "−") + fmt_us(abs(us))


def fmt_probability(p: float) -> str:
    """A share of bootstrap draws (P(B faster)): two decimals, "<0.01" and ">0.99" at the ends, "—" when NaN."""
    if not math.isfinite(p):
        return "—"
    return "<0.01" if p < 0.005 else ">0.99" if p > 0.995 else f"{p:.2f}"


def fmt_q(q: float) -> str:
    return "—" if not math.isfinite(q) else f"{q:.2g}" if q >= 1e-3 else "<0.001"


_COMPILED_GRAPH = re.compile(r"^## Call CompiledFxGraph \w+ ##$")


def short_op(name: str, width: int = 40) -> str:
    """Op names for narrow tables: Inductor's graph call loses its hash, long names are cut."""
    if _COMPILED_GRAPH.match(name):
        return "CompiledFxGraph call"
    return name if len(name) <= width else name[: width - 1] + "…"


def device_word(cell: Mapping[str, Any]) -> str:
    """What the "device" columns measured for this cell, in words for a table header."""
    return "CPU" if cell["device_time_source"] == "cpu_self_time" else str(cell["backend"]).upper()


def fmt_word(value: object) -> str:
    """A table value as one word: 2.0 (an integer column read back with gaps) is "2"."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def md_cell(text: object) -> str:
    """Text safe inside a Markdown table cell: a pipe would split the cell, a newline end the row, '<' open
    an HTML tag (error messages and op names are data, never markup)."""
    return (
        str(text)
        .replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\r", "")
        .replace("\n", "<br>")
    )


def first_line(text: object, limit: int | None = None) -> str:
    """The first line of `text` that is not blank, stripped, at most `limit` characters; "" when there is none.
    An exception's message can span many lines (Hydra's, OmegaConf's); a one-line message quotes the first."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if limit is None else line[:limit]


def yaml_error_line(exc: BaseException) -> str:
    """A YAML syntax error as one line with its file and line (PyYAML's message spans several)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc).splitlines()[0]
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and start is not None and mark is not start:
        problem += f" ({context} from line {start.line + 1})"
    if mark is None:
        return f"not valid YAML: {problem}"
    return f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}: not valid YAML: {problem}"


def fmt_bytes(value: float | None) -> str:
    """Decimal units (1 MB = 1e6 B), like the GB/s beside them."""
    if not _shown(value):
        return "—"
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def fmt_flops(value: float | None) -> str:
    """A FLOP count: 67.1 MFLOP, 1.2 TFLOP."""
    if not _shown(value):
        return "—"
    for scale, unit in ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1e3, "kFLOP")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} FLOP"
