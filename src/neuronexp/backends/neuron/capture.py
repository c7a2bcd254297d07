"""Index what a Neuron capture wrote: per-process session folders, NEFF/NTFF pairs, system traces, framework traces
and memory snapshots, under every naming the Neuron docs show (docs/neuron.md, "What a Neuron cell writes"). Nothing
here assumes one nesting: any folder holding capture files is a session."""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SYSTEM_FILES = {
    "trace.json": "framework_trace",
    "ntrace.pb": "ntrace",
    "trace_info.pb": "trace_info",
    "cpu_util.pb": "cpu_util",
    "host_mem.pb": "host_mem",
}
# The file each ProfileMode is documented to produce (DEVICE: .ntff, checked separately).
MODE_FILES = {"RUNTIME": ("trace_info.pb", "ntrace.pb"), "CPU_UTIL": ("cpu_util.pb",), "HOST_MEMORY": ("host_mem.pb",)}

_PROCESS_DIR = re.compile(r"^(?P<instance>.+)_pid_(?P<pid>\d+)$")
_NEFF = re.compile(r"^(?:neff|graph)_(?P<hash>[0-9A-Za-z]+?)(?:_vnc_(?P<vnc>\d+))?\.neff$")
_NTFF_MODEL = re.compile(r"^(?P<hash>[0-9A-Za-z]+)_instid_(?P<inst>\d+)_vnc_(?P<vnc>\d+)\.ntff$")
_NTFF_SESSION = re.compile(r"^profile_nc_(?P<nc>\d+)_session_(?P<session>\d+)\.ntff$")
_RANK_TRACE = re.compile(r"^neuron_framework_trace_rank_(?P<rank>\d+)\.json$")


def is_framework_trace(name: str) -> bool:
    return name == "trace.json" or _RANK_TRACE.match(name) is not None


def _is_memory_snapshot(name: str) -> bool:
    return name.endswith(".pickle") or "snapshot" in name.lower()


@dataclass
class Session:
    """One folder of capture files (normally one process's one profiling session)."""

    dir: str  # relative to the capture root
    instance_id: str | None = None
    pid: int | None = None
    timestamp: str | None = None
    files: dict[str, int] = field(default_factory=dict)  # system/framework files present: name -> bytes
    neffs: list[dict[str, Any]] = field(default_factory=list)
    ntffs: list[dict[str, Any]] = field(default_factory=list)
    memory_snapshots: list[str] = field(default_factory=list)
    unrecognized: list[str] = field(default_factory=list)

    @property
    def has_framework_trace(self) -> bool:
        return any(is_framework_trace(name) for name in self.files)


@dataclass
class CaptureIndex:
    root: Path
    sessions: list[Session] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ntffs(self) -> list[dict[str, Any]]:
        return [n for s in self.sessions for n in s.ntffs]

    @property
    def neffs(self) -> list[dict[str, Any]]:
        return [n for s in self.sessions for n in s.neffs]

    def to_json(self) -> dict[str, Any]:
        # Neuron Explorer is given the capture root, as every documented `view -d` example does (it keeps each
        # process's `<instance>_pid_<pid>/` folder, to which framework events are tied).
        return {
            "root": str(self.root),
            "upload_dir": str(self.root),
            "sessions": [asdict(s) for s in self.sessions],
            "warnings": list(self.warnings),
        }


def _session_for(root: Path, folder: Path) -> Session:
    rel = folder.relative_to(root)
    parts = rel.parts
    session = Session(dir=str(rel))
    for i, part in enumerate(parts):
        if m := _PROCESS_DIR.match(part):
            session.instance_id, session.pid = m["instance"], int(m["pid"])
            session.timestamp = parts[i + 1] if i + 1 < len(parts) else None
    return session


def _add_file(session: Session, path: Path) -> bool:
    """`path` listed in `session` by its kind; False where it is no capture file (nothing listed)."""
    size, name = path.stat().st_size, path.name
    if name in SYSTEM_FILES or is_framework_trace(name):
        session.files[name] = size
    elif _is_memory_snapshot(name):
        session.memory_snapshots.append(name)
    elif m := _NEFF.match(name):
        session.neffs.append(
            {
                "file": str(path.name if path.parent.name != "neffs" else f"neffs/{name}"),
                "hash": m["hash"],
                "vnc": None if m["vnc"] is None else int(m["vnc"]),
                "bytes": size,
            }
        )
    elif m := _NTFF_MODEL.match(name):
        session.ntffs.append({"file": name, "scheme": "model", "hash": m["hash"], "nc": int(m["vnc"]), "bytes": size})
    elif m := _NTFF_SESSION.match(name):
        ntff = {"file": name, "scheme": "session", "hash": None, "nc": int(m["nc"]), "session": int(m["session"])}
        session.ntffs.append(dict(ntff, bytes=size))
    elif path.suffix in (".neff", ".ntff", ".pb"):
        session.unrecognized.append(name)
    else:
        return False
    return True


