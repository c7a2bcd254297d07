"""docs/columns.md against the results contract: every column of every table described, with its type, and
nothing described that the tables do not have; the columns a backend adds described there too."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from helpers import REPO
from neuronexp.results import OPTIONAL_TABLES, SCHEMAS, TABLES

DOC = REPO / "docs" / "columns.md"
_ROW = re.compile(r"^\| `([a-z0-9_]+)` \| ([^|]+) \| (.*) \|$")


def _type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"list of {_type(t.value_type)}"
    return {"string": "string", "bool": "bool", "int64": "int64", "double": "float64"}[str(t)]


def documented() -> dict[str, dict[str, tuple[str, str]]]:
    """{table: {column: (type, meaning)}} from the doc's `## <table>` sections."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    table = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            table = line[3:].strip() if line[3:].strip() in SCHEMAS else None
            out.setdefault(table or "", {})
        elif table and (m := _ROW.match(line)):
            assert m.group(1) not in out[table], f"{table}.{m.group(1)} is described twice"
            out[table][m.group(1)] = (m.group(2).strip(), m.group(3).strip())
    return out


def problems(table: str, schema: pa.Schema) -> list[str]:
    """What docs/columns.md gets wrong about `table` with this schema (empty when nothing)."""
    docs = documented()[table]
    out = [f"{table}.{f.name} is not described" for f in schema if f.name not in docs]
    out += [f"{table}.{c} is described but not in the schema" for c in docs if c not in schema.names]
    out += [
        f"{table}.{f.name}: type {docs[f.name][0]!r}, the schema says {_type(f.type)!r}"
        for f in schema
        if f.name in docs and docs[f.name][0] != _type(f.type)
    ]
    out += [f"{table}.{c}: no meaning given" for c, (_, meaning) in docs.items() if len(meaning) < 10]
    if not out and list(docs) != schema.names:
        out.append(f"{table}: describe the columns in the schema's order")
    return out


@pytest.mark.parametrize("table", [*TABLES, *OPTIONAL_TABLES])
def test_every_column_is_described_with_its_type(table: str) -> None:
    assert problems(table, SCHEMAS[table]) == []


def test_a_column_added_to_the_schema_without_a_description_fails() -> None:
    schema = SCHEMAS["cells"].append(pa.field("brand_new", pa.float64()))
    assert problems("cells", schema) == ["cells.brand_new is not described"]
    retyped = SCHEMAS["samples"].set(2, pa.field("latency_us", pa.int64()))
    assert problems("samples", retyped) == ["samples.latency_us: type 'float64', the schema says 'int64'"]


def test_backend_columns_are_described_in_docs_columns() -> None:
    # Keys the Neuron backend puts in a cell's row (string literals used as dict keys, and keywords of dict(...) and
    # .update(...)) must each be described; the April-2026 NeuronProfiler's own parameters are arguments, not columns.
    from neuronexp.backends.neuron.sdk import LEGACY_PARAMS

    text = DOC.read_text()
    source = "\n".join(p.read_text() for p in (REPO / "src" / "neuronexp" / "backends").rglob("*.py"))
    keys = set(re.findall(r'"((?:neuron|pytorch)_[a-z_]+)"\s*:', source))
    keys |= set(re.findall(r"[(,\s]((?:neuron|pytorch)_[a-z_]+)=(?!=)", source))
    assert "neuron_per_op_source" in keys, "no backend column found: the patterns above no longer match the code"
    assert not sorted(k for k in keys - set(LEGACY_PARAMS) if f"`{k}`" not in text)
