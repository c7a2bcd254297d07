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

from neuronexp.version import __version__


def code_fingerprint(target: object) -> str:
    """A short hash of the code behind `module._target_` (what it covers: docs/guarantees.md)."""
    files = _files(target, tuple(_user_roots())) if isinstance(target, str) and "." in target else []
    return _hash([(os.path.basename(path), digest) for path, digest in files], _versions())


def package_version(name: str) -> str | None:
    from importlib import metadata  # here: `neuronexp --help` imports this module and never asks

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)  # installed versions do not change under a running process
def _versions() -> tuple[str, str]:
    return __version__, package_version("torch") or "?"


# Where neuronexp's package is: its built-in layers are followed too.
_OWN = str(Path(__file__).resolve().parents[2])


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
    roots = tuple(_user_roots())
    bases = [Path(r) for r in roots] + [Path(_OWN)]
    return {_shown(Path(path), bases): digest.hex()[:16] for path, digest in _files(target, roots)}


def _shown(path: Path, bases: list[Path]) -> str:
    return next((str(path.relative_to(base)) for base in bases if path.is_relative_to(base)), str(path))


def _files(target: str, roots: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """The module file of `target` and every file of yours it imports, at any depth: (path, its content's sha256),
    by path. A sweep asks once per cell: each file is stat'ed, and read and followed again only when its size or
    time changed (_scan), so a long-lived process (a test session) sees an edit."""
    follow = (*roots, _OWN)
    start = _module_file(target, (*(p for p in sys.path if p), *follow))
    files: dict[str, bytes] = {}
    todo = [start] if start is not None else []
    while todo:
        path = todo.pop()
        if path in files:
            continue
        try:
            st = os.stat(path)
            files[path], imported = _scan(path, st.st_mtime_ns, st.st_size, follow)
        except OSError:
            continue
        todo += [found for found in imported if found not in files]
    return sorted(files.items(), key=lambda item: item[0].split(os.sep))  # in Path's order (the hash depends on it)


@lru_cache(maxsize=4096)
def _scan(path: str, mtime_ns: int, size: int, follow: tuple[str, ...]) -> tuple[bytes, tuple[str, ...]]:
    """A file's sha256 and the files of yours it imports (found under `follow`, installed packages left out), for
    one state of it: another `mtime_ns` or `size` is read again."""
    source = Path(path).read_bytes()
    found = (_find(name, follow) for name in _imports(Path(path), source))
    return hashlib.sha256(source).digest(), tuple(f for f in found if f is not None and not _installed(f))


def _hash(files: Iterable[tuple[str, bytes]], versions: tuple[str, str]) -> str:
    """`files`: (file name, sha256 of its content)."""
    digest = hashlib.sha256("\0".join(versions).encode())
    for name, content in files:  # by content and name, not by place: the same code moved is the same cell
        digest.update(name.encode() + b"\0" + content)
    return digest.hexdigest()[:16]


def _installed(path: str) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in Path(path).parts)


@lru_cache(maxsize=1024)  # a module's place is looked up once: a sweep's cells share a few targets
def _module_file(target: str, roots: tuple[str, ...]) -> str | None:
    """The source file of the module `target` lives in: its longest dotted prefix that is a module, as Hydra's
    `_locate` finds it (`pkg.mod.Outer.Inner`, a nested class, lives in `pkg.mod`)."""
    parts = target.split(".")
    found = (_find(".".join(parts[:end]), roots) for end in range(len(parts) - 1, 0, -1))
    return next((f for f in found if f is not None), None)


def _find(module: str, roots: tuple[str, ...]) -> str | None:
    """The source file of `module` under one of `roots` (a package's `__init__.py`), without importing it."""
    parts = module.split(".")
    for root in roots:
        base = Path(root).joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return str(candidate.resolve())
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
