"""CI (.ci/run) and the pre-commit hooks run the same checks: one ruff version, one set of paths, and mypy on
src/ before the tests."""

from __future__ import annotations

from typing import Any

import tomllib  # not in Python 3.10's standard library, which ruff sorts for
import yaml

from helpers import REPO

DEV = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
HOOKS = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())["repos"]
CI = (REPO / ".ci" / "run").read_text()
PATHS = "src tests bench scripts"


def _pin(name: str) -> str:
    (pin,) = [d.split("==", 1)[1] for d in DEV if d.split("==", 1)[0] == name]
    return pin


def _ruff_repo() -> dict[str, Any]:
    (ruff,) = [repo for repo in HOOKS if repo["repo"].endswith("/ruff-pre-commit")]
    return ruff


def test_the_ruff_hook_is_the_pinned_ruff_and_mypy_is_pinned_too() -> None:
    # Another version formats, or infers, differently: a tree clean here would fail there.
    assert _ruff_repo()["rev"] == "v" + _pin("ruff")
    assert _pin("mypy")


def test_ci_runs_the_hooks_checks_on_the_same_paths_before_the_tests() -> None:
    assert {hook["files"] for hook in _ruff_repo()["hooks"]} == {"^(" + PATHS.replace(" ", "|") + ")/"}
    first_test = CI.index("python -m pytest")
    for command in (f"ruff check {PATHS}", f"ruff format --check {PATHS}", "mypy src"):
        assert -1 < CI.find(command) < first_test, command


def test_requires_python_and_classifiers_say_what_ci_tests() -> None:
    """Python 3.11 is CI's own; .ci/run adds each other Python it tests with `.ci/other_python X.Y`."""
    import re

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    tested = {"3.11"} | set(re.findall(r"^\.ci/other_python (3\.\d+)$", CI, re.M))
    claimed = {c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.match(r".*Python :: 3\.\d+$", c)}
    assert claimed == tested and len(tested) > 1
    assert project["requires-python"] == ">=" + min(tested, key=lambda v: tuple(map(int, v.split("."))))
