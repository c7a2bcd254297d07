"""A cell against the host's available memory, when it is planned (engine.plan): one that cannot fit is refused in one
line before anything is allocated; one that nearly fills it carries a warning in its row."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from helpers import FAST
from neuronexp.config import BackendName, CellSpec, ConfigError, DType, InMemory, InputConfig, RunConfig, TimingConfig
from neuronexp.engine.memory_fit import check_fits, input_bytes, least_bytes
from neuronexp.host.memory import available_bytes

GiB = 1 << 30
RMS = {"_target_": "neuronexp.modules.NaiveRMSNorm", "hidden_size": 64}


def _spec(shape: list[int], dtype: DType = DType.float32, relocate: bool = True, **inputs) -> CellSpec:
    cfg = RunConfig(
        module=RMS,
        input=InputConfig(shape=shape, dtype=dtype, **inputs),
        backend=BackendName.cpu,
        timing=TimingConfig(relocate=relocate),
    )
    return CellSpec(config=cfg, run_id="x", experiment="t", module_name="m")


def test_the_inputs_are_counted_from_their_specs() -> None:
    # the first input, a tensor in args (its own dtype), one in kwargs following the compute dtype, a factory (0)
    spec = _spec(
        [1, 1024, 1024],
        args=[{"shape": [1024], "dtype": "int64"}, 3, {"_target_": "neuronexp.modules.factories.causal_mask"}],
        kwargs={"mask": {"shape": [2, 8]}, "flag": True},
    )
    assert input_bytes(spec) == 1024 * 1024 * 4 + 1024 * 8 + 2 * 8 * 4
    assert input_bytes(_spec([4, 8], DType.bfloat16)) == 4 * 8 * 2


def test_the_bound_counts_the_relocated_copy_and_a_module_from_memory() -> None:
    assert least_bytes(_spec([1, 1024, 1024]))[0] == 2 * 4 * GiB // 1024
    assert least_bytes(_spec([1, 1024, 1024], relocate=False))[0] == 4 * GiB // 1024
    module, x = torch.nn.Linear(256, 256), torch.randn(4, 256)
    memory = CellSpec(
        config=_spec([4, 256]).config, run_id="m", experiment="t", module_name="m", memory=InMemory(module, (x,))
    )
    assert least_bytes(memory)[0] == (256 * 256 + 256) * 4 + 4 * 256 * 4  # its copy, and its inputs' copy


def test_a_cell_that_cannot_fit_is_refused_naming_its_shape_and_the_memory() -> None:
    big = _spec([1, 65536, 65536])  # 16 GiB of float32, 32 GiB with the relocated copy
    with pytest.raises(ConfigError) as err:
        check_fits([_spec([1, 8, 64]), big], available=23 * GiB)
    line = str(err.value)
    assert line.startswith("input.shape=[1,65536,65536]: the cell needs at least 34.4 GB of host memory while it runs")
    assert "its inputs, 17.2 GB, twice" in line and "this host has 24.7 GB available (MemAvailable)" in line
    assert "\n" not in line


def test_a_cell_near_the_limit_is_warned_about_and_an_unknown_limit_checks_nothing() -> None:
    small, near = _spec([1, 8, 64]), _spec([1, 65536, 65536], relocate=False)  # 16 GiB of 23
    warnings = check_fits([small, near], available=23 * GiB)
    assert warnings[0] is None and warnings[1] is not None and "more than half of the 24.7 GB" in warnings[1]
    assert check_fits([_spec([1, 65536, 65536])], available=None) == [None]


def test_the_available_memory_is_memavailable(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   24230836 kB\n")
    assert available_bytes(meminfo) == 24230836 * 1024
    meminfo.write_text("MemTotal:       24576000 kB\n")  # a kernel before 3.14
    assert available_bytes(meminfo) is None and available_bytes(tmp_path / "none") is None


def test_a_run_that_cannot_fit_is_refused_before_anything_is_allocated_or_written(cli, tmp_path: Path) -> None:
    # 2^40 float32 elements: 4 TiB, more than any host here has; built, it would fail or swap instead.
    shape = "[1,1048576,1048576]"
    keep = [a for a in FAST if not a.startswith("input.shape=")]
    result = cli(*keep, f"input.shape={shape}", "input.dtype=float32", "backend=cpu")
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"neuronexp: error: input.shape={shape}: the cell needs at least")
    assert not (tmp_path / "outputs").exists()
