"""What a regular install ships: pyproject lists its packages by hand (find_packages cannot follow the conf link),
so a new subpackage or config group that is not listed works in a checkout and is missing from the wheel."""

from __future__ import annotations

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
