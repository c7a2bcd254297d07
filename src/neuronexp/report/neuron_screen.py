"""The first-contact screen of a Trainium run: in a few lines, what worked for its cells, read from the row's columns
(docs/neuron.md, "The first-contact screen"): which sources gave device time and which one is used, whether NEFFs
were found beside the NTFFs, whether Neuron Explorer processed the capture, the capture window, the NEFF cache. Cells
with the same answers share one block; a run without Neuron rows prints nothing."""

from __future__ import annotations

from typing import Any

import pandas as pd

from neuronexp.formatting import fmt_us

# The answers that make a block: cells answering all of them alike are shown together.
FACTS = (
    "device_time_source",
    "device_time_sources",
    "device_time_check",
    "neuron_per_op_source",
    "neuron_sources_missing",
    "neuron_correlate_device_time",
    "neuron_capture_window",
    "neuron_capture_window_method",
    "neuron_neffs_beside_ntffs",
    "neuron_explorer_status",
    "neuron_neff_cache_dir",
    "neuron_neff_cache_source",
)
FIGURES = (
    ("key_averages()", "neuron_device_time_events_us"),
    ("host rows", "neuron_device_time_host_rows_us"),
    ("runtime trace", "neuron_device_time_runtime_us"),
    ("Explorer per-op", "neuron_device_time_explorer_us"),
)
CHECK_WORDS = {"agree": "sources agree (within 10%)", "disagree": "SOURCES DISAGREE (the figures: warnings)"}
# What neuron_correlate_device_time says, for the screen: given and taken (device time came through the profiler),
# given and ignored (none did), or never given.
CORRELATE_WORDS = {
    "taken": "correlate_device_time given and taken (device time came through the profiler)",
    "ignored": "correlate_device_time given but IGNORED (no device time came through the profiler)",
    "given": "correlate_device_time given",
    "off": "correlate_device_time off (profiler.neuron.correlate_device_time=false)",
    "not_passed": "correlate_device_time not given (this NeuronConfig has no such parameter)",
    "refused": "correlate_device_time refused by NeuronConfig (built without it)",
}
# The sources whose absence the screen names (Explorer's per-op table only through the per-op line: it needs
# neuron.debug_info, off by default); the profiler's two routes count as one.
NAMED_MISSING = {"neuron_runtime": "runtime trace"}
ADVICE = "paste this screen and a cell's neuron_profile/manifest.json into an issue: it says what to fix or report"
WHOLE = "nothing missing: device time through the profiler and the runtime trace, they agree, and it is split per op"


def _text(value: object, empty: str = "—") -> str:
    return empty if value is None or (isinstance(value, float) and value != value) or value == "" else str(value)


def _yes(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "— (no NTFF)"
    return "yes" if bool(value) else "NO"


def _span(values: pd.Series) -> str:
    """A source's per-step figure over the block's cells: one value, or the range and how many cells had it."""
    got = values.dropna()
    if got.empty:
        return "—"
    span = fmt_us(got.iloc[0]) if got.min() == got.max() else f"{fmt_us(got.min())}–{fmt_us(got.max())}"
    return span if len(got) == len(values) else f"{span} ({len(got)}/{len(values)} cells)"


def _missing_sources(one: pd.Series) -> list[str]:
    """The sources the block had no figure from, with why: the profiler's own routes (events or host rows) together,
    and the runtime trace."""
    text = one.get("neuron_sources_missing")
    why = dict(part.split(": ", 1) for part in (text if isinstance(text, str) else "").split("; ") if ": " in part)
    out = []
    if "profiler_device_events" in why and "profiler_host_rows" in why:
        out.append(f"device time through the profiler: {why['profiler_device_events']}")
    out += [f"{name}: {why[source]}" for source, name in NAMED_MISSING.items() if source in why]
    return out


def _problems(one: pd.Series) -> list[str]:
    """What keeps this block's figures from being whole, in words (empty when nothing)."""
    text = one.get("warnings")  # NaN (pandas 3's strings) or pd.NA where a cell has none: not the text "nan"
    warnings = (text if isinstance(text, str) else "").split(" | ")
    out = [] if _text(one.get("device_time_source")) == "none" else _missing_sources(one)
    out += [w for w in warnings if w.startswith(("no device time from", "capture window unverified", "per-op split"))]
    out += [w for w in warnings if w.startswith("device time sources disagree")]
    if _text(one.get("neuron_explorer_status")) != "ok":
        out.append(
            f"Neuron Explorer {_text(one.get('neuron_explorer_status'))}: the runtime trace, per-op time and the "
            "Summary columns need it (aws-neuronx-tools, neuron-explorer on PATH)"
        )
    if _yes(one.get("neuron_neffs_beside_ntffs")) == "NO":
        out.append("no NEFF beside an NTFF: Neuron Explorer cannot process that device profile")
    return out


def _cores(selections: Any) -> str:
    if len(selections) < 2:  # a row without the column, or with it empty, is a dash, not "0 selections"
        return str(selections[0]) if len(selections) else "—"
    return f"{len(selections)} selections (a slot each)"


def _block(cells: pd.DataFrame, label: bool) -> list[str]:
    one = cells.iloc[0]
    lines = [f"  {len(cells)} cell(s): " + ", ".join(f"{r.module} {r.input_shape}" for r in cells.itertuples())] * label
    check, correlate = _text(one["device_time_check"]), _text(one["neuron_correlate_device_time"])
    cores = cells["neuron_cores"].dropna().unique() if "neuron_cores" in cells else []
    lines += [
        f"  device time: from {_text(one['device_time_source'])} · {CHECK_WORDS.get(check, check)} · "
        f"{CORRELATE_WORDS.get(correlate, 'correlate_device_time ' + correlate)}",
        "    per step: " + " · ".join(f"{name} {_span(cells[col]) if col in cells else '—'}" for name, col in FIGURES),
        f"    per op: from {_text(one.get('neuron_per_op_source'))}",
        f"  capture: NEFFs beside the NTFFs {_yes(one['neuron_neffs_beside_ntffs'])} · window "
        f"{_text(one['neuron_capture_window'])} ({_text(one['neuron_capture_window_method'])}) · Neuron Explorer "
        f"{_text(one['neuron_explorer_status'])}",
        f"  NeuronCores: {_cores(cores)}",
        f"  NEFF cache: {_text(one['neuron_neff_cache_dir'], 'not given')} ({_text(one['neuron_neff_cache_source'])})",
    ]
    return lines + [f"  MISSING: {p}" for p in dict.fromkeys(_problems(one))]


def neuron_screen(cells: pd.DataFrame) -> list[str]:
    """The screen's lines for the Neuron rows of `cells` (a run's one row, or a sweep's); [] when there are none."""
    if "neuron_api" not in cells or "device_time_sources" not in cells:
        return []
    rows = cells[cells["neuron_api"].notna()]
    if rows.empty:
        return []
    # Each answer in words, a missing one (None, NaN, "") as "—": pandas keeps NaN through astype(str).
    keys = rows[[f for f in FACTS if f in rows]].map(_text).agg("|".join, axis=1)
    first = rows.iloc[0]
    lines = [
        f"Trainium first contact · torch-neuronx {_text(first.get('neuron_api_version'))} "
        f"({_text(first['neuron_api'])}) · {len(rows)} cell(s): what worked, what is missing"
    ]
    for key in dict.fromkeys(keys):
        lines += _block(rows[keys == key], label=keys.nunique() > 1)
    missing = any(line.startswith("  MISSING") for line in lines)
    return [*lines, f"  {ADVICE if missing else WHOLE}"]
