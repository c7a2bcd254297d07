"""Findings on a busy machine: the noise reasons once, grouped by kind, not on every line; a group's only quiet
cell never worded as its winner; and what the noise cannot touch (operators per step, output checks) said."""

from __future__ import annotations

import numpy as np

from neuronexp.analysis.baseline import parse_baseline
from neuronexp.analysis.variants import add_speedups
from neuronexp.report.busy import noise_line
from neuronexp.report.findings import findings
from neuronexp.results import frame

NOISE = {
    "rmsnorm_naive": "rounds spread 55%; other processes used 1.20 cores",
    "rmsnorm_compiled": "rounds spread ×510; other processes used 0.30 cores",
}
MEDIANS = {"rmsnorm_naive": 100.0, "rmsnorm_fused": 140.0, "rmsnorm_compiled": 60.0}
OPS = {"rmsnorm_naive": (6.0, 7.0), "rmsnorm_fused": (1.0, 7.0), "rmsnorm_compiled": (1.0, 1.0)}


def _tables(shapes=("[1,8,64]", "[1,64,512]")):
    rng = np.random.default_rng(0)
    cells, samples = [], []
    for shape in shapes:
        for module, median in MEDIANS.items():
            run = f"{module}-{shape}"
            lat = median * np.exp(0.01 * rng.standard_normal(15))
            dispatched, executed = OPS[module]
            cells.append(
                dict(
                    run_id=run,
                    experiment="x",
                    module=module,
                    compiled=module.endswith("compiled"),
                    backend="cpu",
                    device="cpu",
                    dtype="float32",
                    input_shape=shape,
                    numel=512,
                    status="ok",
                    latency_median_us=median,
                    latency_samples=15,
                    device_ops=executed,
                    ops_dispatched=dispatched,
                    device_time_us=median,
                    overrides=f"module={module}",
                    noisy=module in NOISE,
                    noise=NOISE.get(module),
                    output_check="baseline" if module == "rmsnorm_naive" else "pass",
                )
            )
            samples += [dict(run_id=run, sample=i, latency_us=float(v), round=i // 5) for i, v in enumerate(lat)]
    return add_speedups(frame("cells", cells), parse_baseline("rmsnorm_naive")), frame("samples", samples)


def test_noise_is_said_once_and_the_only_quiet_cell_is_not_a_winner() -> None:
    cells, samples = _tables()
    lines = findings(cells, samples, {})
    first, *groups, last = lines
    assert first.startswith(
        "noisy, not findings: 4 of 6 cells (rounds spread 55%–×510 in 4; other processes used 0.30–1.20 cores in 4)"
    )
    assert sum("rounds spread" in ln for ln in lines) == 1  # not once per group
    assert len(groups) == 2
    for line in groups:
        assert "only rmsnorm_fused was measured quietly (140 µs), so no comparison" in line
        assert (
            "the noisy medians of rmsnorm_naive, rmsnorm_compiled were lower: it is not known to be the fastest" in line
        )
        assert "fastest (" not in line
    assert last.startswith(
        "what the noise does not touch: operators per step rmsnorm_naive 6→7 ops, "
        "rmsnorm_fused 1→7 ops, rmsnorm_compiled 1 ops; output check 4 of 4 pass"
    )


def test_a_quiet_machine_gets_no_noise_lines() -> None:
    cells, samples = _tables(("[1,8,64]",))
    cells = cells.assign(noisy=False, noise=None)
    lines = findings(cells, samples, {})
    assert len(lines) == 1 and lines[0].startswith("[1,8,64]: rmsnorm_compiled fastest")
    assert noise_line(cells.assign(_variant="v", _input="i").to_dict("records")) is None
