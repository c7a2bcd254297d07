"""docs/columns.md's op-table example, run as written on an ops table with five profiler cycles: it gives the time
per step, not the five cycles' sum (issue 26, item 5). (The README carried one too until issue 34.)"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from helpers import REPO


def _ops() -> pd.DataFrame:
    # Two cells, five cycles; aten::mul runs twice a step (3 + 4 µs), aten::add once (2 µs); cycle 2 is slow.
    rows = []
    for module in ("rmsnorm_naive", "rmsnorm_fused"):
        for cycle in range(5):
            slow = 10.0 if cycle == 2 else 1.0
            rows += [
                dict(
                    run_id=module,
                    module=module,
                    input_shape="[1,8,64]",
                    cycle=cycle,
                    op="aten::mul",
                    self_device_us=3.0 * slow,
                ),
                dict(
                    run_id=module,
                    module=module,
                    input_shape="[1,8,64]",
                    cycle=cycle,
                    op="aten::mul",
                    self_device_us=4.0 * slow,
                ),
                dict(
                    run_id=module,
                    module=module,
                    input_shape="[1,8,64]",
                    cycle=cycle,
                    op="aten::add",
                    self_device_us=2.0 * slow,
                ),
            ]
    return pd.DataFrame(rows)


def _example(doc: str) -> list[str]:
    code = "\n".join(re.findall(r"```python\n(.*?)```", (REPO / doc).read_text(), re.S))
    lines = [ln.split("  #")[0] for ln in code.splitlines() if "ops." in ln or ln.startswith("per_cycle")]
    assert lines, f"{doc} has no op-table example"
    return lines


@pytest.mark.parametrize("doc", ["docs/columns.md"])
def test_the_op_table_example_gives_time_per_step(doc: str) -> None:
    scope = {"ops": _ops()}
    *setup, last = _example(doc)
    for line in setup:
        exec(line, scope)
    per_step = eval(last, scope)
    mul = per_step[[k for k in per_step.index if "aten::mul" in k and "rmsnorm_fused" in k][0]]
    add = per_step[[k for k in per_step.index if "aten::add" in k and "rmsnorm_fused" in k][0]]
    assert (mul, add) == (7.0, 2.0)  # one step's, not 5 cycles' (35) nor dragged by the slow cycle (mean 19.6)
