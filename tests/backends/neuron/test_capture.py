"""Indexing a Neuron capture folder laid out as the capture guide and troubleshooting page document it."""

from __future__ import annotations

import json
from pathlib import Path

from neuronexp.backends.neuron.capture import artifact_columns, index_capture, place_framework_trace

PID_DIR = "i-0ade06f040a13f2bf_pid_210229"


def _write(path: Path, size: int = 64) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x01" * size)
    return path


def _pytorch_session(root: Path, ts: str = "20260701_120000_000", ntff_sizes: dict[int, int] | None = None) -> Path:
    """The documented PyTorch (session-mode) layout: <instance>_pid_<pid>/<timestamp>/..."""
    session = root / PID_DIR / ts
    for name in ("cpu_util.pb", "host_mem.pb", "ntrace.pb", "trace_info.pb", "trace.json"):
        _write(session / name)
    for h in ("1111", "2222"):
        _write(session / f"neff_{h}_vnc_0.neff")
    for nc, size in (ntff_sizes or {0: 4096}).items():
        _write(session / f"profile_nc_{nc}_session_0.ntff", size)
    return session


ALL = ["DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY"]


def test_pytorch_session_layout_is_one_session_with_everything_present(tmp_path: Path) -> None:
    root = tmp_path / "job" / "neuron_profile"
    session = _pytorch_session(root)
    index = index_capture(root, ALL)
    (s,) = index.sessions
    assert (s.instance_id, s.pid, s.timestamp) == ("i-0ade06f040a13f2bf", 210229, "20260701_120000_000")
    assert set(s.files) == {"cpu_util.pb", "host_mem.pb", "ntrace.pb", "trace_info.pb", "trace.json"}
    (ntff,) = s.ntffs
    assert (
        ntff["scheme"] == "session"
        and ntff["nc"] == 0
        and ntff["neffs"] == ["neff_1111_vnc_0.neff", "neff_2222_vnc_0.neff"]
    )
    assert index.warnings == []
    # Every documented `neuron-explorer view -d` example passes the capture root, not the session folder.
    assert session.parent.parent == root
    cols = artifact_columns(index, tmp_path / "job")
    assert cols == {
        "neuron_profile_dir": "neuron_profile",
        "neuron_upload_dir": "neuron_profile",
        "neuron_sessions": 1,
        "neuron_neff_files": 2,
        "neuron_ntff_files": 1,
        "neuron_ntff_empty": 0,
        "neuron_ntff_unpaired": 0,
        "neuron_neffs_beside_ntffs": True,
        "neuron_system_profile": True,
        "neuron_framework_trace": True,
        "neuron_memory_snapshots": 0,
    }
    json.dumps(index.to_json())  # the manifest part is plain JSON


def test_model_mode_naming_pairs_ntff_and_neff_by_hash(tmp_path: Path) -> None:
    """Env-var/CLI naming: <hash>_instid_0_vnc_<n>.ntff with neff_<hash>.neff; an orphan NTFF is reported."""
    folder = tmp_path / PID_DIR
    _write(folder / "395760075800974_instid_0_vnc_0.ntff")
    _write(folder / "neff_395760075800974.neff")
    _write(folder / "777_instid_0_vnc_1.ntff")
    index = index_capture(tmp_path, ["DEVICE"])
    (s,) = index.sessions
    assert s.timestamp is None and s.pid == 210229
    paired = {n["hash"]: n["neff"] for n in s.ntffs}
    assert paired == {"395760075800974": "neff_395760075800974.neff", "777": None}
    assert artifact_columns(index, tmp_path)["neuron_ntff_unpaired"] == 1
    (warning,) = index.warnings
    assert warning.startswith("1 .ntff without a .neff of the same hash (777)")


def test_vllm_neffs_subfolder_belongs_to_its_session(tmp_path: Path) -> None:
    folder = tmp_path / PID_DIR
    _write(folder / "42_instid_0_vnc_0.ntff")
    _write(folder / "neffs" / "graph_42.neff")
    index = index_capture(tmp_path, ["DEVICE"])
    (s,) = index.sessions
    assert s.neffs[0]["file"] == "neffs/graph_42.neff" and s.ntffs[0]["neff"] == "neffs/graph_42.neff"


def test_empty_ntffs_follow_the_troubleshooting_guide(tmp_path: Path) -> None:
    _pytorch_session(tmp_path / "some", ntff_sizes={0: 4096, 1: 0, 2: 0})
    (warning,) = index_capture(tmp_path / "some", ALL).warnings
    assert warning.startswith("2 of 3 .ntff files are empty (NeuronCores held but unused): set neuron.num_cores")
    _pytorch_session(tmp_path / "none", ntff_sizes={0: 0})
    index = index_capture(tmp_path / "none", ALL)
    assert index.warnings == ["all 1 .ntff files are empty: nothing executed on a NeuronCore while capturing"]
    assert artifact_columns(index, tmp_path)["neuron_ntff_empty"] == 1


