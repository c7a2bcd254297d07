"""A forked cell process keeps the malloc settings its template started with (glibc read them at the template's
start; env.json and the cell's own children, compile workers, must see them too), takes the request's
environment, and drops another process's tuning mark. Forked from this test process, no template needed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from neuronexp.cellprocess.childproc import ForkRequest, enter_cell_process
from neuronexp.host.allocator import APPLIED_ENV, STABLE_ENV, fresh_process_env


def _child_environment(tmp_path: Path, inherited: dict[str, str], request_env: dict[str, str]) -> dict[str, Any]:
    out = tmp_path / "env.json"
    request = ForkRequest(work=b"", env=request_env, cwd=str(tmp_path), sys_path=[], log=str(tmp_path / "cell.log"))
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the cell's process: report its environment, never return into pytest
        code = 1
        try:
            for key in (*STABLE_ENV, APPLIED_ENV):  # what the template started with is `inherited` alone
                os.environ.pop(key, None)
            os.environ.update(inherited)
            enter_cell_process(request, parent)
            out.write_text(json.dumps(dict(os.environ)))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, (tmp_path / "cell.log").read_text()
    return json.loads(out.read_text())


def test_a_forked_cell_keeps_the_stable_settings_its_template_started_with(tmp_path: Path) -> None:
    env = _child_environment(tmp_path, {**STABLE_ENV, APPLIED_ENV: "1"}, {"PATH": "/usr/bin", "CELL_VAR": "x"})
    assert {k: env.get(k) for k in STABLE_ENV} == STABLE_ENV
    assert env["CELL_VAR"] == "x" and env["PATH"] == "/usr/bin"
    assert APPLIED_ENV not in env  # "1" is another process's mark, not this child's


def test_a_forked_cell_of_a_system_template_gets_no_settings(tmp_path: Path) -> None:
    env = _child_environment(tmp_path, {}, {"CELL_VAR": "x"})
    assert not any(k in env for k in STABLE_ENV) and env == {"CELL_VAR": "x"}


def test_a_fresh_process_gets_stable_from_its_environment_and_a_users_value_wins() -> None:
    assert fresh_process_env({"A": "1", APPLIED_ENV: "7"}, "stable") == {**STABLE_ENV, "A": "1"}
    assert fresh_process_env({"A": "1"}, "system") == {"A": "1"}
    mine = {"MALLOC_TRIM_THRESHOLD_": "5"}
    assert fresh_process_env(mine, "stable")["MALLOC_TRIM_THRESHOLD_"] == "5"
