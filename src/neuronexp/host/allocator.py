"""Host allocation that behaves the same in every process that runs a cell (`allocator` key): glibc's dynamic
mmap and trim thresholds make some processes fault every tensor in again on each call (8x slower in about a third
of fresh processes, docs/methodology.md, "Host allocation"). Modes: stable (fix both thresholds: freed memory
stays), system (change nothing, record it), preloaded (a user's LD_PRELOADed allocator, checked and recorded)."""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

MODES = ("stable", "system", "preloaded")
# <malloc.h> parameter numbers (glibc).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# glibc 2.26+ accepts and honours 1 GiB (checked up to 256 MiB blocks); older ones refuse more than
# HEAP_MAX_SIZE/2 = 32 MiB on 64-bit, which still covers tensors up to 32 MiB.
_MMAP_THRESHOLD = 1 << 30
_MMAP_THRESHOLD_FALLBACK = 4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long)
_NEVER_TRIM = 2**31 - 1  # mallopt takes an int; glibc stores it as size_t
_REPLACEMENTS = (("jemalloc", "libjemalloc"), ("tcmalloc", "libtcmalloc"), ("mimalloc", "libmimalloc"))
# The id of the process that applied `stable`, in its environment: mallopt settings outlive the cell that asked
# for them, so a later `system` cell of that process must say it is not pristine. A forked child inherits the
# settings and re-marks itself (os.register_at_fork); an exec'd process inherits only the variable, whose id is
# not its own, and starts with glibc's defaults, as it should.
APPLIED_ENV = "NEURONEXP_MALLOC_TUNED"
# glibc reads these at process start-up, before any Python runs: how a fresh (exec'd) cell process gets
# `stable` before its interpreter allocates anything. The same values mallopt sets.
STABLE_ENV = {"MALLOC_MMAP_THRESHOLD_": str(_MMAP_THRESHOLD), "MALLOC_TRIM_THRESHOLD_": str(_NEVER_TRIM)}


def _glibc_version() -> str | None:
    try:
        fn = ctypes.CDLL(None).gnu_get_libc_version
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_char_p
    return fn().decode()


def _replacement() -> str | None:
    """A malloc replacement mapped into this process (Linux: /proc/self/maps), e.g. from LD_PRELOAD."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            maps = f.read()
    except OSError:
        return None
    return next((name for name, lib in _REPLACEMENTS if lib in maps), None)


def malloc_name() -> str:
    """What serves malloc here: "jemalloc", "tcmalloc", "mimalloc", "glibc 2.36", or the platform's name."""
    replacement = _replacement()
    if replacement:
        return replacement
    version = _glibc_version()
    if version:
        return f"glibc {version}"
    return {"darwin": "macOS libmalloc", "win32": "Windows CRT"}.get(sys.platform, f"non-glibc ({sys.platform})")


def _mallopt(param: int, value: int) -> bool:
    fn = ctypes.CDLL(None).mallopt
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn(param, value) == 1


def _apply_stable(malloc: str) -> tuple[dict[str, int], str | None]:
    if not malloc.startswith("glibc"):
        return {}, f"mallopt tuning needs glibc's malloc; malloc here is {malloc}: nothing applied"
    threshold = _MMAP_THRESHOLD
    if not _mallopt(_M_MMAP_THRESHOLD, threshold):
        threshold = _MMAP_THRESHOLD_FALLBACK
        if not _mallopt(_M_MMAP_THRESHOLD, threshold):
            return {}, "glibc refused mallopt(M_MMAP_THRESHOLD): nothing applied"
    if not _mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIM):
        refused = "glibc refused mallopt(M_TRIM_THRESHOLD): only the mmap threshold is fixed"
        return {"mmap_threshold": threshold}, refused
    _mark_tuned()
    return {"mmap_threshold": threshold, "trim_threshold": _NEVER_TRIM}, None


def _remark() -> None:
    os.environ[APPLIED_ENV] = str(os.getpid())


def _mark_tuned() -> None:
    if os.environ.get(APPLIED_ENV) == str(os.getpid()):
        return  # marked already (and, where fork is, the re-marking of children is registered)
    _remark()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_remark)


def apply(mode: str) -> dict[str, Any]:
    """Apply `mode` in this process (idempotent) and return what was done, for env.json and the row: {"mode",
    "malloc", "applied": {setting: value}, "note": why the mode did not apply as asked, or None}."""
    if mode not in MODES:
        raise ValueError(f"allocator mode {mode!r}: expected one of {', '.join(MODES)}")
    malloc = malloc_name()
    applied: dict[str, int] = {}
    note: str | None = None
    if mode == "stable":
        applied, note = _apply_stable(malloc)
    elif mode == "system":
        if os.environ.get(APPLIED_ENV) == str(os.getpid()):  # this process, or the one it was forked from
            note = "stable was applied earlier in this process (or its parent); mallopt settings cannot be undone"
    elif malloc.startswith("glibc") or malloc.startswith("non-glibc"):
        note = (
            "no replacement malloc is loaded: start neuronexp with LD_PRELOAD=<path of libjemalloc.so.2 or "
            "libtcmalloc_minimal.so.4>; nothing applied"
        )
    return {"mode": mode, "malloc": malloc, "applied": applied, "note": note}


def preload_environment() -> dict[str, str]:
    """Environment variables that tune a replacement malloc, recorded in env.json (never set here)."""
    keys = ("LD_PRELOAD", "GLIBC_TUNABLES", "MALLOC_CONF", "TCMALLOC_RELEASE_RATE")
    return {k: v for k, v in sorted(os.environ.items()) if k in keys or k.startswith("MALLOC_")}


def fresh_process_env(env: dict[str, str], mode: str) -> dict[str, str]:
    """The environment of a fresh (exec'd) cell process: `stable` set for glibc to read at start-up, and no
    inherited mark of this process's own tuning (an exec'd process starts with glibc's defaults)."""
    env = {k: v for k, v in env.items() if k != APPLIED_ENV}
    if mode == "stable":
        env = {**STABLE_ENV, **env}  # a value the user set in the environment wins
    return env
