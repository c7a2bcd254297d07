"""Hotspots by what they are (issue 43): a class spread over many instances, each called its own way, ranks by its
whole time; each entry says how sure its place is over the profile's cycles (or that one cycle cannot say); the
ranking reads each module's median over the cycles, not one disturbed cycle; the tree reaches nested layouts
through list containers. Module trees built here, their times set cycle by cycle (moduletime.module_rows)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from torch import nn

from neuronexp.moduletime.attribution import ModuleCycle
from neuronexp.moduletime.module_rows import module_rows
from neuronexp.moduletime.terminal_lines import module_lines, tree_lines
from neuronexp.moduletime.views import hot_units, of_run
from neuronexp.results.contract import LABEL_COLUMNS


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.o = nn.Linear(2, 2), nn.Linear(2, 2)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wi, self.wo = nn.Linear(2, 2), nn.Linear(2, 2)


class Layer(nn.Module):
    def __init__(self, part: nn.Module) -> None:
        super().__init__()
        self.part = part


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.ModuleList([Layer(Attention()), Layer(MLP())])


class Stack(nn.Module):
    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.block = nn.ModuleList([Block() for _ in range(blocks)])


class Model(nn.Module):
    """T5's layout in miniature: `encoder.block.N.layer.M.part`, six levels down through two lists."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder, self.decoder = Stack(2), Stack(1)
        self.extra = nn.ModuleList([Layer(Attention()) for _ in range(3)])
        self.lm_head = nn.Linear(2, 2)


ATTENTION = [f"encoder.block.{b}.layer.0.part" for b in (0, 1)] + ["decoder.block.0.layer.0.part"]
ATTENTION += [f"extra.{i}.part" for i in range(3)]
MLPS = [f"encoder.block.{b}.layer.1.part" for b in (0, 1)] + ["decoder.block.0.layer.1.part"]


def _table(times: dict[str, list[float]], forms: dict[str, str] | None = None) -> pd.DataFrame:
    """The modules table of Model with these self times (µs) per cycle, every module called once a step; `forms`:
    a path's input shapes (the attention modules' three ways of being called, say)."""
    model = Model()
    cycles = []
    for i in range(len(next(iter(times.values())))):
        cycle = ModuleCycle()
        cycle.calls = Counter({p: 1 for p, _ in model.named_modules()})
        cycle.self_device_us = Counter({p: t[i] for p, t in times.items()})
        cycle.self_cpu_us = Counter(cycle.self_device_us)
        cycles.append(cycle)
    steps = [sum(c.self_device_us.values()) for c in cycles]
    shapes = {
        p: {"flops": 0.0, "bytes_min": 0, "input_shapes": (forms or {}).get(p, "[1,8,2]"), "input_dtypes": "float32",
            "input_specs": "{}"}
        for p, _ in model.named_modules()
    }  # fmt: skip
    labels = {c: "x" for c in LABEL_COLUMNS} | {"run_id": "r", "compiled": False}
    return of_run(pd.DataFrame(module_rows(model, cycles, 1, steps, shapes, labels)))


def _even(attention: float, mlp: float, head: float = 10.0, cycles: int = 5) -> dict[str, list[float]]:
    times = {p: [attention] * cycles for p in ATTENTION}
    times.update({p: [mlp] * cycles for p in MLPS})
    return {**times, "lm_head": [head] * cycles}


THREE_FORMS = {p: f"[1,8,2], form={i % 3}" for i, p in enumerate(ATTENTION)}


def test_a_class_spread_over_instances_and_forms_ranks_by_its_whole_time() -> None:
    # Six attention modules of 90 µs called three ways (180 µs a way) against three MLPs of 150 µs (450 µs, one way):
    # by (class, shapes) the MLPs came first and attention never within the top two; by class attention leads.
    table = _table(_even(90.0, 150.0), THREE_FORMS)
    hot = hot_units(table)
    assert [t.rsplit(".", 1)[-1] for t in hot["module_type"]] == ["Attention", "MLP", "Linear"]
    first = hot.iloc[0]
    assert first["instances"] == 6 and first["forms"] == 3 and first["form_instances"] == 2
    assert first["total_device_us"] == pytest.approx(540.0) and first["form_total_device_us"] == pytest.approx(180.0)
    assert first["paths"][:2] == [ATTENTION[0], ATTENTION[3]]  # the study's form first: its instances in tree order
    assert first["share"] == pytest.approx(540.0 / (540 + 450 + 10))
    assert set(hot["noise"]) == {""}  # five identical cycles: every place is sure


def test_the_ranking_reads_each_modules_median_over_cycles_not_one_disturbed_cycle() -> None:
    # The median cycle by step time is the one the host disturbed: lm_head 500 µs there (10 µs in the others) and
    # the MLPs preempted the other way. Its attribution ranks lm_head second; each module's median does not.
    times = _even(90.0, 150.0)
    for p in ATTENTION:
        times[p] = [90.0, 90.0, 90.0, 120.0, 120.0]  # steps: 1000, 1000, 1070 (the median), 1180, 1180
    for p in MLPS:
        times[p] = [150.0, 150.0, 10.0, 150.0, 150.0]
    times["lm_head"] = [10.0, 10.0, 500.0, 10.0, 10.0]
    table = _table(times)
    assert table.at["lm_head", "total_device_us"] == 500.0  # the median cycle's attribution, as the tree shows it
    hot = hot_units(table)
    assert [t.rsplit(".", 1)[-1] for t in hot["module_type"]] == ["Attention", "MLP", "Linear"]
    assert hot["total_device_us"].tolist() == pytest.approx([540.0, 450.0, 10.0])
    assert "spread" in hot["noise"].iloc[-1]  # and its place is marked: 10 µs to 500 µs over the cycles


