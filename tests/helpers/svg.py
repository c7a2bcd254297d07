"""The report's plot marks read back from its HTML (or a browser's DOM dump of it): which colour each variant
has in each plot, and which speedup bars carry an interval. Ids as report.plots writes them."""

from __future__ import annotations

import re
from collections import defaultdict

_MARK = re.compile(
    r'<g id="nx-(latency|speedup|ci|breakdown)-(\d+)-(\d+)"[^>]*>\s*<(?:path|text|use)\b[^>]*?style="([^"]*)"'
)
_SWATCH = re.compile(r'id="nx-colour-(\d+)"[^>]*style="background:\s*([^";]+)')


def _colour(style: str, prop: str) -> str | None:
    found = re.search(rf"(?:^|;)\s*{prop}:\s*(#[0-9a-fA-F]{{6}})", style)
    return found.group(1).lower() if found else None


def plot_marks(page: str) -> dict:
    """{"legend": {variant number: colour}, "latency"/"speedup"/"breakdown": {variant number: {colours}},
    "bars": {(variant, input)}, "intervals": {(variant, input)}}."""
    out: dict = {
        "legend": {int(i): c.strip().lower() for i, c in _SWATCH.findall(page)},
        "latency": defaultdict(set),
        "speedup": defaultdict(set),
        "breakdown": defaultdict(set),
        "bars": set(),
        "intervals": set(),
    }
    for kind, variant, item, style in _MARK.findall(page):
        v, k = int(variant), int(item)
        if kind == "latency":
            out["latency"][v].add(_colour(style, "stroke"))
        elif kind == "speedup":
            out["speedup"][v].add(_colour(style, "fill"))
            out["bars"].add((v, k))
        elif kind == "breakdown":
            out["breakdown"][v].add(_colour(style, "fill"))
        else:
            out["intervals"].add((v, k))
    return out


def check_one_colour_per_variant(page: str, variants: int) -> dict:
    """Assert: every variant has one colour, the legend's, in every plot it is in; colours differ between variants;
    every speedup bar has its interval. Returns the marks for further checks."""
    marks = plot_marks(page)
    legend = marks["legend"]
    assert sorted(legend) == list(range(variants)) and len(set(legend.values())) == variants, legend
    for kind in ("latency", "speedup", "breakdown"):
        for v, colours in marks[kind].items():
            assert colours == {legend[v]}, (kind, v, colours, legend)
    assert set(marks["latency"]) == set(range(variants)) and set(marks["breakdown"]) == set(range(variants))
    assert marks["bars"] and marks["intervals"] == marks["bars"], (marks["bars"], marks["intervals"])
    return marks
