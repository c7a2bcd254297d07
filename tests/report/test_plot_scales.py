"""The report figures' documented layout rules on synthetic cells with known spans: log axes once sizes or
latencies span two decades (speedups: a factor of 20), and at most 36 bars in the op breakdown (the largest
inputs kept, the title says how many of how many)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from matplotlib.axes import Axes

from neuronexp.report.opplots import breakdown_plot
from neuronexp.report.plotkit import MAX_BARS
from neuronexp.report.plots import latency_plot, speedup_plot

COLOURS = {"naive": "#1f77b4", "fused": "#ff7f0e"}


def _cells(
    numels: list[int], latency: dict[str, list[float]], speedup: dict[str, list[float]] | None = None
) -> pd.DataFrame:
    rows = []
    for variant, medians in latency.items():
        for i, (numel, median) in enumerate(zip(numels, medians)):
            shape = f"[1,{numel}]"
            rows.append(
                dict(
                    run_id=f"{variant}-{numel}",
                    status="ok",
                    variant=variant,
                    module=variant,
                    numel=numel,
                    input_shape=shape,
                    input=shape,
                    dtype="float32",
                    backend="cpu",
                    latency_median_us=median,
                    latency_p10_us=median * 0.95,
                    latency_p90_us=median * 1.05,
                    device_time_us=median,
                    baseline_run_id=f"naive-{numel}",
                    speedup_vs_baseline=(speedup or {}).get(variant, [1.0] * len(numels))[i],
                )
            )
    return pd.DataFrame(rows)


@pytest.fixture
def scales(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The scales each figure set on its axes (matplotlib's own setters, still called)."""
    seen: dict[str, list[str]] = {"x": [], "y": []}
    for axis in ("x", "y"):
        real = getattr(Axes, f"set_{axis}scale")

        def setter(self, value, *args, _real=real, _axis=axis, **kwargs):
            seen[_axis].append(value)
            return _real(self, value, *args, **kwargs)

        monkeypatch.setattr(Axes, f"set_{axis}scale", setter)
    return seen


NO_SAMPLES = pd.DataFrame(columns=["run_id", "sample", "latency_us"])


@pytest.mark.parametrize(
    ("numels", "medians", "x_log", "y_log"),
    [
        ([512, 4096, 32768], [10.0, 40.0, 300.0], False, False),  # sizes ×64, latencies ×30 (p90/p10 ×33): linear
        ([512, 8192, 131072], [10.0, 40.0, 300.0], True, False),  # sizes ×256: log x
        ([512, 4096, 32768], [10.0, 200.0, 5000.0], False, True),  # latencies ×500: log y
    ],
)
def test_the_latency_plot_goes_log_once_a_span_reaches_two_decades(scales, numels, medians, x_log, y_log) -> None:
    cells = _cells(numels, {"naive": medians, "fused": [m / 2 for m in medians]})
    assert latency_plot(cells, NO_SAMPLES, COLOURS).startswith("<svg")
    assert ("log" in scales["x"]) == x_log and ("log" in scales["y"]) == y_log, scales


@pytest.mark.parametrize(("fused", "y_log"), [([1.2, 3.0, 5.0], False), ([1.2, 3.0, 30.0], True)])
def test_the_speedup_plot_goes_log_once_speedups_span_a_factor_of_20(scales, fused, y_log) -> None:
    numels = [512, 4096, 32768]
    cells = _cells(numels, {"naive": [10.0] * 3, "fused": [10.0 / s for s in fused]}, speedup={"fused": fused})
    intervals = pd.DataFrame(columns=["run_id", "ci_low", "ci_high"])
    assert speedup_plot(cells, "naive", COLOURS, intervals).startswith("<svg")
    assert ("log" in scales["y"]) == y_log, scales


def _breakdown(shapes: int) -> tuple[str, pd.DataFrame]:
    numels = [64 * (i + 1) for i in range(shapes)]
    cells = _cells(numels, {"naive": [10.0] * shapes, "fused": [5.0] * shapes})
    spots = {r: pd.DataFrame({"op": ["aten::mul"], "share": [0.7]}) for r in cells["run_id"]}
    return breakdown_plot(cells, spots, COLOURS), cells


def test_the_breakdown_keeps_at_most_36_bars_from_the_largest_inputs() -> None:
    assert MAX_BARS == 36
    page, cells = _breakdown(20)  # 40 cells: the two smallest inputs go, 36 bars stay
    labels = re.findall(r'<g id="nx-breakdown-\d+-(\d+)"', page)
    assert len(labels) == 36
    assert "largest inputs only: 36 of 40 cells" in page
    for gone in ("[1,64]", "[1,128]"):
        assert f"· {gone}<" not in page and f"· {gone} " not in page
    assert "· [1,1280]" in page and "· [1,192]" in page
    # At the cap exactly: every bar, no title.
    page, _ = _breakdown(18)
    assert len(re.findall(r'<g id="nx-breakdown-\d+-\d+"', page)) == 36 and "largest inputs only" not in page
    assert "· [1,64]<" in page  # the smallest input's label, as the check above would have seen it