def test_shares_are_of_the_step_rebuilt_from_medians_not_of_a_root_every_disturbance_inflates() -> None:
    # A different module preempted by 1 ms in each of three cycles: every module's median is untouched, the root's
    # (its total in the median cycle) is 1 ms too high. The model's own ops outside any unit: 100 µs a step.
    times = {**_even(90.0, 150.0), "": [100.0] * 5}
    times[ATTENTION[0]] = [1090.0, 90.0, 90.0, 90.0, 90.0]
    times[MLPS[0]] = [150.0, 1150.0, 150.0, 150.0, 150.0]
    times["lm_head"] = [10.0, 10.0, 1010.0, 10.0, 10.0]
    table = _table(times)
    assert table.at["", "total_device_us_median"] == pytest.approx(2100.0)  # the root's median: three of five hit
    hot = hot_units(table)
    assert hot["share"].tolist() == pytest.approx([540 / 1100, 450 / 1100, 10 / 1100])  # was 540 / 2100


def test_each_place_says_whether_the_cycles_could_change_it() -> None:
    times = _even(90.0, 150.0)  # attention 540 µs, MLP 450 µs
    quiet = hot_units(_table(times))
    assert list(quiet["noise"]) == ["", "", ""] and set(quiet["cycles"]) == {5}
    # One cycle where attention drops to 420 µs (a spread of 22%, within noise.round_spread): below the MLPs' 450,
    # so the first two places could swap.
    for p in ATTENTION:
        times[p] = [90.0, 90.0, 90.0, 90.0, 70.0]
    hot = hot_units(_table(times))
    assert (
        hot["noise"].iloc[0] == "overlaps #2" and hot["noise"].iloc[1] == "overlaps #1" and hot["noise"].iloc[2] == ""
    )
    # Spread beyond noise.round_spread (25%) of its total: 30% is marked, 20% is not.
    for spread, marked in ((0.30, True), (0.20, False)):
        times = _even(90.0, 150.0)
        times["lm_head"] = [10.0, 10.0, 10.0, 10.0, 10.0 * (1 + spread)]
        assert (hot_units(_table(times))["noise"].iloc[2] == f"spread {spread:.0%}") is marked
    one = hot_units(_table(_even(90.0, 150.0, cycles=1)))
    assert set(one["noise"]) == {"one profiled cycle"}  # one step cannot say how sure its order is


def test_the_terminal_marks_an_unsure_place_and_says_why_once() -> None:
    times = _even(90.0, 150.0)
    for p in ATTENTION:
        times[p] = [90.0, 90.0, 90.0, 90.0, 70.0]
    lines = module_lines(_table(times), "CPU", 80)
    start = lines.index("Hotspots (study units by class: neuronexp-extract RUN_DIR --top K)")
    assert lines[start + 1].startswith("1. Attention encoder.block.0.layer.0.part +5") and "~540 µs" in lines[start + 1]
    assert "~" not in lines[start + 3]
    said = " ".join(lines[start + 4 :])  # wrapped at the width
    assert said == "~ its place could change over the 5 profiled cycles: #1 overlaps #2; #2 overlaps #1"
    assert max(map(len, lines)) <= 80
    once = " ".join(module_lines(_table(_even(90.0, 150.0, cycles=1)), "CPU", 80)[-2:])
    assert once.startswith("~ its place could change: from one profiled cycle: profile more cycles")
    assert "(profiler.schedule.repeat)" in once


def test_the_tree_opens_list_containers_to_reach_a_nested_layout() -> None:
    lines = tree_lines(_table(_even(90.0, 150.0)), 80)
    # encoder (1), block.0 (2), layer.0 (3), part (4): shown; before, depth 4 was the `layer` list itself.
    assert any(line.strip().startswith("part Attention") and line.startswith(" " * 8) for line in lines), lines
    assert any(line.strip().startswith("block.0 Block") for line in lines)
    assert not any(line.strip().startswith(("block ModuleList", "layer ModuleList")) for line in lines)


def test_a_table_written_before_the_cycles_were_kept_reads_back_and_says_so(tmp_path: Path) -> None:
    from neuronexp.results.table_file import read_table

    table = _table(_even(90.0, 150.0)).reset_index(drop=True)
    old = table.drop(columns=["cycles", "total_device_us_low", "total_device_us_median", "total_device_us_high"])
    path = tmp_path / "modules.parquet"
    pq.write_table(pa.Table.from_pandas(old, preserve_index=False), path)
    back = read_table(path, "modules").to_pandas()
    assert back["cycles"].isna().all() and back["total_device_us_median"].isna().all()
    hot = hot_units(of_run(back))
    assert hot["module_type"].iloc[0].endswith("Attention")  # ranked by the median cycle, as before
    assert set(hot["noise"]) == {"no profiled cycles recorded (an older table)"}
