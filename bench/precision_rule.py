"""The stopping rule of `timing.precision` against the rule the issue also offered ("or its side of 1 and of the compare
threshold settled"), on simulated comparison groups whose true ratio is known (issue 47). No timing: the statistics.

Each group is two calls timed in rounds of 5 pairs; the ratio moves between rounds by exp(N(0, drift)) (each round
another placement of the inputs, docs/timing.md "Rounds") and each pair's by exp(N(0, scatter)), t-distributed
with 3 degrees of freedom for --heavy. The rules, each checked after every round from round --min-rounds (10) on, at
most --max-rounds:

- precision: analysis.precision.PrecisionRule (the interval's width, never its place), the 95% interval reported;
- settled95: stop as soon as precision is met or the 95% interval lies wholly on one side of 1 and of 1 ± 2% (the
  issue's wording taken at the reported level: optional stopping);
- settled-bonferroni: the same, but "settled" judged on an interval widened to the level 1 - 0.05 / max_rounds (a
  Bonferroni bound over the looks), the 95% interval still the one reported.

For each: rounds taken (median, 95th percentile), why each group stopped, how often it asked the bootstrap, the share
of reported intervals that hold the true ratio (all groups, and those that stopped on their precision), and for A/A
groups (true ratio 1) the share whose interval excludes 1 (a false side) and lies beyond ±2% (a false finding).

    python bench/precision_rule.py [--groups 400] [--target 0.05] [--drift 0.03] [--scatter 0.06] [--heavy]
                                  [--min-rounds 10] [--max-rounds 200]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from statistics import NormalDist

import numpy as np

from neuronexp.analysis.paired import paired_ratio
from neuronexp.analysis.precision import Z95, PrecisionRule

THRESHOLD = 0.02


def _round(rng: np.random.Generator, ratio: float, args: argparse.Namespace) -> list[np.ndarray]:
    level = 100 * np.exp(rng.normal(0, 0.3, 5))
    noise = rng.standard_t(3, 5) * args.scatter if args.heavy else rng.normal(0, args.scatter, 5)
    return [level, level / ratio / np.exp(rng.normal(0, args.drift) + noise)]


def _settled(point: float, half: float) -> bool:
    """The interval exp(log point ± half) lies wholly within one of: below 1/(1+t), 1/(1+t)..1, 1..1+t, above 1+t."""
    low, high = point * math.exp(-half), point * math.exp(half)
    edges = (1 / (1 + THRESHOLD), 1.0, 1 + THRESHOLD)
    return not any(low <= e <= high for e in edges)


def one_group(rng: np.random.Generator, ratio: float, rule_name: str, args: argparse.Namespace) -> dict:
    rule = PrecisionRule(args.target, args.min_rounds, 2)
    samples: list[list[float]] = [[], []]
    labels: list[int] = []
    z_settle = {"settled95": Z95, "settled-bonferroni": NormalDist().inv_cdf(1 - 0.05 / 2 / args.max_rounds)}
    stop = "max_rounds"
    for r in range(args.max_rounds):
        times = _round(rng, ratio, args)
        for j in (0, 1):
            samples[j].extend(times[j])
        labels += [r] * 5
        rule.add_round(times)
        if rule.met(samples, labels):
            stop = "precision"
            break
        if rule_name in z_settle and rule.rounds >= args.min_rounds:
            logs = rule.round_logs[(0, 1)]
            point = math.exp(float(np.median(logs)))
            half = rule.quick() / Z95 * z_settle[rule_name]  # the quick estimate, calibrated by the last bootstrap
            if _settled(point, half):
                stop = "settled"
                break
    point, low, high = paired_ratio(np.array(samples[0]), np.array(samples[1]), np.array(labels))
    return {
        "rounds": r + 1,
        "stop": stop,
        "bootstraps": rule.bootstraps,
        "covered": bool(low <= ratio <= high),
        "excludes_1": bool(high < 1 or low > 1),
        "beyond_threshold": bool(low > 1 + THRESHOLD or high < 1 / (1 + THRESHOLD)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=400, help="groups per rule and true ratio")
    parser.add_argument("--target", type=float, default=0.05)
    parser.add_argument("--drift", type=float, default=0.03)
    parser.add_argument("--scatter", type=float, default=0.06)
    parser.add_argument("--heavy", action="store_true")
    parser.add_argument("--min-rounds", type=int, default=10, help="timing.min_rounds")
    parser.add_argument("--max-rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    out = []
    for rule_name in ("precision", "settled95", "settled-bonferroni"):
        for ratio in (1.0, 1.03, 2.0):
            runs = [one_group(rng, ratio, rule_name, args) for _ in range(args.groups)]
            rounds = sorted(g["rounds"] for g in runs)
            on_precision = [g for g in runs if g["stop"] == "precision"]
            row = {
                "rule": rule_name,
                "true_ratio": ratio,
                "rounds_median": statistics.median(rounds),
                "rounds_p95": rounds[int(0.95 * (len(rounds) - 1))],
                "bootstraps_mean": round(statistics.mean(g["bootstraps"] for g in runs), 2),
                "covered": round(sum(g["covered"] for g in runs) / len(runs), 3),
                "stops": {k: sum(g["stop"] == k for g in runs) for k in ("precision", "settled", "max_rounds")},
                "covered_on_precision": round(sum(g["covered"] for g in on_precision) / len(on_precision), 3)
                if on_precision
                else None,
                "excludes_1": round(sum(g["excludes_1"] for g in runs) / len(runs), 3),
                "beyond_2pct": round(sum(g["beyond_threshold"] for g in runs) / len(runs), 3),
            }
            out.append(row)
            print(json.dumps(row), flush=True)
    print(json.dumps({"args": vars(args), "rows": out}))


if __name__ == "__main__":
    main()
