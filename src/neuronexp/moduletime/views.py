"""Reading the modules table (profiler.modules=true): the tree, modules summed by type, and the hotspots.

A hotspot is a study unit, the module a layer study would take on its own, not whatever ranks first by total time
(always the root, then its containers); what counts as a unit and when two are alike: docs/columns.md, "modules"."""

from __future__ import annotations

import pandas as pd

from neuronexp.analysis.noise import fmt_spread
from neuronexp.config.schema import NoiseConfig

# Built-in containers: their forward is their children's (ModuleList and ModuleDict have none at all).
CONTAINERS = {
    "torch.nn.modules.container.ModuleList",
    "torch.nn.modules.container.ModuleDict",
    "torch.nn.modules.container.Sequential",
    "torch.nn.modules.container.ParameterList",
}


def short_type(module_type: str) -> str:
    return str(module_type).rsplit(".", 1)[-1]


def of_run(modules: pd.DataFrame, run_id: str | None = None) -> pd.DataFrame:
    """One run's rows (the first run's when `run_id` is None), indexed by module path."""
    if modules.empty:
        return modules.set_index("module_path", drop=False)
    rid = run_id if run_id is not None else modules["run_id"].iloc[0]
    return modules[modules["run_id"] == rid].set_index("module_path", drop=False)


def children(table: pd.DataFrame) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {p: [] for p in table.index}
    for path, parent in zip(table.index, table["parent_path"]):
        if isinstance(parent, str) and parent in out:
            out[parent].append(path)
    return out


def units(table: pd.DataFrame) -> list[str]:
    """The study units of one run's table (docs/columns.md, "modules"), in tree order."""
    kids = children(table)
    found: list[str] = []

    def container(path: str) -> bool:
        return table.at[path, "module_type"] in CONTAINERS

    def parts(path: str) -> list[str]:
        """Children, with containers opened: Hot's layers in a ModuleList are Hot's own parts."""
        return [p for c in kids[path] for p in (parts(c) if container(c) else [c])]

    def visit(path: str) -> None:
        below = kids[path]
        if not container(path) and all(not kids[c] for c in parts(path)):
            found.append(path)
            return
        for c in below:
            visit(c)

    roots = [p for p in table.index if not isinstance(table.at[p, "parent_path"], str)]
    for root in roots:
        visit(root)
    return found


_SUMMED = (  # over a hotspot's instances
    "calls",
    "total_device_us",
    "total_cpu_us",
    "share",
    "flops",
    "bytes_min",
    "total_device_us_low",
    "total_device_us_high",
)


