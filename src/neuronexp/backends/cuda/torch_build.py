"""What the installed torch was built for, read without importing torch (seconds): its `torch/version.py`, which
every torch build generates (`cuda`, `hip`: the toolkit versions, None in a CPU-only build), parsed as text, never
run. The distribution's version (`2.13.0+cpu`) is no answer: CUDA wheels from PyPI carry no local tag either."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path


def version_file() -> Path | None:
    """The installed torch's version.py, found without importing torch (None: no torch installed)."""
    spec = importlib.util.find_spec("torch")  # a top-level package: found, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "version.py"


def build_versions(path: Path | None) -> dict[str, str | None] | None:
    """The literal string-or-None assignments of a torch/version.py (`cuda`, `hip`, `__version__`, ...); None where
    it cannot be read as expected (then only importing torch can tell)."""
    if path is None:
        return None
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    out: dict[str, str | None] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        value = getattr(node, "value", None)
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, (str, type(None)))
        ):
            out[target.id] = value.value
    return out


def cpu_only_build(path: Path | None = None) -> str | None:
    """The installed torch's version (or that of the version.py at `path`) when it was built without CUDA and without
    ROCm (whose GPUs torch.cuda drives too), else None: a GPU build, or one this cannot read (torch tells then)."""
    found = build_versions(path or version_file())
    if found is None or not {"cuda", "hip", "__version__"} <= found.keys():
        return None
    return None if found["cuda"] or found["hip"] else str(found["__version__"])
