"""What cells are compared with, as one typed value: parsed once where it comes in (the config, `--baseline`, a
results directory's config.yaml) and handed on as it is. No pandas: the sweep reads it before any cell runs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from neuronexp.analysis.overrides import normalize, split_overrides


class Baseline(Mapping[str, str]):
    """key=value pairs (`module: rmsnorm_naive`, `compile.enabled: false`), each value spelled as normalize spells
    it; the cells of a group matching them all are the group's reference (analysis.variants)."""

    __slots__ = ("_pairs",)

    def __init__(self, pairs: Mapping[str, str]) -> None:
        self._pairs = dict(pairs)

    def __getitem__(self, key: str) -> str:
        return self._pairs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._pairs)

    def __len__(self) -> int:
        return len(self._pairs)

    def __repr__(self) -> str:
        return f"Baseline({self._pairs!r})"

    @property
    def name(self) -> str:
        """How titles name it: the module for {module: X}, else "key=value, ..."."""
        return self["module"] if list(self) == ["module"] else ", ".join(f"{k}={v}" for k, v in self.items())


def parse_baseline(value: object) -> Baseline | None:
    """From a config mapping, a "key=value,key=value" string, or a bare module name; None for null, "" or "none"."""
    if isinstance(value, Mapping):
        pairs = {str(k): normalize(v) for k, v in value.items()}
    elif value is None or str(value).strip().lower() in ("", "none", "null"):
        return None
    elif "=" not in str(value):
        pairs = {"module": str(value).strip()}
    else:
        pairs = {k.strip(): normalize(v) for k, _, v in (p.partition("=") for p in split_overrides(str(value)))}
    return Baseline(pairs) if pairs else None


def describe_baseline(baseline: Baseline | None) -> str | None:
    """Its name (Baseline.name); None without one."""
    return baseline.name if baseline else None
