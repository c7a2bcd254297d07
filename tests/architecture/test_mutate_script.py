"""scripts/mutate.py's own parts, without a mutation run (tens of minutes: docs/development.md measures it): its
flags, the tests whose reach it measures, the settings it writes into the copy, the work directory it never takes
from someone else, and the hook that records what a test's child processes reach."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.optional import require

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mutate():
    spec = importlib.util.spec_from_file_location("mutate_script", REPO / "scripts" / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_its_flags(mutate) -> None:
    args = mutate.parse(["src/neuronexp/api.py", "--tests", "tests/api", "--only", "--jobs", "1", "--show", "--again"])
    assert (args.modules, args.tests, args.only, args.jobs, args.show, args.again) == (
        ["src/neuronexp/api.py"],
        ["tests/api"],
        True,
        1,
        True,
        True,
    )
    assert mutate.parse(["src/neuronexp/api.py", "--all-tests"]).all_tests


def test_the_tests_of_a_modules_area_and_those_that_name_it(mutate) -> None:
    found = mutate.area_tests(Path("src/neuronexp/results/owned.py"))
    assert found[0] == "tests/results" and "tests/cli/test_extract_hostile.py" in found
    assert not any(f.startswith("tests/results/") for f in found[1:])  # inside the area: not named twice
    assert mutate.area_tests(Path("src/neuronexp/api.py"))[0] == "tests/api"


def test_the_settings_go_into_the_copys_pyproject(mutate, tmp_path: Path) -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "conf").mkdir()
    mutate.write_settings(tmp_path, [Path("src/neuronexp/api.py")], ["tests/api"])
    settings = tomllib.loads((tmp_path / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert settings["only_mutate"] == ["src/neuronexp/api.py"] and settings["source_paths"] == ["src"]
    assert settings["pytest_add_cli_args"][:2] == ["-n", "0"] and "mutate_hits" in settings["pytest_add_cli_args"]
    assert settings["pytest_add_cli_args_test_selection"] == ["tests/api"]
    assert settings["process_isolation"] == "forkserver" and "conf" in settings["also_copy"]


def test_a_work_directory_it_did_not_make_is_never_removed(mutate, tmp_path: Path, monkeypatch) -> None:
    work = tmp_path / ".mutate"
    work.mkdir()
    (work / "yours.txt").write_text("keep\n")
    monkeypatch.setattr(mutate, "WORK", work)
    with pytest.raises(SystemExit, match="was not made by this script"):
        mutate.fresh_tree()
    assert (work / "yours.txt").read_text() == "keep\n"
    assert ".mutate/" in (REPO / ".gitignore").read_text().splitlines()


def test_a_child_process_records_the_functions_it_reaches(tmp_path: Path) -> None:
    require("mutmut")
    code = "import mutmut.mutation.trampoline as t; t.record_trampoline_hit('neuronexp.api.x_run')"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "scripts" / "mutate_hooks"),
        "MUTATE_HITS_DIR": str(tmp_path),
        "MUTANT_UNDER_TEST": "stats",
    }
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp_path)
    (hits,) = list(tmp_path.iterdir())
    assert hits.read_text() == "neuronexp.api.x_run\n"
