"""The NEFF cache a Neuron cell pins before its first compile (TORCH_NEURONX_NEFF_CACHE_DIR): which one, and the rule
every folder neuronexp chooses or creates for it must pass. A NEFF is code the NeuronCore runs, so a cache another
user can write into, or one reached through a symbolic link, is refused in one line (docs/guarantees.md)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from neuronexp.config import ConfigError, NeuronProfilerConfig
from neuronexp.host.cache_dir import default_cache_dir

NEFF_CACHE_VAR = "TORCH_NEURONX_NEFF_CACHE_DIR"
PINNED_MARK = "NEURONEXP_NEFF_CACHE_PINNED"  # the value neuronexp itself set (a later cell of the process re-pins)
# How the NEFF cache was chosen (the row's neuron_neff_cache_source).
FROM_ENV, FROM_KEY, FROM_DEFAULT = "TORCH_NEURONX_NEFF_CACHE_DIR", "profiler.neuron.neff_cache_dir", "neuronexp cache"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


def restore_env(saved: dict[str, str | None]) -> None:
    """The variables as they were before this process set them (None: unset)."""
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def private_problem(path: Path) -> str | None:
    """Why `path` may not hold NEFFs neuronexp runs (None: it may): a symbolic link, not a folder, owned by another
    user, or writable by the group or others. Read without following a link (lstat)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != os.geteuid():
        return f"is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "others" if info.st_mode & stat.S_IWOTH else "its group"
        return f"is writable by {who} (mode {info.st_mode & 0o777:o})"
    return None


def _refusal(key: str, folder: Path, problem: str) -> ConfigError:
    return ConfigError(
        key,
        str(folder),
        f"{problem}: a NEFF is code the NeuronCore runs, so neuronexp keeps NEFFs only in folders of your own that "
        "no one else can write and no link leads to (chmod go-w, or choose another folder; docs/neuron.md)",
    )


def private_dirs(top: Path, below: tuple[str, ...], key: str) -> Path:
    """`top`/`below...` made as folders of this user (mode 0700 where made here, missing parents of `top` too), each
    checked by the rule (private_problem), existing or made, and each parent made here. Raises ConfigError naming
    `key` and the first folder that fails."""
    chain = [top, *(top.joinpath(*below[: i + 1]) for i in range(len(below)))]
    parents = [p for p in reversed(top.parents) if not os.path.lexists(p)]
    for folder in [*parents, *chain]:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:  # there before, or made meanwhile by another process: checked like any other
            pass
        if problem := private_problem(folder):
            raise _refusal(key, folder, problem)
    return chain[-1]


def sdk_folder() -> str:
    """The per-SDK-version folder name: NEFFs a compiler of another version wrote are not reused (torch-neuronx and
    neuronx-cc versions, from their package metadata, else the loaded module's __version__)."""
    parts = []
    for dist, module in (("torch-neuronx", "torch_neuronx"), ("neuronx-cc", None)):
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            loaded = sys.modules.get(module) if module else None
            version = str(getattr(loaded, "__version__", "")) or ("unknown" if module else "")
        if version:
            parts.append(f"{dist}-{_UNSAFE.sub('_', version)}")
    return "_".join(parts)


@dataclass(frozen=True)
class NeffCache:
    """The NEFF cache pinned for the cell's process: the path, how it was chosen, whether torch_neuronx was already
    imported then (TorchNeuron's autoload), a note for the row, and what it replaced (for a backend that gives up)."""

    path: str
    source: str
    imported_before: bool
    note: str | None = None
    saved: dict[str, str | None] = field(default_factory=dict)
    created: bool = False  # the folder did not exist before

    def unpin(self) -> None:
        """Undo the pin of a backend that could not start: the variables as they were, the folder if made empty."""
        restore_env(self.saved)
        if self.created and Path(self.path).is_dir() and not any(Path(self.path).iterdir()):
            os.rmdir(self.path)


def chosen_cache(cfg: NeuronProfilerConfig) -> tuple[Path, str]:
    """(the cache's folder, how it was chosen), without touching the disk: the user's own TORCH_NEURONX_NEFF_CACHE_DIR
    (not one neuronexp pinned), else profiler.neuron.neff_cache_dir, else <neuronexp cache dir>/neff/<SDK version>."""
    env, ours = os.environ.get(NEFF_CACHE_VAR), os.environ.get(PINNED_MARK)
    if env and env != ours:
        return Path(env), FROM_ENV
    if cfg.neff_cache_dir:
        return Path(cfg.neff_cache_dir).expanduser().absolute(), FROM_KEY
    return default_cache_dir().expanduser().absolute() / "neff" / sdk_folder(), FROM_DEFAULT


def check_cache(cfg: NeuronProfilerConfig) -> None:
    """The rule on what neuronexp would choose or create, before any work (ConfigError): the key's folder, or the
    default cache's root, `neff` and version folders, where they exist already. The user's own variable is left as
    TorchNeuron would use it without neuronexp."""
    path, source = chosen_cache(cfg)
    if source == FROM_ENV:
        return
    key = FROM_KEY if source == FROM_KEY else "NEURONEXP_CACHE_DIR"
    for folder in (path,) if source == FROM_KEY else (path.parent.parent, path.parent, path):
        if problem := private_problem(folder):
            raise _refusal(key, folder, problem)


def pin_neff_cache(cfg: NeuronProfilerConfig) -> NeffCache:
    """Set TORCH_NEURONX_NEFF_CACHE_DIR before the first compile (chosen_cache), its folders made and checked by the
    rule (private_dirs) unless the user's own variable named it. Raises ConfigError where the rule fails."""
    path, source = chosen_cache(cfg)
    imported = "torch_neuronx" in sys.modules
    note = None
    if source == FROM_ENV and cfg.neff_cache_dir:
        if os.path.abspath(os.path.expanduser(cfg.neff_cache_dir)) != os.path.abspath(path):
            note = f"profiler.neuron.neff_cache_dir={cfg.neff_cache_dir} not used: {NEFF_CACHE_VAR}={path} is set"
    created = not os.path.lexists(path)
    if source == FROM_ENV:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    elif source == FROM_KEY:
        private_dirs(path, (), FROM_KEY)
    else:
        private_dirs(path.parent.parent, ("neff", path.name), "NEURONEXP_CACHE_DIR")
    saved = {k: os.environ.get(k) for k in (NEFF_CACHE_VAR, PINNED_MARK)}
    os.environ[NEFF_CACHE_VAR] = os.environ[PINNED_MARK] = str(path)
    return NeffCache(str(path), source, imported, note, saved, created)
