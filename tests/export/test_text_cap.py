"""Exported text is cut at MAX_TEXT characters and says so (MLflow caps tags and params); text of MAX_TEXT or less is
exported whole (issue 32's mutation audit). Through cell_exports on constructed rows."""

from __future__ import annotations

from neuronexp.export.cells import MAX_TEXT, cell_exports
from neuronexp.results import frame


def _tags(error: str) -> dict[str, str]:
    row = {"run_id": "r", "experiment": "adhoc", "module": "m", "backend": "cpu", "dtype": "float32"}
    row |= {"input_shape": "[1,8]", "status": "error", "error": error, "started_at": "2026-01-01T00:00:00"}
    (export,) = cell_exports(frame("cells", [row]))
    return export.tags


def test_text_up_to_the_cap_is_whole_and_longer_text_is_cut_and_says_so() -> None:
    assert _tags("e" * MAX_TEXT)["neuronexp.error"] == "e" * MAX_TEXT
    cut = _tags("e" * (MAX_TEXT + 1))["neuronexp.error"]
    assert len(cut) <= MAX_TEXT and cut.endswith("(cut)") and cut.startswith("e" * (MAX_TEXT - 20))
