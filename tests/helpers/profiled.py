"""A run profiled with profiler.modules=true in this process, as a single run leaves its directory (tables and
config.yaml): what neuronexp-extract reads, in about a second for a small module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf


def profiled_run(run: Path, module: dict[str, Any], shape: list[int], cycles: int = 3, **inputs: Any) -> Path:
    """`module` run once into `run` (created): float32 input of `shape` (more InputConfig keys in `inputs`), `cycles`
    profiled cycles of one step each, a short timed pass, no host probe."""
    from neuronexp.cell.group import run_cell
    from neuronexp.config import CellSpec, DType, InputConfig, ProfilerConfig, RunConfig, ScheduleConfig, TimingConfig
    from neuronexp.config.schema import BackendName, ProbeMode, RooflineConfig
    from neuronexp.engine.ownership import mark

    cfg = RunConfig(
        module=module,
        input=InputConfig(shape=shape, dtype=DType.float32, **inputs),
        backend=BackendName.cpu,
        profiler=ProfilerConfig(schedule=ScheduleConfig(0, 1, 1, cycles), modules=True),
        timing=TimingConfig(min_seconds=0, warmup=1, iters=2, min_iters=1, rounds=1),
        roofline=RooflineConfig(probe=ProbeMode.off),
    )
    run.mkdir(parents=True)
    cell = run_cell(CellSpec(config=cfg, run_id="study", experiment="t", module_name="m"), run).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    (run / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg), resolve=True))  # as engine.job does
    mark(run, "run")
    return run
