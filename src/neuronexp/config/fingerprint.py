"""What a cell's code was: a fingerprint of the module's source and of your files it imports, part of its run_id,
so editing a layer makes its cells new cells instead of reusing the old code's numbers. Read from the files'
import statements, never by importing them (values are checked before torch is imported). What it hashes and
what it cannot see: docs/guarantees.md."""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path


def code_fingerprint(target: object) -> str:
    """A short hash of the code behind `module._target_` (what it covers: docs/guarantees.md)."""
    if not isinstance(target, str) or "." not in target:
        return _hash([], _versions())
    return _fingerprint(target, tuple(_user_roots()), _versions())


@lru_cache(maxsize=1)  # installed versions do not change under a running process
def _versions() -> tuple[str, str]:
    from importlib import metadata  # here: `neuronexp --help` imports this module and never asks

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"

    return version("neuronexp"), version("torch")


def _user_roots() -> list[str]:
    """Where your own modules are: the working directory, --config-dir and PYTHONPATH (cli.main puts both there)."""
    roots = [os.getcwd(), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return list(dict.fromkeys(os.path.realpath(r) for r in roots))


def code_files(target: object) -> dict[str, str]:
    """The files `code_fingerprint(target)` hashes, each as a name a person knows it by (its path under the working
    directory, PYTHONPATH or neuronexp's package) → a short hash of its content: what a rerun compares to say which
    file changed (a job's cell.json records it)."""
    if not isinstance(target, str) or "." not in target:
        return {}
    key = (target, tuple(_user_roots()), _versions())
    _fingerprint(*key)
    roots, digests = key[1], _CACHE[key][2]
    bases = [Path(r) for r in roots] + [Path(__file__).resolve().parents[2]]
    return {_shown(Path(path), bases): digest for path, digest in digests}


def _shown(path: Path, bases: list[Path]) -> str:
    for base in bases:
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


# (target, roots, versions) → (the files' stat signature, fingerprint, each file's content hash): a sweep asks once
# per cell, and the files are read again only when one of them changed (a long-lived process, such as a test
# session, sees an edit).
_CACHE: dict[
    tuple[str, tuple[str, ...], tuple[str, str]],
    tuple[tuple[tuple[str, int, int], ...], str, tuple[tuple[str, str], ...]],
] = {}


def _fingerprint(target: str, roots: tuple[str, ...], versions: tuple[str, str]) -> str:
    key = (target, roots, versions)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == _signature(p for p, _, _ in cached[0]):
        return cached[1]
    files = _files(target, roots)
    digests = tuple((str(p), hashlib.sha256(data).hexdigest()[:16]) for p, data in sorted(files.items()))
    _CACHE[key] = (_signature(str(p) for p in files), _hash(sorted(files.items()), versions), digests)
    return _CACHE[key][1]


def _signature(paths: Iterable[str]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((path, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((path, -1, -1))
    return tuple(out)


def _files(target: str, roots: tuple[str, ...]) -> dict[Path, bytes]:
    own = Path(__file__).resolve().parents[2]  # where neuronexp's package is: its built-in layers are followed too
    follow = [Path(r) for r in roots] + [own]
    start = _module_file(target, [Path(p) for p in sys.path if p] + follow)
    files: dict[Path, bytes] = {}
    todo = [start] if start is not None else []
    while todo:
        path = todo.pop()
        if path in files:
            continue
        try:
            files[path] = path.read_bytes()
        except OSError:
            continue
        for name in _imports(path, files[path]):
            found = _find(name, follow)
            if found is not None and found not in files and not _installed(found):
                todo.append(found)
    return files


def _hash(files: Iterable[tuple[Path, bytes]], versions: tuple[str, str]) -> str:
    digest = hashlib.sha256("\0".join(versions).encode())
    for path, data in files:  # by content and name, not by place: the same code moved is the same cell
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:16]


def _installed(path: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in path.parts)


def _module_file(target: str, roots: list[Path]) -> Path | None:
    """The source file of the module `target` lives in: its longest dotted prefix that is a module, as Hydra's
    `_locate` finds it (`pkg.mod.Outer.Inner`, a nested class, lives in `pkg.mod`)."""
    parts = target.split(".")
    for end in range(len(parts) - 1, 0, -1):
        found = _find(".".join(parts[:end]), roots)
        if found is not None:
            return found
    return None


def _find(module: str, roots: list[Path]) -> Path | None:
    """The source file of `module` under one of `roots` (a package's `__init__.py`), without importing it."""
    parts = module.split(".")
    for root in roots:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    return None


def _imports(path: Path, source: bytes) -> list[str]:
    """The modules `path` imports (absolute names; relative imports resolved against its package), and for
    `from a import b` both `a` and `a.b` (b may be a submodule)."""
    try:
        tree = ast.parse(source, filename=str(path))
    except (SyntaxError, ValueError):
        return []
    package = _package_of(path)
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                base = ".".join([*anchor, *([base] if base else [])])
            if base:
                names.append(base)
            names += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    return names


def _package_of(path: Path) -> str:
    """The dotted package a file belongs to (its directories up to the first without `__init__.py`)."""
    parts: list[str] = []
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)
