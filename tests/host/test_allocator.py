"""Host allocation: what each `allocator` mode does to a real process's malloc (issue 9, point 1).

Each check runs in a fresh interpreter: mallopt settings are process-wide and cannot be undone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuronexp.host import allocator

GLIBC = pytest.mark.skipif(not allocator.malloc_name().startswith("glibc"), reason="mallopt tuning is glibc's")
TCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")

# Where does a 64 MiB block come from: the brk heap, or an mmap of its own (which the kernel hands back on
# free, so the next call faults all its pages in again)?
WHERE_64MIB = """
import ctypes, json, sys
from neuronexp.host import allocator
record = allocator.apply(sys.argv[1]) if sys.argv[1] != "-" else None
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
addr = libc.malloc(64 << 20)
heap = next(l for l in open("/proc/self/maps") if l.rstrip().endswith("[heap]"))
lo, hi = (int(x, 16) for x in heap.split()[0].split("-"))
print(json.dumps({"in_heap": lo <= addr < hi, "record": record}))
"""

AFTER_STABLE = """
import json, os, subprocess, sys
from neuronexp.host import allocator
allocator.apply("stable")
out = {"system_here": allocator.apply("system")["note"]}
read, write = os.pipe()
if os.fork() == 0:
    os.write(write, json.dumps(allocator.apply("system")["note"]).encode())
    os._exit(0)
os.wait()
out["system_in_fork"] = json.loads(os.read(read, 10000))
code = "import json; from neuronexp.host import allocator; print(json.dumps(allocator.apply('system')['note']))"
out["system_in_exec"] = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
print(json.dumps(out))
"""

FAULTS_PER_CALL = """
import json, resource, sys
from neuronexp.host import allocator
allocator.apply("stable")
import torch
torch.set_num_threads(1)
x = torch.randn(1, 1024, 2048)  # 8 MiB float32 temporaries, in the range that faulted in a third of processes
f = lambda: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * 2.0
for _ in range(5):
    f()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    f()
print(json.dumps({"faults_per_call": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20}))
"""


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != allocator.APPLIED_ENV}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env={**clean, **(env or {})}
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@GLIBC
def test_stable_keeps_large_blocks_on_the_heap() -> None:
    assert _run(WHERE_64MIB, "-")["in_heap"] is False  # glibc's default: an mmap of its own
    stable = _run(WHERE_64MIB, "stable")
    assert stable["in_heap"] is True
    assert stable["record"]["applied"]["mmap_threshold"] >= 32 << 20 and stable["record"]["note"] is None
    assert stable["record"]["mode"] == "stable" and stable["record"]["malloc"].startswith("glibc")


@GLIBC
def test_the_environment_a_fresh_cell_process_gets_applies_stable_at_exec() -> None:
    env = allocator.fresh_process_env({}, "stable")
    assert _run(WHERE_64MIB, "-", env=env)["in_heap"] is True
    assert allocator.fresh_process_env({}, "system") == {}
    # An exec'd process starts pristine: this process's own tuning mark is not passed on.
    assert allocator.APPLIED_ENV not in allocator.fresh_process_env({allocator.APPLIED_ENV: "stable"}, "system")


@GLIBC
def test_stable_means_no_page_faults_per_call() -> None:
    # Each 8 MiB tensor whose pages went back to the kernel faults 2,048 times a call. A heap that still grows
    # once inside the 20 calls (a one-time 8 MiB extension) shows as 102 a call; per-call faulting as >= 2,048.
    assert _run(FAULTS_PER_CALL)["faults_per_call"] < 512


def test_system_changes_nothing_and_says_when_it_cannot_be_pristine() -> None:
    assert _run(WHERE_64MIB, "system")["record"] == {
        "mode": "system",
        "malloc": allocator.malloc_name(),
        "applied": {},
        "note": None,
    }
    # A mark left by another process (an exec'd child inherits its parent's environment) means nothing here.
    assert _run(WHERE_64MIB, "system", env={allocator.APPLIED_ENV: "1"})["record"]["note"] is None
    assert "cannot be undone" in _run(AFTER_STABLE)["system_here"]


def test_a_forked_child_knows_it_inherited_the_tuning_and_an_execd_one_does_not() -> None:
    record = _run(AFTER_STABLE)
    assert "cannot be undone" in record["system_in_fork"]
    assert record["system_in_exec"] is None


def test_preloaded_without_a_preloaded_malloc_says_so() -> None:
    record = _run(WHERE_64MIB, "preloaded")["record"]
    assert record["applied"] == {} and "LD_PRELOAD" in record["note"]


@pytest.mark.skipif(not TCMALLOC.exists(), reason="libtcmalloc-minimal4 is not installed")
def test_preloaded_tcmalloc_is_recognised_and_stable_does_not_pretend() -> None:
    env = {"LD_PRELOAD": str(TCMALLOC)}
    assert _run(WHERE_64MIB, "preloaded", env=env)["record"] == {
        "mode": "preloaded",
        "malloc": "tcmalloc",
        "applied": {},
        "note": None,
    }
    stable = _run(WHERE_64MIB, "stable", env=env)["record"]
    assert stable["applied"] == {} and "malloc here is tcmalloc" in stable["note"]


def test_without_glibc_nothing_is_applied_and_the_row_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "malloc_name", lambda: "musl")
    monkeypatch.setattr(allocator, "_mallopt", lambda *a: pytest.fail("mallopt must not be called"))
    record = allocator.apply("stable")
    assert record["applied"] == {} and "needs glibc" in record["note"] and "musl" in record["note"]


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="stable, system, preloaded"):
        allocator.apply("fast")