def test_missing_files_for_requested_modes_are_named(tmp_path: Path) -> None:
    session = tmp_path / PID_DIR / "ts"
    _write(session / "ntrace.pb")  # trace_info.pb, the .ntff and cpu_util.pb are missing
    warnings = index_capture(tmp_path, ["DEVICE", "RUNTIME", "CPU_UTIL"]).warnings
    assert "ProfileMode.DEVICE was requested but no .ntff was written (device profiling was off)" in warnings
    assert "ProfileMode.RUNTIME was requested but trace_info.pb is missing" in warnings
    assert "ProfileMode.CPU_UTIL was requested but cpu_util.pb is missing" in warnings
    # Not requested, not expected:
    assert not any("HOST_MEMORY" in w for w in warnings)


def test_ntffs_without_any_neff_point_at_the_neff_cache(tmp_path: Path) -> None:
    _write(tmp_path / PID_DIR / "ts" / "profile_nc_0_session_0.ntff")
    _write(tmp_path / PID_DIR / "ts" / "trace_info.pb")
    index = index_capture(tmp_path, ["DEVICE"], neff_hint="/home/u/.cache/neuronexp/neff")
    assert any(
        w.startswith("no .neff files next to the .ntff files (NeuronConfig was given /home/u/.cache/neuronexp/neff)")
        for w in index.warnings
    )
    assert artifact_columns(index, tmp_path)["neuron_neffs_beside_ntffs"] is False


def test_an_empty_or_missing_capture_says_so(tmp_path: Path) -> None:
    for root in (tmp_path / "absent", tmp_path):
        index = index_capture(root, ALL)
        assert index.sessions == [] and len(index.warnings) == 1
        assert "profiling was not enabled, or nothing ran on a NeuronCore" in index.warnings[0]
        cols = artifact_columns(index, tmp_path)
        assert cols["neuron_sessions"] == 0 and cols["neuron_upload_dir"] is None


def test_several_processes_upload_the_capture_root(tmp_path: Path) -> None:
    _pytorch_session(tmp_path)
    other = tmp_path / "i-0ade06f040a13f2bf_pid_210230" / "20260701_120001_000"
    _write(other / "trace_info.pb")
    _write(other / "ntrace.pb")
    index = index_capture(tmp_path, ["RUNTIME"])
    assert [s.pid for s in index.sessions] == [210229, 210230] and artifact_columns(index, tmp_path)[
        "neuron_upload_dir"
    ] == "."


def test_framework_trace_is_copied_into_the_one_session_lacking_it(tmp_path: Path) -> None:
    session = _pytorch_session(tmp_path / "neuron_profile")
    (session / "trace.json").unlink()
    job_trace = _write(tmp_path / "trace.json", 10)
    index = index_capture(tmp_path / "neuron_profile", ALL)
    assert place_framework_trace(index, job_trace) == f"{PID_DIR}/20260701_120000_000/trace.json"
    assert (session / "trace.json").read_bytes() == job_trace.read_bytes()
    assert artifact_columns(index, tmp_path)["neuron_framework_trace"] is True
    assert place_framework_trace(index, job_trace) is None  # present now: left alone


def test_rank_named_framework_traces_and_memory_snapshots_are_recognised(tmp_path: Path) -> None:
    """Troubleshooting page: neuron_framework_trace_rank_<N>.json; SDK 2.33: a system profile may hold a memory
    snapshot."""
    session = _pytorch_session(tmp_path / "neuron_profile")
    (session / "trace.json").unlink()
    _write(session / "neuron_framework_trace_rank_0.json")
    _write(session / "memory_snapshot.pickle")
    index = index_capture(tmp_path / "neuron_profile", ALL)
    (s,) = index.sessions
    assert s.has_framework_trace and s.memory_snapshots == ["memory_snapshot.pickle"] and s.unrecognized == []
    cols = artifact_columns(index, tmp_path)
    assert cols["neuron_framework_trace"] is True and cols["neuron_memory_snapshots"] == 1
    assert place_framework_trace(index, _write(tmp_path / "trace.json")) is None  # it has one already


def test_a_folder_without_capture_files_is_no_session(tmp_path: Path) -> None:
    session = _pytorch_session(tmp_path)
    _write(tmp_path / "logs" / "run.log")
    _write(tmp_path / PID_DIR / "notes.txt")
    index = index_capture(tmp_path, ALL)
    assert [s.dir for s in index.sessions] == [str(session.relative_to(tmp_path))]