def _by_median(rows: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """The units `rows` with `total_device_us` and `share` from each one's median over the profile's cycles, where the
    table has it: a cycle the host disturbed (an `lm_head` at 50% of a step it takes 2% of) moves it little. The share
    is of the step rebuilt the same way, the units' medians plus the median cycle's time outside every unit (the
    containers' own ops), not of the root's median, which a disturbance in any module of most cycles inflates."""
    if "total_device_us_median" not in rows or rows["total_device_us_median"].isna().all():
        return rows
    median = rows["total_device_us_median"].fillna(rows["total_device_us"])
    root = table.loc[[not isinstance(p, str) for p in table["parent_path"]], "total_device_us"]
    outside = max(0.0, float(root.iloc[0]) - float(rows["total_device_us"].sum())) if len(root) else 0.0
    step = float(median.sum()) + outside
    return rows.assign(total_device_us=median, share=median / step if step > 0 else float("nan"))


def hot_forms(table: pd.DataFrame) -> pd.DataFrame:
    """Units merged by (type, input shapes) and ranked by summed total device time (each unit's median over the
    profile's cycles: _by_median): one row per form with `module_type`, `input_shapes`, `paths` (the instances, in
    tree order), `instances`, and the _SUMMED columns."""
    rows = table.loc[units(table)]
    rows = _by_median(rows[rows["calls"].fillna(0) > 0], table)
    if rows.empty:
        return pd.DataFrame(columns=[*"module_type input_shapes paths instances".split(), *_SUMMED])
    key = rows["input_shapes"].fillna("")
    grouped = rows.assign(_shapes=key).groupby(["module_type", "_shapes"], sort=False)
    summed = {c: (c, "sum") for c in _SUMMED if c in rows}  # a band an older table lacks: NaN (ranked: unsure)
    out = grouped.agg(paths=("module_path", list), instances=("module_path", "size"), **summed).reset_index()
    out = out.assign(**{c: float("nan") for c in _SUMMED if c not in rows})
    out = out.rename(columns={"_shapes": "input_shapes"})
    return out.sort_values("total_device_us", ascending=False, kind="stable").reset_index(drop=True)


def hot_units(table: pd.DataFrame) -> pd.DataFrame:
    """The hotspots: study units summed by class over every instance and form (docs/columns.md, "modules"), so a
    class spread over many instances (T5's six attention modules, each called its own way) ranks by its whole time.
    One row per class, hottest first: hot_forms' columns summed, `forms` (ways it was called), and its hottest form,
    whose instances lead `paths` and whose first call a study takes (`input_shapes`, `form_instances`, `form_calls`,
    `form_total_device_us`); `cycles` and `noise`: how sure its place is (ranked)."""
    forms = hot_forms(table)
    if forms.empty:
        return forms.assign(forms=[], form_instances=[], form_calls=[], form_total_device_us=[], cycles=[], noise=[])
    out = []
    for module_type, of_class in forms.groupby("module_type", sort=False):  # forms come hottest first
        top = of_class.iloc[0]
        row = {c: of_class[c].sum(min_count=1) for c in _SUMMED if c in of_class}
        out.append(
            {
                "module_type": module_type,
                "input_shapes": top["input_shapes"],
                "paths": [p for paths in of_class["paths"] for p in paths],
                "instances": int(of_class["instances"].sum()),
                "forms": len(of_class),
                "form_instances": int(top["instances"]),
                "form_calls": top["calls"],
                "form_total_device_us": top["total_device_us"],
                **row,
            }
        )
    ranked_ = pd.DataFrame(out).sort_values("total_device_us", ascending=False, kind="stable").reset_index(drop=True)
    return ranked(ranked_, _cycles(table))


def _cycles(table: pd.DataFrame) -> int:
    """How many profiled cycles the table's bands span (0: written before they were recorded)."""
    found = pd.to_numeric(table.get("cycles", pd.Series(dtype=float)), errors="coerce").dropna()
    return int(found.min()) if not found.empty else 0


def ranked(hot: pd.DataFrame, cycles: int) -> pd.DataFrame:
    """`hot` with `cycles` and `noise`: why an entry's place could change, empty where it could not (docs/
    timing.md, "Noise": its spread over the profile's cycles beyond noise.round_spread; or its band over the
    cycles meeting a neighbour's, so that some cycle could have ranked the two the other way; or one profiled cycle,
    which cannot say)."""
    low, high, mid = (
        hot[c].to_numpy(dtype=float) for c in ("total_device_us_low", "total_device_us_high", "total_device_us")
    )
    reasons: list[list[str]] = [[] for _ in range(len(hot))]
    for k in range(len(hot)):
        if cycles <= 1 or not (low[k] == low[k] and high[k] == high[k]):
            reasons[k].append("one profiled cycle" if cycles == 1 else "no profiled cycles recorded (an older table)")
            continue
        spread = (high[k] - low[k]) / mid[k] if mid[k] > 0 else 0.0
        if spread > NoiseConfig.round_spread:
            reasons[k].append(f"spread {fmt_spread(spread)}")
        for j in (k - 1, k + 1):
            if 0 <= j < len(hot) and low[min(j, k)] <= high[max(j, k)]:
                reasons[k].append(f"overlaps #{j + 1}")
    return hot.assign(cycles=cycles, noise=[", ".join(r) for r in reasons])


def by_type(table: pd.DataFrame) -> pd.DataFrame:
    """Every module type summed over its instances ("all LlamaMLP"), an instance inside another of its own type
    not counted twice; ranked by total device time."""
    keep = []
    for path in table.index:
        parent, own = table.at[path, "parent_path"], table.at[path, "module_type"]
        nested = False
        while isinstance(parent, str) and parent in table.index:
            if table.at[parent, "module_type"] == own:
                nested = True
                break
            parent = table.at[parent, "parent_path"]
        keep.append(not nested)
    rows = table[pd.Series(keep, index=table.index) & ~table["module_type"].isin(CONTAINERS)]
    out = (
        rows.groupby("module_type", sort=False)
        .agg(
            instances=("module_path", "size"),
            calls=("calls", "sum"),
            total_device_us=("total_device_us", "sum"),
            share=("share", "sum"),
        )
        .reset_index()
    )
    return out.sort_values("total_device_us", ascending=False, kind="stable").reset_index(drop=True)
