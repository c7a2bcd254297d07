"""pytest plugin for scripts/mutate.py: after each test, the functions its child processes reached (written by
sitecustomize.py into MUTATE_HITS_DIR) count as reached by that test in mutmut's statistics."""

import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    hits_dir = os.environ.get("MUTATE_HITS_DIR")
    if not hits_dir or os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    from mutmut.state import state

    for name in os.listdir(hits_dir):
        path = os.path.join(hits_dir, name)
        try:
            with open(path) as f:
                state()._stats.update(line.strip() for line in f if line.strip())
            os.unlink(path)
        except FileNotFoundError:
            continue
