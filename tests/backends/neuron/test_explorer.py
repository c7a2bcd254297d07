"""`neuron-explorer view` as neuronexp runs it, against the STAND-IN CLI (fake_neuron_explorer.py): the documented
command and filters, retries, tool problems, and what is read from its output."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from neuronexp.backends.neuron.explorer import _run, capture_filters, dropped_events, process_capture


def test_dropped_event_counts_are_read_from_the_tool_output() -> None:
    assert dropped_events("Warning: 1,500 trace events were dropped\nWarning: 20 trace events were dropped") == 1520
    assert dropped_events("all good") == 0


def test_filters_skip_what_was_not_captured() -> None:
    assert capture_filters(["DEVICE", "RUNTIME"], None) == []
    assert capture_filters(["DEVICE", "RUNTIME"], ["0", "1"]) == ["--system-trace-filter-neuron-core", "0,1"]
    assert capture_filters(["RUNTIME", "CPU_UTIL"], ["2"]) == [
        "--ignore-device-profile",
        "--system-trace-filter-neuron-core",
        "2",
    ]
    assert capture_filters(["DEVICE"], ["2"]) == ["--ignore-system-profile"]


def _capture(tmp_path: Path) -> Path:
    """A capture root with one session folder; returns the root."""
    session = tmp_path / "neuron_profile" / "i-0abc_pid_1" / "ts"
    session.mkdir(parents=True)
    (session / "trace_info.pb").write_bytes(b"x")
    return tmp_path / "neuron_profile"


def _argv(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("schema", ["7.4.0", "12.0.1"])
def test_the_documented_command_runs_and_its_tables_are_read(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch, schema: str
) -> None:
    monkeypatch.setenv("FAKE_EXPLORER_SCHEMA", schema)
    root = _capture(tmp_path)
    result = process_capture(root, tmp_path / "neuron_explorer", True, 60, ["--system-trace-filter-neuron-core", "0,1"])
    assert result.status == "ok", result.warnings
    (argv,) = _argv(fake_explorer)
    assert argv == [
        "view",
        "-d",
        str(root),
        "--output-format",
        "parquet",
        "--output-file",
        str(tmp_path / "neuron_explorer"),
        "--system-trace-filter-neuron-core",
        "0,1",
    ]
    assert result.command[1:] == argv and result.summary_files == ["Summary.parquet"]
    assert (
        result.columns["neuron_total_time_us"] == pytest.approx(403.0) and result.columns["neuron_dropped_events"] == 0
    )
    assert result.columns["neuron_profile_schema_version"] == schema and result.schema["units_source"] == [
        "SchemaFields"
    ]
    assert result.columns["neuron_insights"] == "" and "transpose_flops" in result.columns["neuron_insights_checked"]
    assert result.device_ops.hlo_us == {"multiply": pytest.approx(10.0), "reduce": pytest.approx(3.0)}
    # Explorer's own Warning table lands in the cell's warnings.
    assert result.warnings == ["neuron-explorer: Missing Data: Current NEFF is missing compiler metrics."]


def test_a_tool_that_rejects_the_filters_is_rerun_without_them(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "noflags")
    root = _capture(tmp_path)
    result = process_capture(root, tmp_path / "out", True, 60, ["--ignore-system-profile"])
    assert result.status == "ok" and [a["returncode"] for a in result.attempts] == [2, 0]
    assert _argv(fake_explorer)[1][-1] == str(tmp_path / "out_retry1")  # a fresh folder for the second try
    assert result.columns["neuron_total_time_us"] == pytest.approx(403.0)
    assert result.warnings[0].startswith("neuron-explorer view exited with 2: ")
    assert result.warnings[0].endswith("; processed on attempt 2: view -d " + str(root))


def test_a_tool_that_refuses_the_root_gets_the_session_folder(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "rootfail")
    root = _capture(tmp_path)
    session = root / "i-0abc_pid_1" / "ts"
    result = process_capture(root, tmp_path / "out", True, 60, None, session)
    assert result.status == "ok" and [a["command"][3] for a in result.attempts] == [str(root), str(session)]


@pytest.mark.parametrize(
    ("mode", "status", "expected"),
    [
        ("dropped", "ok", "1500 trace events were dropped: raise profiler.neuron.max_events_per_nc"),
        ("fail", "failed", "neuron-explorer view exited with 3: ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch"),
        ("empty", "no_summary", "neuron-explorer wrote no Summary table"),
    ],
)
def test_tool_problems_become_warnings(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch, mode: str, status: str, expected: str
) -> None:
    monkeypatch.setenv("FAKE_EXPLORER_MODE", mode)
    result = process_capture(_capture(tmp_path), tmp_path / "out", True, 60)
    assert result.status == status and len(result.attempts) == 1
    assert any(w.startswith(expected) for w in result.warnings), result.warnings
    if mode == "dropped":
        assert result.columns["neuron_dropped_events"] == 1500


def test_without_the_tool_the_columns_are_empty_with_a_note(tmp_path: Path, no_explorer: None) -> None:
    result = process_capture(_capture(tmp_path), tmp_path / "out", True, 60)
    assert result.status == "not_found" and result.warnings[0].startswith("neuron-explorer is not on PATH")
    assert math.isnan(result.columns["neuron_total_time_us"]) and not (tmp_path / "out").exists()


def test_disabled_or_nothing_to_process(tmp_path: Path, fake_explorer: Path) -> None:
    assert process_capture(_capture(tmp_path), tmp_path / "out", False, 60).status == "disabled"
    assert process_capture(None, tmp_path / "out", True, 60).status == "no_capture"
    assert not fake_explorer.exists()  # never called


def test_an_unreadable_table_is_a_warning_not_a_crash(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(output_dir: Path) -> None:
        raise OSError("Parquet magic bytes not found in footer")

    monkeypatch.setattr("neuronexp.backends.neuron.explorer.read_output", broken)
    result = process_capture(_capture(tmp_path), tmp_path / "out", True, 60)
    assert result.status == "failed" and result.warnings[-1].startswith("neuron-explorer output unreadable (OSError")
    assert math.isnan(result.columns["neuron_total_time_us"])


def test_a_tool_past_its_timeout_is_given_up_with_a_note(
    tmp_path: Path, fake_explorer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_EXPLORER_MODE", "hang")
    result = process_capture(_capture(tmp_path), tmp_path / "out", True, 1.5, ["--ignore-system-profile"])
    assert result.status == "timeout" and len(result.attempts) == 1  # a retry would only time out again
    assert result.warnings == [
        "neuron-explorer view ran past 1.5 s (profiler.neuron.explorer_timeout_s); Summary columns are empty"
    ]
    assert math.isnan(result.columns["neuron_total_time_us"])


def _gone(pid: int) -> bool:
    """The process has exited (no /proc entry, or a zombie waiting for its new parent to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.timeout(30)
def test_a_timeout_kills_the_tools_whole_process_group(tmp_path: Path) -> None:
    """A stand-in `neuron-explorer` that starts a child of its own (as a server or worker would) and waits: past the
    timeout, neither it nor its child is left running, and neuronexp does not wait for the child's end either."""
    pid_file = tmp_path / "grandchild.pid"
    tool = tmp_path / "neuron-explorer"
    tool.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pid_file}\nwait\n")
    tool.chmod(0o755)
    started = time.monotonic()
    assert _run([str(tool)], 1.0) == (None, "")
    assert time.monotonic() - started < 10  # not the grandchild's 60 s
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild)
