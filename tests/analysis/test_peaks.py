"""The table of published peaks: shipped in the package, every row sourced, matched as the table's rules say,
unknown devices and unconfirmed values left empty (never guessed)."""

from __future__ import annotations

import re

import pytest

from helpers import REPO
from neuronexp.analysis.peaks import given_peak, load_table, match_row, published_peak


def test_every_row_is_sourced_and_the_docs_list_every_row() -> None:
    rows = load_table()
    assert len(rows) == 32 and len({r["key"] for r in rows}) == 32
    docs = (REPO / "docs" / "peaks.md").read_text()
    for row in rows:
        assert row["source"].startswith("http"), row["key"]
        assert row["confidence"] in ("vendor_doc_read", "vendor_via_secondary", "secondary_only", "derived", "measured")
        assert f"`{row['key']}`" in docs, f"docs/peaks.md does not list {row['key']}"
        for pattern in row.get("match", []) + row.get("match_instance", []):
            re.compile(pattern)
        for name in row.get("unconfirmed", []):
            if name.startswith("flops_tflops."):  # an unconfirmed figure is null, so no % is computed from it
                assert (row["flops_tflops"] or {}).get(name.split(".", 1)[1]) is None, (row["key"], name)
            elif name == "flops_tflops":
                assert not any((row["flops_tflops"] or {}).values()), row["key"]
            elif name == "memory_bandwidth_gbs":
                assert row[name] is None, row["key"]


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA H200", "h200_sxm"),
        ("NVIDIA H200 NVL", "h200_nvl"),
        ("NVIDIA H100 80GB HBM3", "h100_sxm"),
        ("NVIDIA H100 PCIe", "h100_pcie"),
        ("NVIDIA H100", "h100_unknown"),
        ("NVIDIA A100-SXM4-80GB", "a100_sxm4_80gb"),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L4", "l4"),
        ("Tesla T4", "t4"),
        ("Tesla V100-SXM2-32GB", "v100_sxm2"),
        ("NVIDIA GH200 480GB", "gh200_96gb"),
        ("NVIDIA B200", "b200"),
    ],
)
def test_cuda_names_pick_their_row_in_file_order(name: str, key: str) -> None:
    assert match_row("cuda", {"device_name": name})["key"] == key


def test_unknown_and_unconfirmed_devices_get_no_figure() -> None:
    assert match_row("cuda", {"device_name": "NVIDIA GeForce RTX 4090"}) is None
    unknown = published_peak("cuda", {"device_name": "NVIDIA GeForce RTX 4090"}, "bfloat16")
    assert unknown.bandwidth_gbs is None and unknown.tflops is None and "roofline.peak_bw_gbs" in unknown.source
    bare = published_peak("cuda", {"device_name": "NVIDIA H100"}, "bfloat16")  # which H100 is not known: no guess
    assert bare.bandwidth_gbs is None and bare.tflops is None
    a10g = published_peak("cuda", {"device_name": "NVIDIA A10G"}, "bfloat16")
    assert a10g.bandwidth_gbs == 600 and a10g.tflops is None and "unconfirmed" in a10g.source


def test_h200_figures_and_the_tf32_switch() -> None:
    bf16 = published_peak("cuda", {"device_name": "NVIDIA H200"}, "bfloat16")
    assert (bf16.bandwidth_gbs, bf16.tflops, bf16.key) == (4800, 989.5, "h200_sxm")
    assert published_peak("cuda", {"device_name": "NVIDIA H200", "tf32": False}, "float32").tflops == 67
    assert published_peak("cuda", {"device_name": "NVIDIA H200", "tf32": True}, "float32").tflops == 494.5
    assert published_peak("cuda", {"device_name": "NVIDIA H200"}, "float64").tflops is None  # not in the table


def _neuron(instance_type: str | None, lnc: int | None, scope: str = "neuroncore") -> dict:
    """A Neuron backend's peak hint (NeuronBackend.peak_hint): one cell uses one logical NeuronCore."""
    return {"instance_type": instance_type, "lnc": lnc, "scope": scope}


def test_neuron_rows_are_one_logical_core_by_instance_type_and_lnc() -> None:
    assert match_row("neuron", _neuron("trn2.48xlarge", None))["key"] == "trn2_core_lnc2"  # LNC=2 is the trn2 default
    assert match_row("neuron", _neuron("trn2.48xlarge", 1))["key"] == "trn2_core_lnc1"
    assert match_row("neuron", _neuron("trn2n.48xlarge", 2, scope="chip"))["key"] == "trn2_chip"
    assert match_row("neuron", _neuron("Trn1", None))["key"] == "trn1_core"  # the driver's sysfs spelling
    assert match_row("neuron", _neuron("trn1n.32xlarge", None))["key"] == "trn1_core"
    assert match_row("neuron", _neuron("inf1.xlarge", None)) is None
    core = published_peak("neuron", _neuron("trn2.48xlarge", 2), "bfloat16")
    assert (core.bandwidth_gbs, core.tflops) == (725, 158) and "derived" in core.source
    unknown = published_peak("neuron", _neuron(None, None), "bfloat16")
    assert unknown.bandwidth_gbs is None and "an unknown instance type" in unknown.source
    trn3 = next(row for row in load_table() if row["key"] == "trn3_core_lnc2")
    assert trn3["flops_tflops"]["fp8"] is None  # plain FP8 on Trn3: not published
    assert "no published peak for backend nosuch" in published_peak("nosuch", {}, "bfloat16").source


def test_roofs_the_user_gives_replace_the_table() -> None:
    table = published_peak("cuda", {"device_name": "NVIDIA H200"}, "bfloat16")
    mine = given_peak(table, 4000.0, None)
    assert (mine.bandwidth_gbs, mine.tflops) == (4000.0, 989.5) and mine.source.startswith(
        "given: roofline.peak_bw_gbs"
    )
    assert given_peak(table, None, None) is table


@pytest.mark.parametrize("dtype, tflops", [("bfloat16", 989.5), ("float16", 989.5), ("float64", None)])
def test_tf32_changes_the_float32_roof_only(dtype: str, tflops: float | None) -> None:
    """With TF32 on, a bfloat16 or float16 cell keeps its own tensor-core figure, never TF32's."""
    for tf32 in (False, True):
        assert published_peak("cuda", {"device_name": "NVIDIA H200", "tf32": tf32}, dtype).tflops == tflops
    assert published_peak("cuda", {"device_name": "NVIDIA H200", "tf32": True}, "float32").tflops == 494.5
