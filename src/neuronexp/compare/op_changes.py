"""Op tables of matched cells side by side: which ops appeared, disappeared or changed most.

All pairs at once (merges, not a loop of per-cell joins): a sweep can hold thousands of cells.
"""

from __future__ import annotations

import pandas as pd

from neuronexp.analysis.ops import per_op

OP_CHANGE_COLUMNS = ["cell", "op", "change", "a_us", "b_us", "delta_us", "a_calls", "b_calls"]
_ORDER = {"appeared": 0, "disappeared": 1, "changed": 2}


def op_changes(
    ops_a: pd.DataFrame, ops_b: pd.DataFrame, pairs: list[tuple[str, str, str]], top: int = 5
) -> pd.DataFrame:
    """Per (run_id in A, run_id in B, cell label) pair: every op that appeared or disappeared, plus the
    `top` ops whose self time changed most (unchanged ops are left out)."""
    if not pairs:
        return pd.DataFrame(columns=OP_CHANGE_COLUMNS)
    index = pd.DataFrame(pairs, columns=["run_a", "run_b", "cell"]).assign(_pair=range(len(pairs)))
    a = index.merge(per_op(ops_a), left_on="run_a", right_on="run_id")[["_pair", "cell", "op", "us", "calls"]]
    b = index.merge(per_op(ops_b), left_on="run_b", right_on="run_id")[["_pair", "cell", "op", "us", "calls"]]
    j = a.merge(b, on=["_pair", "cell", "op"], how="outer", suffixes=("_a", "_b"), indicator=True)
    j["change"] = j["_merge"].map({"both": "changed", "left_only": "disappeared", "right_only": "appeared"}).astype(str)
    for col in ("us_a", "us_b", "calls_a", "calls_b"):
        j[col] = j[col].fillna(0.0)
    j["delta_us"] = j["us_b"] - j["us_a"]
    j["_size"] = -j["delta_us"].abs()
    j = j.sort_values(["_pair", "_size"], kind="stable")
    changed = j[(j["change"] == "changed") & (j["delta_us"] != 0)].groupby("_pair").head(top)
    keep = pd.concat([j[j["change"] != "changed"], changed])
    keep = keep.assign(_order=keep["change"].map(_ORDER)).sort_values(["_pair", "_order", "_size"], kind="stable")
    out = keep.rename(columns={"us_a": "a_us", "us_b": "b_us", "calls_a": "a_calls", "calls_b": "b_calls"})
    return out[OP_CHANGE_COLUMNS].reset_index(drop=True)
