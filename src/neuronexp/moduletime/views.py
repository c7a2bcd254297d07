"""Reading the modules table (profiler.modules=true): the tree, modules summed by type, and the hotspots.

A hotspot is a study unit, the module a layer study would take on its own, not whatever ranks first by total time
(always the root, then its containers); what counts as a unit and when two are alike: docs/columns.md, "modules"."""

from __future__ import annotations

import pandas as pd

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


_SUMMED = ("calls", "total_device_us", "total_cpu_us", "share", "flops", "bytes_min")  # over a hotspot's instances


def hot_units(table: pd.DataFrame) -> pd.DataFrame:
    """Units merged by (type, input shapes) and ranked by summed total device time: one row per group with
    `module_type`, `input_shapes`, `paths` (the instances, in tree order), `instances`, `calls`, `total_device_us`,
    `total_cpu_us`, `share`, `flops`, `bytes_min`."""
    rows = table.loc[units(table)]
    rows = rows[rows["calls"].fillna(0) > 0]
    if rows.empty:
        return pd.DataFrame(columns=[*"module_type input_shapes paths instances".split(), *_SUMMED])
    key = rows["input_shapes"].fillna("")
    grouped = rows.assign(_shapes=key).groupby(["module_type", "_shapes"], sort=False)
    summed = {c: (c, "sum") for c in _SUMMED}
    out = grouped.agg(paths=("module_path", list), instances=("module_path", "size"), **summed).reset_index()
    out = out.rename(columns={"_shapes": "input_shapes"})
    return out.sort_values("total_device_us", ascending=False, kind="stable").reset_index(drop=True)


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
