"""The tables as a reader holds them (Results) and rows turned into them, cast to the contract (results.contract)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa

from neuronexp.results.contract import COUNT_COLUMNS, MODULE_SCHEMA, SCHEMAS, TABLES


class _Tables(NamedTuple):
    cells: pd.DataFrame
    ops: pd.DataFrame
    samples: pd.DataFrame


class Results(_Tables):
    """cells, ops, samples — and `modules`, an attribute rather than a fourth element, so that
    `cells, ops, samples = neuronexp.load(d)` keeps working (empty unless profiler.modules=true)."""

    _modules: pd.DataFrame | None  # set by __new__, absent from a tuple built without it (see modules)

    def __new__(
        cls, cells: pd.DataFrame, ops: pd.DataFrame, samples: pd.DataFrame, modules: pd.DataFrame | None = None
    ) -> Results:
        self = super().__new__(cls, cells, ops, samples)
        self._modules = modules
        return self

    @classmethod
    def of(cls, tables: Iterable[pd.DataFrame], modules: pd.DataFrame | None = None) -> Results:
        """From the three tables in TABLES' order (a generator over TABLES, say), and modules. A type checker
        cannot count what a starred generator holds, so `Results(*gen, modules)` reads to it as too many."""
        cells, ops, samples = tables
        return cls(cells, ops, samples, modules)

    @property
    def modules(self) -> pd.DataFrame:
        # A tuple built without __new__ (namedtuple's _make, unpickling) has none: the empty table, not an error.
        found = self.__dict__.get("_modules")
        return found if found is not None else MODULE_SCHEMA.empty_table().to_pandas()

    def _replace(self, **changes: Any) -> Results:
        modules = changes.pop("modules", self.__dict__.get("_modules"))
        return Results(*super()._replace(**changes), modules)


def no_results() -> Results:
    """The three tables without a row (a dry run's)."""
    return Results.of(SCHEMAS[name].empty_table().to_pandas() for name in TABLES)


def whole_counts(df: pd.DataFrame) -> pd.DataFrame:
    """COUNT_COLUMNS as nullable integers (pandas "Int64") where every value is whole; left as floats otherwise."""
    out = df
    for col in COUNT_COLUMNS:
        if col in df.columns and pd.api.types.is_float_dtype(df[col]):
            values = df[col].dropna()
            if (values == values.round()).all():
                out = out.assign(**{col: df[col].astype("Int64")})
    return out


def to_arrow(name: str, df: pd.DataFrame) -> pa.Table:
    """Cast to the contract's types; extra columns (e.g. `neuron_*`) follow with inferred types."""
    schema = SCHEMAS[name]
    for col in schema.names:
        if col not in df.columns:
            df = df.assign(**{col: None})
    extras = [c for c in df.columns if c not in schema.names]
    core = pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)
    for col in extras:
        core = core.append_column(col, pa.Array.from_pandas(df[col]))
    return core


def arrow_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows → an Arrow table with the contract's columns and types, extra columns after them; straight from the
    rows (no pandas on the way): this runs once per table of every cell."""
    schema = SCHEMAS[name]
    table = pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)
    extras = dict.fromkeys(k for r in rows for k in r if k not in schema.names)
    for col in extras:
        table = table.append_column(col, pa.array([r.get(col) for r in rows]))
    return table


def frame(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → DataFrame with the contract's columns in order and its dtypes."""
    return arrow_table(name, rows).to_pandas()
