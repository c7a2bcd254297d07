"""The one exception for a user's configuration mistake."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A user mistake in the configuration: reported as one line, before any result is written."""

    def __init__(self, key: str, value: Any, allowed: str) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        shown = "[" + ",".join(map(str, value)) + "]" if isinstance(value, (list, tuple)) else value
        super().__init__(f"{key}={shown}: {allowed}")
