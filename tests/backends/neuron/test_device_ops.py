"""Device time per op from Neuron Explorer's op-level tables (STAND-IN tables shaped like schema 7.4.0)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neuronexp.backends.neuron.device_ops import breakdown, framework_op
from neuronexp.backends.neuron.explorer_tables import find_profiles


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("NeuronLlamaDecoderLayer[1]/function[2]/aten.add", "aten::add"),  # the schema reference's example
        ("model[0]/aten.mul.Tensor", "aten::mul"),
        ("aten._fused_rms_norm", "aten::_fused_rms_norm"),
        ("model[0]/nki.custom_kernel", "nki::custom_kernel"),
        ("layer[0]/layer[1]", "layer"),
    ],
)
def test_framework_names_map_to_pytorch_op_names(name: str, op: str) -> None:
    assert framework_op(name) == op


def _write(folder: Path, table: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / f"{table}.parquet")


def test_an_ops_device_time_is_the_union_of_its_intervals(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "FrameworkInstruction",
        [
            {
                "framework_name": "m[0]/aten.mul",
                "time_intervals": "[[0, 10000], [20000, 30000]]",
                "start_ts": 0,
                "end_ts": 30000,
            },
            # overlaps the first row's first interval by 5 us: counted once
            {"framework_name": "m[0]/aten.mul", "time_intervals": "[[5000, 15000]]", "start_ts": 5000, "end_ts": 15000},
            # no intervals string: start_ts..end_ts
            {"framework_name": "m[0]/aten.add", "time_intervals": None, "start_ts": 40000, "end_ts": 42000},
            {"framework_name": None, "time_intervals": "[[0, 99999]]", "start_ts": 0, "end_ts": 99999},
        ],
    )
    _write(
        tmp_path,
        "OpcodeSummary",
        [
            {"engine": "vector", "opcode": "TENSOR_TENSOR", "active_time_ns": 7000},
            {"engine": "vector", "opcode": "TENSOR_TENSOR", "active_time_ns": 3000},
        ],
    )
    out = breakdown(find_profiles(tmp_path))
    assert out.framework_us == {"aten::mul": pytest.approx(25.0), "aten::add": pytest.approx(2.0)}
    assert out.unnamed_us == pytest.approx(99.999)  # the row Explorer could not name: kept apart, not dropped
    assert out.opcode_us == {"vector:TENSOR_TENSOR": pytest.approx(10.0)} and out.hlo_us == {}
    assert out.to_json()["framework_us"] == {"aten::mul": pytest.approx(25.0), "aten::add": pytest.approx(2.0)}


def test_timeline_units_come_from_schema_fields_and_profiles_add_up(tmp_path: Path) -> None:
    _write(tmp_path / "a", "FrameworkInstruction", [{"framework_name": "m/aten.mul", "time_intervals": "[[0, 4]]"}])
    _write(
        tmp_path / "a",
        "SchemaFields",
        [{"table_name": "FrameworkInstruction", "field_name": "start_ts", "field_unit": "microseconds"}],
    )
    _write(tmp_path / "b", "FrameworkInstruction", [{"framework_name": "m/aten.mul", "time_intervals": "[[0, 6000]]"}])
    _write(tmp_path / "c", "FrameworkInstruction", [{"framework_name": "m/aten.add", "time_intervals": "[[0, 6]]"}])
    _write(
        tmp_path / "c",
        "SchemaFields",
        [{"table_name": "FrameworkInstruction", "field_name": "start_ts", "field_unit": "fortnights"}],
    )
    out = breakdown(find_profiles(tmp_path))
    assert out.framework_us == {"aten::mul": pytest.approx(4.0 + 6.0)}
    assert out.notes == ["FrameworkInstruction.start_ts has unit 'fortnights': not read"]