def index_capture(root: Path, modes: list[str], neff_hint: str = "the NEFF cache") -> CaptureIndex:
    """Walk `root` and return its sessions plus the troubleshooting guide's warnings for what is missing.

    `neff_hint` names where the NEFFs were expected, for the warning when none reached the capture.
    """
    index = CaptureIndex(root)
    by_folder: dict[Path, Session] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []:
        folder = path.parent.parent if path.parent.name == "neffs" else path.parent
        session = by_folder.get(folder) or _session_for(root, folder)
        if _add_file(session, path):  # a folder holding capture files is a session
            by_folder[folder] = session
    index.sessions = list(by_folder.values())
    _pair(index)
    index.warnings = _warnings(index, modes, neff_hint)
    return index


def _pair(index: CaptureIndex) -> None:
    """Model-mode NTFFs pair with the NEFF of the same hash; session NTFFs cover the NEFFs of their core."""
    for s in index.sessions:
        hashes = {n["hash"]: n["file"] for n in s.neffs}
        for ntff in s.ntffs:
            if ntff["scheme"] == "model":
                ntff["neff"] = hashes.get(ntff["hash"])
            else:
                ntff["neffs"] = [n["file"] for n in s.neffs if n["vnc"] in (None, ntff["nc"])]


def _warnings(index: CaptureIndex, modes: list[str], neff_hint: str) -> list[str]:
    if not index.sessions:
        return [
            f"no Neuron capture files under {index.root.name}/: profiling was not enabled, "
            "or nothing ran on a NeuronCore"
        ]
    out: list[str] = []
    ntffs, present = index.ntffs, {name for s in index.sessions for name in s.files}
    if "DEVICE" in modes and not ntffs:
        out.append("ProfileMode.DEVICE was requested but no .ntff was written (device profiling was off)")
    empty = [n for n in ntffs if n["bytes"] == 0]
    if ntffs and len(empty) == len(ntffs):
        out.append(f"all {len(ntffs)} .ntff files are empty: nothing executed on a NeuronCore while capturing")
    elif empty:
        out.append(
            f"{len(empty)} of {len(ntffs)} .ntff files are empty (NeuronCores held but unused): set neuron.num_cores "
            "to the cores used, or profiler.neuron.capture_enabled_for_nc"
        )
    unpaired = sorted({n["hash"] for n in ntffs if n["scheme"] == "model" and not n.get("neff")})
    if unpaired:
        out.append(
            f"{len(unpaired)} .ntff without a .neff of the same hash ({', '.join(unpaired[:3])}): Neuron Explorer "
            "cannot process them; keep profiler.neuron.copy_neffs=true or copy the NEFFs from the compile cache"
        )
    if ntffs and not index.neffs:
        out.append(
            f"no .neff files next to the .ntff files (NeuronConfig was given {neff_hint}): set "
            "profiler.neuron.neff_cache_dir (or TORCH_NEURONX_NEFF_CACHE_DIR) to the folder that holds them "
            "before the run; Neuron Explorer cannot process an NTFF without its NEFF"
        )
    for mode, names in MODE_FILES.items():
        missing = [n for n in names if n not in present]
        if mode in modes and missing:
            out.append(f"ProfileMode.{mode} was requested but {', '.join(missing)} is missing")
    return out


def place_framework_trace(index: CaptureIndex, job_trace: Path) -> str | None:
    """Copy neuronexp's trace.json into the one system-profile session that lacks one.

    The troubleshooting guide: framework events only show when the trace sits in the matching
    `<instance-id>_pid_<pid>/` folder. Returns the session-relative path written, or None.
    """
    targets = [s for s in index.sessions if "trace_info.pb" in s.files and not s.has_framework_trace]
    if len(targets) != 1 or len(index.sessions) != 1 or not job_trace.is_file():
        return None
    dest = index.root / targets[0].dir / "trace.json"
    shutil.copyfile(job_trace, dest)
    targets[0].files["trace.json"] = dest.stat().st_size
    return str(Path(targets[0].dir) / "trace.json")


def latest_framework_trace(root: Path) -> Path | None:
    """The framework trace written last under the capture root (NeuronProfiler.export_trace's, where it landed)."""
    found = [p for p in root.rglob("*.json") if is_framework_trace(p.name) and p.is_file() and not p.is_symlink()]
    return max(found, key=lambda p: p.stat().st_mtime_ns) if root.is_dir() and found else None


def artifact_columns(index: CaptureIndex, job_dir: Path) -> dict[str, Any]:
    """The cell-row columns describing the capture (paths relative to the job directory)."""
    ntffs = index.ntffs
    profiled = [s for s in index.sessions if any(n["bytes"] > 0 for n in s.ntffs)]  # a non-empty NTFF to pair
    return {
        "neuron_profile_dir": _rel(index.root, job_dir),
        "neuron_upload_dir": _rel(index.root, job_dir) if index.sessions else None,
        "neuron_sessions": len(index.sessions),
        "neuron_neff_files": len(index.neffs),
        "neuron_ntff_files": len(ntffs),
        "neuron_ntff_empty": sum(n["bytes"] == 0 for n in ntffs),
        "neuron_ntff_unpaired": sum(n["scheme"] == "model" and not n.get("neff") for n in ntffs),
        "neuron_neffs_beside_ntffs": all(s.neffs for s in profiled) if profiled else None,
        "neuron_system_profile": any({"trace_info.pb", "ntrace.pb"} <= set(s.files) for s in index.sessions),
        "neuron_framework_trace": any(s.has_framework_trace for s in index.sessions),
        "neuron_memory_snapshots": sum(len(s.memory_snapshots) for s in index.sessions),
    }


def _rel(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)
