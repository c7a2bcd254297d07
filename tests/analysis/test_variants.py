"""Names that never collide and baselines as a rule (analysis.variants), on result tables built by hand."""

from __future__ import annotations

import itertools

import pytest

from neuronexp.analysis.baseline import describe_baseline, parse_baseline
from neuronexp.analysis.overrides import normalize, split_overrides
from neuronexp.analysis.variants import add_speedups, baseline_run_ids, cell_labels, comparison_grid, names
from neuronexp.results import frame


def _cells(rows: list[dict]):
    base = dict(experiment="adhoc", compiled=False, backend="cpu", device="cpu", dtype="float32", numel=8, status="ok")
    out = []
    for i, row in enumerate(rows):
        overrides = ",".join(f"{k}={v}" for k, v in sorted(row.pop("over", {}).items()))
        out.append({**base, "run_id": f"r{i}", "latency_median_us": 10.0 * (i + 1), "overrides": overrides, **row})
    return frame("cells", out)


def test_a_swept_constructor_argument_enters_the_name() -> None:
    # The sweep: module.config.intermediate_size=256,512 x two shapes ran 4 cells, shown as 2.
    rows = [
        dict(
            module="llama_mlp",
            input_shape=s,
            over={"module": "llama_mlp", "input.shape": s, "module.config.intermediate_size": n},
        )
        for n, s in itertools.product((256, 512), ("[1,16,256]", "[1,64,256]"))
    ]
    cells = _cells(rows)
    labels = list(cell_labels(cells))
    assert labels == [
        "llama_mlp intermediate_size=256 · [1,16,256]",
        "llama_mlp intermediate_size=256 · [1,64,256]",
        "llama_mlp intermediate_size=512 · [1,16,256]",
        "llama_mlp intermediate_size=512 · [1,64,256]",
    ]
    axes, variants, grid = comparison_grid(cells)
    assert axes == ["input_shape"] and variants == [
        "llama_mlp intermediate_size=256",
        "llama_mlp intermediate_size=512",
    ]
    assert sum(len(by) for by in grid.values()) == 4


def test_names_add_only_what_tells_cells_apart() -> None:
    rows = [
        dict(
            module="m",
            input_shape="[1,8,64]",
            over={"dims.seq": 8, "module.a.eps": 1, "module.b.eps": 2, "compile.enabled": "false"},
        ),
        dict(
            module="m",
            input_shape="[1,16,64]",
            over={"dims.seq": 16, "module.a.eps": 1, "module.b.eps": 3, "compile.enabled": "false"},
        ),
        dict(
            module="m",
            input_shape="[1,8,64]",
            compiled=True,
            over={"dims.seq": 8, "module.a.eps": 1, "module.b.eps": 2, "compile.enabled": "true"},
        ),
        dict(
            module="m",
            input_shape="[1,8,64]",
            over={
                "dims.seq": 8,
                "module.a.eps": 1,
                "module.b.eps": 2,
                "compile.enabled": "false",
                "+input.kwargs.mask": "null",
            },
        ),
    ]
    variant, axes, inputs = names(_cells(rows))
    # dims.seq is told by the shape: not repeated; mask is not: an input axis; a.eps never varies: left out.
    assert axes == ["input_shape", "mask"]
    assert list(variant) == ["m eps=2", "m eps=3", "m +compile eps=2", "m eps=2"]
    assert list(inputs["mask"]) == ["", "", "", "null"]


def test_cells_alike_in_every_label_are_still_told_apart() -> None:
    cells = _cells([dict(module="m", input_shape="[1,8]"), dict(module="m", input_shape="[1,8]")])
    assert cell_labels(cells).nunique() == 2


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (
            "module._target_=a.B,~module.eps,input.shape=[1,8,64]",
            ["module._target_=a.B", "~module.eps", "input.shape=[1,8,64]"],
        ),
        (
            "+input.kwargs.x={shape:[1,2],fill:zeros},dims.seq=8",
            ["+input.kwargs.x={shape:[1,2],fill:zeros}", "dims.seq=8"],
        ),
        ("baseline='module=x,compile.enabled=false',a=1", ["baseline='module=x,compile.enabled=false'", "a=1"]),
    ],
)
def test_override_strings_split_between_overrides_only(text: str, parts: list[str]) -> None:
    assert split_overrides(text) == parts


def test_values_compare_in_one_spelling() -> None:
    assert normalize(False) == normalize("false") == normalize("False") == "false"
    assert normalize([1, 8, 64]) == normalize("[1, 8, 64]") == "[1,8,64]"
    assert normalize(1e-6) == normalize("1.0e-06") and normalize(None) == normalize("null")


