"""Override strings read back: Hydra's comma-joined `overrides` column split, each value spelled one way."""

from __future__ import annotations

import re
import sys
from typing import Any

from neuronexp.config.key_roles import measured

_NEXT_OVERRIDE = re.compile(r"(?:[+~]{0,2}[\w.@/-]+=)|(?:~[\w.@/-]+(?:,|$))")


def split_overrides(overrides: Any) -> list[str]:
    """Split Hydra's comma-joined override string at the commas between overrides: never inside quotes,
    brackets or braces (shapes, dicts), and only before `key=` or a `~key` deletion."""
    text, out, depth, quote, start = str(overrides or ""), [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0 and _NEXT_OVERRIDE.match(text, i + 1):
            out.append(text[start:i])
            start = i + 1
    return [o for o in [*out, text[start:]] if o]


def normalize(value: Any) -> str:
    """One spelling per value, so YAML values, override strings and columns compare equal: booleans and null
    in lower case, numbers as Python prints them, lists without spaces, no surrounding quotes."""
    numpy = sys.modules.get("numpy")  # a numpy bool exists only once numpy is imported: not imported for it here
    if isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_)):
        return str(bool(value)).lower()
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(normalize(v) for v in value) + "]"
    text = str(value).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if text.lower() in ("true", "false", "null", "none"):
        return "null" if text.lower() == "none" else text.lower()
    try:
        number = float(text)
    except ValueError:
        return text.replace(" ", "")
    return str(int(text)) if re.fullmatch(r"[+-]?\d+", text) else repr(number)


def _is_label(key: str) -> bool:
    """Part of what the cell measured (config.key_roles), and not one of Hydra's own keys."""
    return not key.startswith("hydra.") and measured(key)


def override_values(overrides: Any) -> dict[str, str]:
    """{key: normalized value} of one cell's overrides (`+`/`~` dropped; a deletion reads "(deleted)")."""
    out = {}
    for item in split_overrides(overrides):
        key, eq, value = item.partition("=")
        key = key.lstrip("+~")
        if _is_label(key):
            out[key] = normalize(value) if eq else "(deleted)"
    return out


def argument_columns(overrides: Any, taken: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """{column: value} for each constructor argument the overrides set (`module.expansion=4`), so swept arguments
    are columns of their own (tidy data) and not only text in `overrides`. Named by the key's last part
    (`expansion`) unless that is also another argument's last part or a column in `taken`; then as typed
    (`module.expansion`). Values typed as YAML reads them (4, 0.5, true), text otherwise."""
    import yaml

    args = {}
    for item in split_overrides(overrides):
        key, eq, value = item.partition("=")
        key = key.lstrip("+")
        if eq and key.startswith("module.") and key != "module._target_" and not key.startswith("~"):
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError:
                parsed = value
            args[key] = parsed if isinstance(parsed, (bool, int, float, str)) else normalize(value)
    last = [k.rsplit(".", 1)[-1] for k in args]
    return {
        (short if last.count(short) == 1 and short not in taken else key): v
        for (key, v), short in zip(args.items(), last)
    }
