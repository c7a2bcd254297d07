"""What joins a cell of A to a cell of B: its configuration labels, less what the user ignores, and the names
compare shows for them. Never what differs between any two runs anyway (run id, start time, trace paths) or how
the measurement was taken (timing and profiler settings)."""

from __future__ import annotations

import pandas as pd

from neuronexp.analysis.overrides import split_overrides
from neuronexp.analysis.variants import cell_labels
from neuronexp.config.key_roles import LABELS as LABEL_ROLES
from neuronexp.config.key_roles import role

LABELS = ["experiment", "module", "compiled", "backend", "device", "device_name", "dtype", "input_shape"]
# Overrides that repeat a label column above (compared there).
_OVERRIDE_AS_LABEL = {"module", "input.shape", "input.dtype", "backend", "compile.enabled", "experiment"}
# Naming one label ignores the ones derived from it: another backend is another device.
_IMPLIED = {"backend": ("device", "device_name"), "device": ("device_name",), "module": ("compiled",)}


class CompareError(ValueError):
    """The two result sets cannot be compared (nothing matches, or a label set is ambiguous)."""


def expand_ignored(names: list[str]) -> list[str]:
    out = list(dict.fromkeys(names))
    for name in names:
        out += [n for n in _IMPLIED.get(name, ()) if n not in out]
    return out


def join_labels(cell: pd.Series, ignored: list[str]) -> dict[str, str]:
    labels = {c: str(cell[c]) for c in LABELS if c not in ignored}
    for override in split_overrides(cell.get("overrides") or ""):
        key, _, value = override.lstrip("+~").partition("=")
        if key not in _OVERRIDE_AS_LABEL and _joins(key) and key not in ignored:
            labels[key] = value
    return labels


def _joins(key: str) -> bool:
    """A key that says what a cell is (config.key_roles), not how it was measured, nor one of Hydra's own."""
    return not key.startswith("hydra.") and role(key) in (*LABEL_ROLES, None)


def keyed_cells(cells: pd.DataFrame, ignored: list[str], side: str) -> dict[tuple, pd.Series]:
    keyed: dict[tuple, pd.Series] = {}
    for _, cell in cells.iterrows():
        key = tuple(sorted(join_labels(cell, ignored).items()))
        if key in keyed:
            raise CompareError(
                f"two cells of {side} have the same labels once {', '.join(ignored) or 'nothing'} "
                f"is ignored: {dict(key)}"
            )
        keyed[key] = cell
    return keyed


def cell_names(keyed: dict[tuple, pd.Series], ignored: list[str]) -> dict[tuple, str]:
    """Each cell's name, as every other view names it (analysis.variants.cell_labels over the cells of A and
    B together), from the labels the cells were joined on: ignored ones left out."""
    rows = []
    for key, cell in keyed.items():
        row = cell.to_dict()
        row["overrides"] = ",".join(f"{k}={v}" for k, v in key if k not in LABELS)
        row.update({col: "*" for col in ignored if col in row and col not in ("module", "compiled")})
        rows.append(row)
    return dict(zip(keyed, cell_labels(pd.DataFrame(rows)))) if rows else {}


def differing_labels(keys_a: list[tuple], keys_b: list[tuple]) -> dict[str, tuple[list[str], list[str]]]:
    """Labels whose values never overlap between A and B: the usual reason nothing matches."""

    def values(keys: list[tuple]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for key in keys:
            for k, v in key:
                out.setdefault(k, set()).add(v)
        return out

    va, vb = values(keys_a), values(keys_b)
    return {
        k: (sorted(va.get(k, {"—"})), sorted(vb.get(k, {"—"})))
        for k in sorted(set(va) | set(vb))
        if not va.get(k, set()) & vb.get(k, set())
    }
