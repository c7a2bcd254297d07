"""The Summary Viewer's documented rules as the `neuron_insights` column, on STAND-IN Explorer tables."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neuronexp.backends.neuron.explorer import process_capture, read_output
from neuronexp.backends.neuron.explorer_tables import find_profiles
from neuronexp.backends.neuron.insights import insights


def _cols(**values: float) -> dict[str, float]:
    return {f"neuron_{k}": v for k, v in values.items()}


@pytest.mark.parametrize(
    ("values", "fired", "checked"),
    [
        # model FLOPS / active FLOPS = mfu% / tensor-engine active% (both over total_time): 10 / 25 = 40% < 50%
        (
            dict(mfu_estimated_percent=10.0, tensor_engine_active_time_percent=25.0),
            "model FLOPS 40% of active tensor-engine FLOPS (< 50%)",
            "low_model_flops",
        ),
        (dict(mfu_estimated_percent=13.0, tensor_engine_active_time_percent=25.0), None, "low_model_flops"),
        (
            dict(transpose_flops=11.0, hardware_flops=100.0),
            "transpose FLOPS 11% of hardware FLOPS (> 10%)",
            "transpose_flops",
        ),
        (dict(transpose_flops=10.0, hardware_flops=100.0), None, "transpose_flops"),
        (
            dict(spill_reload_bytes=26.0, hbm_read_bytes=100.0),
            "spill reload bytes 26% of HBM reads (> 25%)",
            "spill_reload",
        ),
        (dict(spill_reload_bytes=25.0, hbm_read_bytes=100.0), None, "spill_reload"),
    ],
)
def test_each_ratio_rule_fires_past_its_documented_threshold(
    values: dict, fired: str | None, checked: str, tmp_path: Path
) -> None:
    pq.write_table(pa.Table.from_pylist([{"total_time": 1.0}]), tmp_path / "Summary.parquet")
    out = insights(find_profiles(tmp_path), _cols(**values))
    assert out["neuron_insights_checked"] == checked
    assert out["neuron_insights"].startswith(fired) if fired else out["neuron_insights"] == ""


def test_rules_without_their_inputs_are_not_evaluated(tmp_path: Path) -> None:
    pq.write_table(pa.Table.from_pylist([{"total_time": 1.0}]), tmp_path / "Summary.parquet")
    # No tensor-engine time (an RMSNorm), no hardware FLOPs, a NaN: nothing to judge, and it says so.
    out = insights(
        find_profiles(tmp_path),
        _cols(
            mfu_estimated_percent=0.0,
            tensor_engine_active_time_percent=0.0,
            hardware_flops=0.0,
            spill_reload_bytes=math.nan,
            hbm_read_bytes=10.0,
        ),
    )
    assert out == {"neuron_insights": "", "neuron_insights_checked": ""}
    assert insights([], {}) == {"neuron_insights": None, "neuron_insights_checked": None}


def test_nki_coverage_counts_only_workloads_that_use_nki(tmp_path: Path) -> None:
    rows = [{"engine": "tensor", "nki_source_location": None}] * 4 + [{"engine": "vector", "nki_source_location": None}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "Instruction.parquet")
    out = insights(find_profiles(tmp_path), {})
    assert out == {
        "neuron_insights": "",
        "neuron_insights_checked": "nki_coverage",
    }  # no NKI at all: advice not about it
    rows[0] = {"engine": "tensor", "nki_source_location": "kernel.py:42"}
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "Instruction.parquet")
    fired = insights(find_profiles(tmp_path), {})["neuron_insights"]
    assert fired == (
        "NKI instruction coverage 25% on the tensor engine (< 50%): write NKI kernel code for the operations "
        "in this profile; NKI instruction coverage 0% on the vector engine (< 50%): write NKI kernel code for "
        "the operations in this profile"
    )


def _table(folder: Path, name: str, rows: list[dict]) -> None:
    pq.write_table(pa.Table.from_pylist(rows), folder / f"{name}.parquet")


def test_throttling_counts_only_while_the_tensor_engine_worked(tmp_path: Path) -> None:
    """The Viewer's rule is about FLOPs lost to throttling during *active* tensor-engine periods: throttling while the
    engine idles, or a ThrottleSummary share alone (it does not say when), is not a finding."""
    # ThrottleSummary alone: any throttling at all, active or not. Not evaluated.
    _table(tmp_path, "ThrottleSummary", [{"nc_idx": 0, "throttle_type": "all", "throttle_active_time_percent": 12.5}])
    assert insights(find_profiles(tmp_path), {}) == {"neuron_insights": "", "neuron_insights_checked": ""}
    # The tensor engine works 0-100 us (ns on the device clock); the vector engine all along.
    _table(
        tmp_path,
        "ActiveTime",
        [
            {"start_ts": 0, "end_ts": 100_000, "engine": "pe"},
            {"start_ts": 0, "end_ts": 900_000, "engine": "vector"},
        ],
    )
    idle = [{"timestamp": 200_000, "duration": 500_000, "k": 1, "n": 4, "type": "activity_0", "nc_idx": 0}]
    _table(tmp_path, "Throttle", idle)  # throttled hard, but only while the tensor engine idled
    assert insights(find_profiles(tmp_path), {}) == {"neuron_insights": "", "neuron_insights_checked": "throttling"}
    # Limited to 1/2 for 10 us of its 100 active us: 5% of its active time lost.
    _table(tmp_path, "Throttle", idle + [{"timestamp": 90_000, "duration": 20_000, "k": 1, "n": 2, "type": "x"}])
    busy = insights(find_profiles(tmp_path), {})
    assert busy["neuron_insights"] == (
        "active FLOPS throttling: 5.0% of the tensor engine's active time lost to throttling: investigate what "
        "throttles it"
    )
    assert busy["neuron_insights_checked"] == "throttling"


def test_an_insights_profile_through_the_cli(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "insights")
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "trace_info.pb").write_bytes(b"x")
    result = process_capture(tmp_path / "cap", tmp_path / "out", True, 60)
    fired = result.columns["neuron_insights"].split("; ")
    assert [f.split(" (")[0] for f in fired] == [
        "model FLOPS 20% of active tensor-engine FLOPS",
        "transpose FLOPS 20% of hardware FLOPS",
        "spill reload bytes 40% of HBM reads",
        "NKI instruction coverage 25% on the tensor engine",
        "active FLOPS throttling: 2.5% of the tensor engine's active time lost to throttling: investigate what "
        "throttles it",
    ]
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "insights_idle_throttle")  # throttled only while it idled
    idle = process_capture(tmp_path / "cap", tmp_path / "idle", True, 60).columns
    assert "throttling" not in idle["neuron_insights"] and idle["neuron_insights_checked"].endswith(",throttling")
    assert (
        result.columns["neuron_insights_checked"]
        == "low_model_flops,transpose_flops,spill_reload,nki_coverage,throttling"
    )
    assert read_output(tmp_path / "out")[0]["neuron_insights"] == result.columns["neuron_insights"]