def _compile_sweep():
    rows = []
    for module, compiled, shape in itertools.product(("naive", "fused"), (False, True), ("[1,8]", "[1,16]")):
        rows.append(
            dict(
                module=module,
                compiled=compiled,
                input_shape=shape,
                over={"module": module, "compile.enabled": str(compiled).lower(), "input.shape": shape},
            )
        )
    return _cells(rows)


def test_a_baseline_picks_one_reference_per_group_of_otherwise_identical_cells() -> None:
    cells = _compile_sweep()
    by = dict(zip(cells["run_id"], zip(cells["module"], cells["compiled"], cells["input_shape"])))

    def refs(baseline):
        return [by.get(r) for r in baseline_run_ids(cells, parse_baseline(baseline))]

    # compiled vs eager, per module and shape
    assert refs({"compile.enabled": False}) == [(m, False, s) for m, _, s in by.values()]
    # naive vs fused, per compile setting and shape
    assert refs({"module": "naive"}) == [("naive", c, s) for _, c, s in by.values()]
    # one reference for all four variants of a shape
    assert refs("module=naive,compile.enabled=false") == [("naive", False, s) for _, _, s in by.values()]
    assert refs(None) == [None] * 8 and refs({"module": "absent"}) == [None] * 8


def test_a_module_that_compiles_itself_is_compared_with_the_eager_baseline() -> None:
    # rmsnorm_compiled turns compile on in its own option: no compile.enabled override tells it apart.
    cells = _cells(
        [
            dict(module=m, compiled=m.endswith("compiled"), input_shape="[1,8]", over={"module": m})
            for m in ("rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled")
        ]
    )
    assert list(baseline_run_ids(cells, parse_baseline("rmsnorm_naive"))) == ["r0"] * 3
    assert list(baseline_run_ids(cells, parse_baseline({"compile.enabled": False}))) == ["r0", "r1", None]


def test_speedups_are_within_the_group_and_absent_without_a_baseline() -> None:
    cells = _compile_sweep()
    out = add_speedups(cells, parse_baseline({"compile.enabled": False}))
    lat = dict(zip(out["run_id"], out["latency_median_us"]))
    for _, row in out.iterrows():
        assert row["speedup_vs_baseline"] == pytest.approx(lat[row["baseline_run_id"]] / row["latency_median_us"])
    none = add_speedups(cells, None)
    assert none["speedup_vs_baseline"].isna().all() and none["baseline_run_id"].isna().all()
    failed = cells.assign(status=["error"] + ["ok"] * 7)
    # r0 failed: no speedup for it, nor for r2 (naive compiled at [1,8]), whose reference it is
    assert (
        list(add_speedups(failed, parse_baseline({"compile.enabled": False}))["speedup_vs_baseline"].isna())
        == [True, False, True] + [False] * 5
    )


def test_a_baseline_is_parsed_once_into_a_typed_value() -> None:
    """Parsed where it comes in, then handed on as it is: a Baseline compares equal to its pairs."""
    from neuronexp.analysis.baseline import Baseline

    rule = parse_baseline({"module": "a", "compile.enabled": False})
    assert (
        isinstance(rule, Baseline)
        and set(rule) == {"module", "compile.enabled"}
        and rule.name == describe_baseline(rule)
    )


def test_a_baseline_is_written_three_ways() -> None:
    assert parse_baseline("rmsnorm_naive") == {"module": "rmsnorm_naive"}
    assert parse_baseline("module=a,compile.enabled=False") == {"module": "a", "compile.enabled": "false"}
    assert parse_baseline({"compile.enabled": False}) == {"compile.enabled": "false"}
    assert parse_baseline("none") is None and parse_baseline(None) is None
    assert describe_baseline(parse_baseline({"module": "a"})) == "a"
    assert (
        describe_baseline(parse_baseline({"module": "a", "compile.enabled": False}))
        == "module=a, compile.enabled=false"
    )


def test_a_baseline_is_never_taken_from_another_dtype() -> None:
    """dtype told apart by the row even where no override names it (an experiment's config sets it): a bfloat16
    cell is compared with the bfloat16 baseline, and with none when only float32 has one."""
    rows = [
        dict(module=m, dtype=d, input_shape="[1,8]", over={"module": m})
        for d in ("float32", "bfloat16")
        for m in ("naive", "fused")
    ]
    cells = _cells(rows)
    assert list(baseline_run_ids(cells, parse_baseline("naive"))) == ["r0", "r0", "r2", "r2"]
    without = cells[cells["run_id"] != "r2"]
    assert list(baseline_run_ids(without, parse_baseline("naive"))) == ["r0", "r0", None]
    speedups = add_speedups(without, parse_baseline("naive"))
    assert speedups["speedup_vs_baseline"].isna().tolist() == [False, False, True]
