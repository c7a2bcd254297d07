"""Does `neuronexp-compare` with one run a side call what is real, and nothing else? (issue 22, item 3)

    python bench/compare_truth.py double SWEEP [-- COMPARE_ARGS]   # SWEEP vs a copy with every sample ×2
    python bench/compare_truth.py aa SWEEP_A SWEEP_A2 [-- ARGS]    # two real sweeps of the same study (A/A)
    python bench/compare_truth.py pairs SWEEP...                   # N real sweeps: every pair A/A, every ordered
                                                                   # pair ×2, with the host reference and without
    python bench/compare_truth.py rounds FILE.jsonl... [--factor K]  # the floor on fresh processes' round medians
    python bench/compare_truth.py csv FILE.csv... [--factor K]     # estimate the floor's effect on old compare CSVs

`double` copies SWEEP (a real sweep or run directory), multiplies every latency sample (and every cell's
latency_*_us) by 2 and runs `neuronexp-compare SWEEP COPY --fail-on-regression` as a user would: the goal is
every cell "slower" and exit 1, noisy or not. `aa` runs `neuronexp-compare SWEEP_A SWEEP_A2`: the goal is 0
cells called slower or faster. Both print the verdict counts and write the CSV next to the report (--out).

`rounds` reads JSON lines with `tag` and `round_medians_us` (bench/results/truth/same_cell.jsonl, explore.jsonl:
the same cell in five fresh processes per tag) and compares every pair of processes of a tag (A/A) and every
process against itself ×2, each round one value, with FLOOR_FACTOR K and without (K 0): calls out of pairs.
`csv` reads compare CSVs written before the floor (bench/results/truth/pooled/*.csv, round intervals only) and
estimates each interval with the floor: the log half-widths scaled by sqrt(1 + (K/c)²), where c is the sd of
the bootstrap median of 5 rounds per unit sd of the rounds (simulated here), an estimate, not a rerun.

Exit status: 0 the goal was met, 1 not met, 2 bad input.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from neuronexp.analysis.floor import FLOOR_FACTOR
from neuronexp.analysis.stats import (
    Criteria,
    benjamini_hochberg,
    compare_rounds,
    hierarchical_medians,
    verdict,
)

BIN = Path(sys.executable).parent
THRESHOLD, ALPHA, INCONCLUSIVE = 0.02, 0.05, 0.25


def doubled_copy(sweep: Path, out: Path) -> Path:
    """A copy of `sweep` with every latency sample and cell latency ×2 (results/ and every job directory)."""
    shutil.copytree(sweep, out, ignore=shutil.ignore_patterns("*.json.gz", "trace*.json"))
    for path in out.rglob("samples.parquet"):
        samples = pd.read_parquet(path)
        samples["latency_us"] = samples["latency_us"] * 2
        samples.to_parquet(path, index=False)
    for path in out.rglob("cells.parquet"):
        cells = pd.read_parquet(path)
        for col in [c for c in cells.columns if c.startswith("latency_") and c.endswith("_us")]:
            cells[col] = cells[col] * 2
        cells.to_parquet(path, index=False)
    return out


def run_compare(a: Path, b: Path, csv: Path, extra: list[str]) -> tuple[int, pd.DataFrame, str]:
    cmd = [str(BIN / "neuronexp-compare"), str(a), str(b), "--csv", str(csv), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode == 2 or not csv.is_file():
        fail(f"neuronexp-compare failed: {(proc.stderr.strip().splitlines() or ['no message'])[-1]}")
    return proc.returncode, pd.read_csv(csv), proc.stdout


def fail(message: str) -> None:
    print(f"compare_truth: {message}", file=sys.stderr)
    sys.exit(2)


def summary(cells: pd.DataFrame) -> dict:
    counts = cells["verdict"].value_counts().to_dict()
    return {
        "cells": len(cells),
        "verdicts": counts,
        "noisy": int(cells["noisy"].sum()),
        "called": int(cells["verdict"].isin(["slower", "faster"]).sum()),
        "floor_median": round(float(np.median(np.r_[cells["floor_a"], cells["floor_b"]])), 3),
        "ci_width_median": round(float((cells["ci_high"] - cells["ci_low"]).median()), 3),
    }


def check_double(args) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        copy = doubled_copy(args.sweeps[0], Path(tmp) / "doubled")
        rc, cells, out = run_compare(
            args.sweeps[0], copy, args.out / f"double-{args.stamp}.csv", ["--fail-on-regression", *args.extra]
        )
    report = {"check": "double", "sweep": str(args.sweeps[0]), "exit": rc, **summary(cells)}
    met = rc == 1 and report["verdicts"].get("slower", 0) == len(cells)
    return finish(report, met, out, args.out / f"double-{args.stamp}.json")


def check_aa(args) -> int:
    if len(args.sweeps) != 2:
        fail("aa needs two sweep directories")
    rc, cells, out = run_compare(args.sweeps[0], args.sweeps[1], args.out / f"aa-{args.stamp}.csv", args.extra)
    report = {"check": "aa", "sweeps": [str(s) for s in args.sweeps], **summary(cells)}
    return finish(report, report["called"] == 0, out, args.out / f"aa-{args.stamp}.json")


def check_pairs(args) -> int:
    """N real runs of one study: every pair as an A/A, and every ordered pair with B's samples ×2 (a regression in
    a later run, with the host's real moves between the runs), each with the host reference and without (the
    intervals as measured, K = FLOOR_FACTOR). In-process (neuronexp.compare), as the CLI would take hours here."""
    from neuronexp import load
    from neuronexp.compare import CompareOptions, compare
    from neuronexp.results import Results

    if len(args.sweeps) < 2:
        fail("pairs needs two or more sweep directories")
    runs = {str(path): load(path) for path in args.sweeps}

    def doubled(r: Results) -> Results:
        cells, samples = r.cells.copy(), r.samples.copy()
        samples["latency_us"] *= 2
        for col in [c for c in cells.columns if c.startswith("latency_") and c.endswith("_us")]:
            cells[col] *= 2
        return Results(cells, r.ops, samples)

    twice = {k: doubled(v) for k, v in runs.items()}
    report: dict = {"check": "pairs", "sweeps": list(runs)}
    for mode, host in (("host_reference", True), ("as_measured", False)):
        aa = [
            compare(runs[a], runs[b], CompareOptions(host_reference=host)).cells
            for a, b in itertools.combinations(runs, 2)
        ]
        x2 = [
            compare(runs[a], twice[b], CompareOptions(host_reference=host)).cells
            for a, b in itertools.permutations(runs, 2)
        ]
        report[mode] = {
            "aa_cells": sum(len(c) for c in aa),
            "aa_called": sum(int(c["verdict"].isin(["slower", "faster"]).sum()) for c in aa),
            "x2_cells": sum(len(c) for c in x2),
            "x2_called_slower": sum(int((c["verdict"] == "slower").sum()) for c in x2),
        }
        if host:
            moves = pd.concat(aa)[["host_dispatch_move", "host_memory_move"]]
            report["host_move_range"] = [round(float(moves.min(axis=None)), 3), round(float(moves.max(axis=None)), 3)]
    met = report["host_reference"]["aa_called"] == 0 and (
        report["host_reference"]["x2_called_slower"] == report["host_reference"]["x2_cells"]
    )
    return finish(report, met, json.dumps(report, indent=1), args.out / f"pairs-{args.stamp}.json")


def finish(report: dict, met: bool, output: str, path: Path) -> int:
    report["goal_met"] = met
    path.write_text(json.dumps({**report, "output": output}, indent=1))
    print(output)
    print(json.dumps(report))
    return 0 if met else 1


def round_calls(tags: dict[str, list[np.ndarray]], factor: float) -> dict:
    """A/A over every pair of processes of a tag, ×2 of every process against itself; each round one value."""
    aa, doubled = [], []
    for processes in tags.values():
        for x, y in itertools.combinations(processes, 2):
            aa.append(compare_rounds((x, np.arange(len(x))), (y, np.arange(len(y))), floor=factor))
        for x in processes:
            doubled.append(compare_rounds((x, np.arange(len(x))), (2 * x, np.arange(len(x))), floor=factor))

    def called(stats: list) -> tuple[int, int]:
        q = benjamini_hochberg([s.p_value for s in stats])
        rule = Criteria(threshold=THRESHOLD, alpha=ALPHA, inconclusive=INCONCLUSIVE)
        words = [verdict(s, qv, rule) for s, qv in zip(stats, q)]
        return sum(w in ("slower", "faster") for w in words), sum(w == "inconclusive" for w in words)

    (aa_called, aa_inconclusive), (x2_called, _) = called(aa), called(doubled)
    return {
        "factor": factor,
        "aa_pairs": len(aa),
        "aa_called": aa_called,
        "aa_inconclusive": aa_inconclusive,
        "x2_cells": len(doubled),
        "x2_called": x2_called,
    }


def check_rounds(args) -> int:
    tags: dict[str, list[np.ndarray]] = collections.defaultdict(list)
    for path in args.sweeps:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            tags[row["tag"]].append(np.asarray(row["round_medians_us"], dtype=float))
    rows = [round_calls(tags, k) for k in sorted({0.0, 1.0, args.factor, 3.0})]
    for row in rows:
        print(json.dumps(row))
    chosen = next(r for r in rows if r["factor"] == args.factor)
    return 0 if chosen["aa_called"] == 0 and chosen["x2_called"] == chosen["x2_cells"] else 1


def bootstrap_sd_per_unit(rounds: int = 5, trials: int = 400) -> float:
    """c: sd of the log bootstrap median of `rounds` rounds (one value each) per unit sd of their logs."""
    rng = np.random.default_rng(0)
    sds = [
        np.std(np.log(hierarchical_medians(list(np.exp(rng.standard_normal(rounds))[:, None]), rng, 2000)))
        for _ in range(trials)
    ]
    return float(np.mean(sds))


def check_csv(args) -> int:
    c = bootstrap_sd_per_unit()
    scale = float(np.sqrt(1 + (args.factor / c) ** 2))
    print(json.dumps({"c": round(c, 3), "factor": args.factor, "log_halfwidth_scale": round(scale, 2)}))
    total = called_before = called_after = x2_called = 0
    for path in args.sweeps:
        cells = pd.read_csv(path)
        log_r = np.log(cells["ratio"])
        low = np.exp(log_r - scale * (log_r - np.log(cells["ci_low"])))
        high = np.exp(log_r + scale * (np.log(cells["ci_high"]) - log_r))
        before = int(cells["verdict"].isin(["slower", "faster", "noisy"]).sum())
        after = int(((low > 1 + THRESHOLD) | (high < 1 / (1 + THRESHOLD))).sum())
        # A doubled copy drifts as its original: ×2 with the pair's widened half-width (upper one, the larger).
        x2 = int((np.log(2) - scale * (np.log(cells["ci_high"]) - log_r) > np.log1p(THRESHOLD)).sum())
        print(
            json.dumps(
                {
                    "csv": path.name,
                    "cells": len(cells),
                    "called_before": before,
                    "called_after_est": after,
                    "x2_called_est": x2,
                }
            )
        )
        total, called_before, called_after, x2_called = (
            total + len(cells),
            called_before + before,
            called_after + after,
            x2_called + x2,
        )
    print(
        json.dumps(
            {
                "cells": total,
                "called_before": called_before,
                "called_after_est": called_after,
                "x2_called_est": x2_called,
            }
        )
    )
    return 0 if called_after == 0 and x2_called == total else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("check", choices=["double", "aa", "pairs", "rounds", "csv"])
    p.add_argument("sweeps", nargs="+", type=Path, help="sweep directories (double, aa) or files (rounds, csv)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).parent / "results" / "compare",
        help="where the CSV and JSON report go (default bench/results/compare)",
    )
    p.add_argument("--factor", type=float, default=FLOOR_FACTOR, help=f"floor factor (default {FLOOR_FACTOR})")
    args = p.parse_args(argv)
    args.extra = extra
    args.stamp = time.strftime("%Y-%m-%dT%H%M%S")  # each check's files beside the earlier ones, not over them
    missing = [str(s) for s in args.sweeps if not s.exists()]
    if missing:
        fail(f"no such path: {', '.join(missing)}")
    args.out.mkdir(parents=True, exist_ok=True)
    checks = {"double": check_double, "aa": check_aa, "pairs": check_pairs, "rounds": check_rounds, "csv": check_csv}
    return checks[args.check](args)


if __name__ == "__main__":
    sys.exit(main())
