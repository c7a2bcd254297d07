"""What every report figure shares: a new figure, the SVG encoding, one colour per variant, how an input is named."""

from __future__ import annotations

import io

import pandas as pd
from matplotlib import colormaps, rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

DPI = 100
# Beyond this many bars a figure keeps the largest inputs only: a readable figure beats a complete one.
MAX_BARS = 36


class Chart(Figure):
    """A report figure that a notebook shows as the report does, as its SVG (`neuronexp.Results.plot`), with or without
    matplotlib's inline backend."""

    def _repr_svg_(self) -> str:
        return svg(self)


def new_figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure of that size (inches) and its one set of axes."""
    fig = Chart(figsize=(width, height))
    return fig, fig.add_subplot()


def svg(fig: Figure) -> str:
    """The figure as an <svg> element: text as text (smaller, selectable), ids the same on every run."""
    FigureCanvasSVG(fig)
    buf = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "neuronexp"}):
        fig.savefig(buf, format="svg", dpi=DPI, bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def variant_colours(variants: list[str]) -> dict[str, str]:
    """One colour per variant for the whole report, in the report's variant order (baseline first)."""
    palette = colormaps["tab10" if len(variants) <= 10 else "tab20"]
    return {v: to_hex(palette(i % palette.N)) for i, v in enumerate(variants)}


def largest_inputs(cells: pd.DataFrame) -> pd.DataFrame:
    """`cells` by input size, the smallest inputs dropped while there are more than MAX_BARS of them."""
    cells = cells.sort_values(["numel", "input_shape"], kind="stable")
    while len(cells) > MAX_BARS and cells["numel"].nunique() > 1:
        cells = cells[cells["numel"] > cells["numel"].min()]
    return cells


def input_labels(cells: pd.DataFrame) -> pd.Series:
    """The input a cell measured (report.model names it: shape, plus dtype, backend and swept input keys)."""
    return cells["input"].astype(str) if "input" in cells else cells["input_shape"].astype(str)
