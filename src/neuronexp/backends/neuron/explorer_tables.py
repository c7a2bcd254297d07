"""Reading Neuron Explorer's Parquet output without assuming one schema version: a MAJOR bump may remove or retype
a field and a PATCH bump change its unit, so units are read from each profile's `SchemaFields` table, and the
documented 7.4.0 units are only the fallback for a profile without one (docs/neuron.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

_TABLE_FILE = re.compile(r"^(?P<table>[A-Za-z]+)(?:_(?P<part>\d+))?\.parquet$")
# The schema versions neuronexp was written against: 7.x field by field (7.4.0, SDK 2.31/2.32), 12.x by
# version only (12.0.1, SDK 2.33: its field list could not be read).
KNOWN_MAJORS = (7, 12)


@dataclass
class Profile:
    """One folder of Explorer's output: its tables, each a list of Parquet parts (a large table is split as
    `Name_0.parquet`, `Name_1.parquet`: how-to-analyze-profile-output)."""

    folder: Path
    files: dict[str, list[Path]] = field(default_factory=dict)

    def has(self, table: str) -> bool:
        return table in self.files

    def columns(self, table: str) -> list[str]:
        return list(pq.read_schema(self.files[table][0]).names) if table in self.files else []

    def read(self, table: str, columns: list[str] | None = None) -> pd.DataFrame:
        """The table's parts concatenated (empty when absent); `columns` limits what is read (big tables)."""
        frames = []
        for path in self.files.get(table, []):
            names = None if columns is None else [c for c in columns if c in pq.read_schema(path).names]
            frames.append(pq.read_table(path, columns=names).to_pandas())
        frames = [f for f in frames if not f.empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def find_profiles(output_dir: Path) -> list[Profile]:
    """Every folder under `output_dir` holding Explorer tables (one per processed profile), in path order."""
    by_folder: dict[Path, Profile] = {}
    for path in sorted(output_dir.rglob("*.parquet")) if output_dir.is_dir() else []:
        if m := _TABLE_FILE.match(path.name):
            profile = by_folder.setdefault(path.parent, Profile(path.parent))
            profile.files.setdefault(m["table"], []).append(path)
    return list(by_folder.values())


def schema_version(profile: Profile) -> str | None:
    """`Metadata.profile_schema_version` of the profile, None when the table or field is missing."""
    meta = profile.read("Metadata", ["profile_schema_version"])
    if meta.empty or "profile_schema_version" not in meta:
        return None
    return ",".join(sorted({str(v) for v in meta["profile_schema_version"].dropna()})) or None


def major(version: str | None) -> int | None:
    m = re.match(r"^(\d+)\.", version or "")
    return int(m[1]) if m else None


@dataclass
class Units:
    """Unit and maximum per (table, field), from the profile's SchemaFields table."""

    units: dict[tuple[str, str], str] = field(default_factory=dict)
    maxima: dict[tuple[str, str], float] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.units)

    def unit(self, table: str, name: str) -> str | None:
        """The unit SchemaFields gives ("" when it gives none), or None when it does not list the field."""
        return self.units.get((table, name))


def read_units(profile: Profile) -> Units:
    """SchemaFields as lookups; empty when the profile has no such table."""
    df = profile.read("SchemaFields", ["table_name", "field_name", "field_unit", "field_maximum"])
    out = Units()
    if df.empty or not {"table_name", "field_name"} <= set(df.columns):
        return out
    for row in df.itertuples(index=False):
        key = (str(row.table_name), str(row.field_name))
        unit = getattr(row, "field_unit", None)
        out.units[key] = "" if unit is None or (isinstance(unit, float) and unit != unit) else str(unit).strip().lower()
        maximum = getattr(row, "field_maximum", None)
        if maximum is not None and maximum == maximum:
            out.maxima[key] = float(maximum)
    return out


# Time units to microseconds; the schema names its units in words ("seconds", "nanoseconds").
TO_US = {
    "seconds": 1e6,
    "second": 1e6,
    "s": 1e6,
    "milliseconds": 1e3,
    "ms": 1e3,
    "microseconds": 1.0,
    "us": 1.0,
    "nanoseconds": 1e-3,
    "ns": 1e-3,
}
