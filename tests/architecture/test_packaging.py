"""What a regular install ships: pyproject lists its packages by hand (find_packages cannot follow the conf link),
so a new subpackage or config group that is not listed works in a checkout and is missing from the wheel."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

from helpers import REPO

SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _dotted(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).parts)


def test_every_python_package_is_listed() -> None:
    src = REPO / "src"
    found = {_dotted(init.parent, src) for init in src.rglob("__init__.py") if "conf" not in init.parts}
    assert found <= set(SETUPTOOLS["packages"]), sorted(found - set(SETUPTOOLS["packages"]))


def test_every_config_group_is_listed_with_its_yaml() -> None:
    groups = {
        "neuronexp." + _dotted(d, REPO)
        for d in [REPO / "conf", *(REPO / "conf").rglob("*")]
        if d.is_dir() and any(d.glob("*.yaml"))
    }
    assert groups <= set(SETUPTOOLS["packages"]), sorted(groups - set(SETUPTOOLS["packages"]))
    data = SETUPTOOLS["package-data"]
    assert all("*.yaml" in data.get(group, []) for group in groups), sorted(g for g in groups if g not in data)


def test_every_typed_package_ships_its_marker() -> None:
    """neuronexp and its Hydra plugin are typed (PEP 561): each marker exists and is package data, so the wheel
    carries it and a type checker reads the installed package's annotations."""
    for package in ("neuronexp", "hydra_plugins.neuronexp_sweeper"):
        assert (REPO / "src" / package.replace(".", "/") / "py.typed").is_file(), package
        assert package in SETUPTOOLS["packages"] and "py.typed" in SETUPTOOLS["package-data"].get(package, []), package


def _shipped(path: Path, data: dict[str, list[str]]) -> bool:
    """Whether package-data names `path` (a file under src/), by its package's patterns."""
    src = REPO / "src"
    for parent in path.parents:
        patterns = data.get(_dotted(parent, src), []) if parent != src and src in parent.parents else []
        if any(path.relative_to(parent).match(p) for p in patterns):
            return True
    return False


def test_every_data_file_of_the_package_is_package_data() -> None:
    """A file the package reads at run time (peaks.yaml, the report's template, the type markers) is in the wheel."""
    root = REPO / "src" / "neuronexp"
    data_files = [
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "conf" not in p.relative_to(root).parts[:1]
    ]
    assert any(p.name == "report.html.j2" for p in data_files)
    missing = [str(p.relative_to(REPO)) for p in data_files if not _shipped(p, SETUPTOOLS["package-data"])]
    assert not missing, missing
    assert not _shipped(root / "report" / "nothing.html", SETUPTOOLS["package-data"])  # the check can fail


# The oldest version of each optional dependency the tests have run with (issue 46: the floors were 2.10 and 4.48,
# never run). A floor below these is a claim nobody checked: lower both only after running the tests there.
TESTED_FLOORS = {"mlflow": "3.17", "transformers": "4.57"}


def test_every_optional_floor_is_a_version_the_tests_ran() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    floors = {
        m[1]: m[2]
        for extra in project["optional-dependencies"].values()
        for req in extra
        if (m := re.fullmatch(r"([a-z-]+)>=([\d.]+)", req)) and m[1] in TESTED_FLOORS
    }
    assert floors == TESTED_FLOORS, floors
    from importlib import metadata

    for name, floor in TESTED_FLOORS.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        assert tuple(map(int, installed.split(".")[:2])) >= tuple(map(int, floor.split("."))), (name, installed)
