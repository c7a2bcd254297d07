"""compare's join at its edges (issue 32's mutation audit): the host reference narrows the floor only where both
of its workloads have figures on both sides; a cell noisy in A is marked noisy; one round on a side leaves the call
to the interval alone; and a further run missing a cell is said, a complete one is not. Constructed results."""

from __future__ import annotations

import numpy as np

from neuronexp.analysis.stats import Criteria
from neuronexp.compare import CompareOptions, compare
from neuronexp.results import Results, frame

SHAPES = ["[1,8,64]", "[1,64,512]"]


def _results(tag: str, *, scale: float = 1.0, rounds: int = 5, seed: int = 0, shapes: list[str] = SHAPES) -> Results:
    """One cell per shape, 60 samples in `rounds` rounds that drift ±5% (so each side has a noise floor)."""
    rng = np.random.default_rng(seed)
    cells, samples = [], []
    for j, shape in enumerate(shapes):
        run_id = f"{tag}-{j}"
        round_of = np.arange(60) * rounds // 60
        lat = 50.0 * (j + 1) * scale * np.exp(0.05 * rng.standard_normal(rounds))[round_of]
        lat = lat * np.exp(0.01 * rng.standard_normal(60))
        cells.append(
            dict(
                run_id=run_id,
                experiment="x",
                module="rmsnorm_naive",
                compiled=False,
                backend="cpu",
                device="cpu",
                device_name="Xeon",
                dtype="float32",
                input_shape=shape,
                status="ok",
                latency_median_us=float(np.median(lat)),
                overrides=f"input.shape={shape}",
                started_at="2026-01-01T00:00:00",
                host_dispatch_us=1.0,
                host_memory_us=1000.0,
                noisy=False,
            )
        )
        samples += [
            dict(run_id=run_id, sample=k, latency_us=float(v), round=int(round_of[k])) for k, v in enumerate(lat)
        ]
    return Results(frame("cells", cells), frame("ops", []), frame("samples", samples))


def _intervals(cmp) -> np.ndarray:
    return cmp.cells[["ci_low", "ci_high"]].to_numpy()


def test_one_workload_of_the_host_reference_is_not_the_reference() -> None:
    # B's memory workload has no figure (a run measured before it existed): the host's move cannot be taken out,
    # so the interval gets the wider floor meant to hold it, exactly as without the reference.
    a, b = _results("a", seed=1), _results("b", seed=2, scale=1.5)
    b = b._replace(cells=b.cells.assign(host_memory_us=np.nan))
    half = compare(a, b)
    assert half.cells["host_dispatch_move"].notna().all() and half.cells["host_memory_move"].isna().all()
    assert np.allclose(_intervals(half), _intervals(compare(a, b, CompareOptions(host_reference=False))))
    assert not np.allclose(_intervals(compare(a, _results("b", seed=2, scale=1.5))), _intervals(half))


def test_a_cell_noisy_in_a_is_marked_noisy() -> None:
    a, b = _results("a", seed=1), _results("b", seed=2)
    a = a._replace(cells=a.cells.assign(noisy=a.cells["run_id"] == "a-0", noise="rounds spread 40%"))
    noisy = compare(a, b).cells.set_index("run_id_a")["noisy"]
    assert bool(noisy["a-0"]) and not bool(noisy["a-1"])


def test_one_round_on_a_side_is_called_by_its_interval_whatever_alpha() -> None:
    # Rounds on both sides: significance and size decide, and no q-value is below an alpha of 1e-12. One round in
    # B: significance within one run says nothing across runs, so the interval alone calls the ×2.
    a = _results("a", seed=1)
    both = compare(a, _results("b", seed=2, scale=2.0), CompareOptions(criteria=Criteria(alpha=1e-12)))
    assert not both.cells["verdict"].isin(["slower", "faster"]).any()  # not called
    one = compare(a, _results("b", seed=2, scale=2.0, rounds=1), CompareOptions(criteria=Criteria(alpha=1e-12)))
    assert (one.cells["rounds_b"] == 1).all() and (one.cells["ci_low"] > 1.02).all()
    assert (one.cells["verdict"] == "slower").all()


def test_a_cell_missing_from_a_further_run_is_said_and_a_complete_run_is_not() -> None:
    a, b = _results("a", seed=1), _results("b", seed=2)
    complete = compare(a, b, more_a=[_results("a2", seed=3)])
    assert (complete.cells["runs_a"] == 2).all() and not any("missing from a further run" in n for n in complete.notes)
    short = compare(a, b, more_a=[_results("a2", seed=3, shapes=SHAPES[:1])])
    missing = [n for n in short.notes if "missing from a further run" in n]
    assert missing == [
        f"1 cell(s) missing from a further run of A (compared over fewer runs): {short.cells['cell'][1]}"
    ]
    assert list(short.cells["runs_a"]) == [2, 1]
