"""Op names that group across runs: run-specific parts removed (normalize_op), the raw name kept in op_raw, the
kernels inside a compiled region shown; a real compiled CPU cell."""

from __future__ import annotations

from pathlib import Path

import pytest

import neuronexp
from helpers import FAST, run_cli, run_dirs
from neuronexp.analysis.ops import normalize_op, op_key


@pytest.mark.parametrize(
    "raw, grouped",
    [
        ("## Call CompiledFxGraph fuhtly57cgpykzjt5sfixcbtsovexapcx3flgfficsgu4ybswftc ##", "CompiledFxGraph call"),
        ("## Call CompiledFxGraph fb5ld7xhm2oas5zw2nmt5eewhfchf7uq5vvrfbivb3lm3oitafay ##", "CompiledFxGraph call"),
        ("graph_0_cpp_fused_add_mean_mul_rsqrt_0", "cpp_fused_add_mean_mul_rsqrt_0"),
        ("graph_12_triton_red_fused_add_mean_mul_pow_rsqrt_0", "triton_red_fused_add_mean_mul_pow_rsqrt_0"),
        ("triton_per_fused_mul_0_c4x5rpdbtk6o2ejqlw6ds4s3dwo5fi2a", "triton_per_fused_mul_0"),
        # Left alone: names without a run-specific part, long words, numbers, C++ signatures.
        ("aten::mul", "aten::mul"),
        ("Torch-Compiled Region: 0/0", "Torch-Compiled Region: 0/0"),
        ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)",
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)",
        ),
        ("abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz"),
        ("12345678901234567890123", "12345678901234567890123"),
    ],
)
def test_run_specific_parts_are_removed(raw: str, grouped: str) -> None:
    assert normalize_op(raw) == grouped
    assert op_key(raw, "CPU") == grouped and op_key(raw, "CUDA") == f"{grouped} [CUDA]"


@pytest.mark.slow
def test_a_compiled_cell_shows_its_kernels_and_groups_across_runs(tmp_path: Path) -> None:
    tops = []
    for _ in range(2):  # two runs in two processes: the graph counter and any hash may differ, the names not
        result = run_cli(["module=rmsnorm_compiled", "backend=cpu", "input.dtype=float32", *FAST], cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
    runs = run_dirs(tmp_path)
    names = []
    for job in runs:
        cells, ops, _ = neuronexp.load(job)
        kernels = ops[ops["op"].str.startswith("cpp_fused_")]
        assert len(kernels), list(ops["op"])  # Inductor's C++ kernel, recorded by name inside the graph call
        assert kernels["op_raw"].str.match(r"graph_\d+_cpp_fused_").all()
        graph = ops[ops["op_raw"].str.startswith("## Call CompiledFxGraph ")]
        assert list(graph["op"]) == ["CompiledFxGraph call"]
        tops.append(cells["top_op"].iloc[0])
        names.append(set(ops["op"]))
        assert list(cells["shape_dims"].iloc[0]) == [1, 8, 64] and all(list(d) == [1, 8, 64] for d in ops["shape_dims"])
    assert names[0] == names[1]
    assert tops[0] == tops[1]
