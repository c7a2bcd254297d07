"""The package's shape, checked: imports point one way between stages, no import cycle, small modules,
Hydra's private modules in one place only, no module-level `global` state.

The allowed edges are the pipeline (docs/architecture.md, "Layout"): cli → sweep → cellprocess → cell → backends →
config (slurm beside the sweep and its cell processes), and report/compare → analysis → results. A new edge is a
design decision: add it here on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import REPO

PACKAGE = REPO / "src" / "neuronexp"
PLUGIN = REPO / "src" / "hydra_plugins"
# stage -> the stages it may import (itself always allowed)
ALLOWED = {
    "formatting": set(),
    # The one version (pyproject.toml reads it too): imports nothing, and anything may read it.
    "version": set(),
    "config": {"version"},
    "results": set(),
    "modules": set(),
    # The host probe writes its cache file through results' atomic writes.
    "host": {"results"},
    "backends": {"config", "results", "host"},
    "analysis": {"results", "formatting"},
    # Time per nn.Module, one feature in one folder: recorded by the cell, read by the report and extract.
    "moduletime": {"analysis", "results", "formatting", "config"},
    "cell": {"backends", "config", "results", "analysis", "host", "moduletime", "version"},
    "report": {"analysis", "results", "formatting", "moduletime", "version"},
    # neuronexp-extract's work: a profiled run's hot modules rebuilt alone, checked and written as studies.
    "extract": {"analysis", "cell", "config", "formatting", "moduletime", "results"},
    "compare": {"analysis", "results", "formatting"},
    # The export stage reads results (and splits overrides with analysis); nothing imports it but its command.
    "export": {"analysis", "results"},
    # Slurm: the cluster's checks and the submitted array (its plugin is the one importer of slurm.jobs).
    "slurm": {"config"},
    # A cell's process, its supervisor and the fork server (a Slurm task's time limit stops its cell: slurm). The
    # template imports the built-in layers (modules, a leaf) before its first fork, so no cell pays that import.
    "cellprocess": {"cell", "backends", "config", "results", "host", "slurm", "modules"},
    # The sweep's orchestration: plan, lock, reuse, launch, watch, aggregate.
    "engine": {
        "cellprocess",
        "slurm",
        "cell",
        "backends",
        "config",
        "results",
        "analysis",
        "report",
        "formatting",
        "host",
    },
    "cli": {
        "engine",
        "extract",
        "moduletime",
        "cellprocess",
        "cell",
        "backends",
        "config",
        "results",
        "analysis",
        "report",
        "compare",
        "export",
        "formatting",
        "host",
        "version",
    },
    # neuronexp.Results: the tables, and the readers' work as its methods (HTA's TraceAnalysis).
    "facade": {"results", "report", "compare", "analysis", "formatting"},
    # The Python API: the command line's engine, its one-line errors (cli.oneline), and what it returns (facade).
    "api": {"engine", "cli", "config", "results", "facade"},
    "__init__": {"results", "api", "facade", "version"},
    "__main__": {"cli"},
}
# Single modules of another stage that a stage may import although it may not import that stage: each torch-free.
# analysis and compare read config's one table of what each key is (config.key_roles), rather than keep a copy.
ALLOWED_MODULES = {"analysis": {"neuronexp.config.key_roles"}, "compare": {"neuronexp.config.key_roles"}}
# The budget is on functions (MAX_FUNCTION_LINES here; complexity, arguments and statements: ruff, pyproject.toml);
# a module's size is a ceiling far above the usual, which never decides where a file splits.
MAX_LINES = 400
MAX_FUNCTION_LINES = 60
# A module docstring says what the module owns and why; the method belongs in docs/methodology.md.
MAX_DOC_LINES = 6
# Still longer, left to the part of issue 24 that is rewriting these modules (the timing work): shorten them there.
LONG_DOCS_PENDING: set[str] = set()  # modules whose docstring is still to be cut to six lines: none left


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "conf" not in p.relative_to(PACKAGE).parts[:1])


def _stage(module: str) -> str:
    """neuronexp.<stage>...; a name imported from the package itself (`from neuronexp import x`) is "__init__"."""
    parts = module.split(".")
    if len(parts) < 2 or not ((PACKAGE / parts[1]).is_dir() or (PACKAGE / f"{parts[1]}.py").is_file()):
        return "__init__"
    return parts[1]


def _name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[str]:
    """Every neuronexp module a file imports, at any depth (function-level imports included)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("neuronexp")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("neuronexp"):
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def test_imports_point_one_way_between_stages() -> None:
    wrong = []
    for path in _modules():
        me = _stage(_name(path))
        for target in _imports(path):
            other = _stage(target)
            module = any(target == m or target.startswith(m + ".") for m in ALLOWED_MODULES.get(me, set()))
            if other != me and other not in ALLOWED.get(me, set()) and other != "__init__" and not module:
                wrong.append(f"{_name(path)} imports {target} ({me} → {other})")
    assert not wrong, "\n".join(wrong)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (module → the modules it imports), or None."""
    seen: dict[str, int] = {}

    def visit(n: str, stack: list[str]) -> list[str] | None:
        seen[n] = 1
        for m in sorted(graph[n]):
            if seen.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in seen and (found := visit(m, stack + [m])):
                return found
        seen[n] = 2
        return None

    return next((c for n in sorted(graph) if n not in seen and (c := visit(n, [n]))), None)


def test_no_import_cycle_between_modules() -> None:
    names = {_name(p): p for p in _modules()}
    # Every import counts: a module-level one forms a cycle at import time; a function-level one (run later) or a
    # type-only one (`if TYPE_CHECKING:`) still says the two modules know each other.
    graph = {n: {t for t in _imports(p) if t in names and t != n} for n, p in names.items()}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_the_cycle_rule_can_fail() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


# The hop from a supervisor to its cell's process: what the forked process runs is a function the fork request
# carries (cellprocess.childproc.ForkRequest), never a "module:function" string imported by name.
CHILD_HOP = [
    PACKAGE / "cellprocess" / f"{name}.py" for name in ("launch", "forkserver", "template", "childproc", "entry")
]


def test_the_hop_to_the_cell_process_is_named_in_code() -> None:
    found = []
    for path in CHILD_HOP:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            module = node.module if isinstance(node, ast.ImportFrom) else None
            called = (
                node.func.attr
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                else node.func.id
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                else None
            )
            if "importlib" in names or module == "importlib" or called in ("import_module", "__import__"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, found


def test_modules_stay_small() -> None:
    big = [
        f"{p.relative_to(REPO)}: {n} lines"
        for p in _modules() + list(PLUGIN.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    ]
    assert not big, "\n".join(big)


def _long_functions(source: str, where: str) -> list[str]:
    return [
        f"{where}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_functions_stay_short() -> None:
    long = [f for p in _modules() + list(PLUGIN.rglob("*.py")) for f in _long_functions(p.read_text(), p.name)]
    assert not long, "\n".join(long)


def test_the_function_rule_can_fail() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert _long_functions(f"def f():\n{body}\n", "m.py") == [f"m.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
    assert not _long_functions("def g():\n    return 1\n", "m.py")


def test_hydra_private_modules_only_in_one_place() -> None:
    allowed = PACKAGE / "engine" / "_hydra.py"
    users = [
        str(p.relative_to(REPO))
        for p in _modules() + list(PLUGIN.rglob("*.py"))
        if p != allowed and "hydra._internal" in p.read_text()
    ]
    assert not users, users


_MUTATORS = {
    "append",
    "extend",
    "insert",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "remove",
    "discard",
    "clear",
}


def _module_state(source: str, where: str) -> list[str]:
    """Module-level state changed at run time: a `global` statement, or a module-level name changed inside a function
    (an item set or deleted, a mutating method called on it)."""
    tree = ast.parse(source)
    names = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) for t in _targets(n)}
    found = [f"{where}: global {', '.join(n.names)}" for n in ast.walk(tree) if isinstance(n, ast.Global)]
    for func in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for node in ast.walk(func):
            changed = None
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                changed = next(
                    (t.value.id for t in targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)),
                    None,
                )
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
                changed = node.func.value.id if isinstance(node.func.value, ast.Name) else None
            if changed in names:
                found.append(f"{where}:{node.lineno}: module-level {changed} changed in {func.name}")
    return found


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.Name]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t for t in targets if isinstance(t, ast.Name)]


def test_no_module_level_state_changed_at_run_time() -> None:
    found = [f for p in _modules() for f in _module_state(p.read_text(), _name(p))]
    assert not found, "\n".join(found)


def test_the_module_state_rule_can_fail() -> None:
    assert _module_state("CACHE = {}\ndef f(k):\n    CACHE[k] = 1\n", "m") == ["m:3: module-level CACHE changed in f"]
    assert _module_state("SEEN = []\ndef f(x):\n    SEEN.append(x)\n", "m") == ["m:3: module-level SEEN changed in f"]
    assert _module_state("N = 0\ndef f():\n    global N\n", "m") == ["m: global N"]
    assert not _module_state("ROWS = []\ndef f(rows):\n    rows.append(1)\n    x = {}\n    x[1] = 2\n", "m")


def _repeated_basenames(paths: list[Path]) -> list[str]:
    seen: dict[str, list[str]] = {}
    for p in paths:
        if p.name != "__init__.py":
            seen.setdefault(p.name, []).append(str(p.relative_to(p.parents[1])))
    return [f"{name}: {', '.join(where)}" for name, where in sorted(seen.items()) if len(where) > 1]


def test_module_basenames_are_unique() -> None:
    repeated = _repeated_basenames(_modules())
    assert not repeated, "\n".join(repeated)


def test_the_basename_rule_can_fail() -> None:
    paths = [
        PACKAGE / "a" / "x.py",
        PACKAGE / "b" / "x.py",
        PACKAGE / "b" / "__init__.py",
        PACKAGE / "c" / "__init__.py",
    ]
    assert _repeated_basenames(paths) == ["x.py: a/x.py, b/x.py"]


def test_every_stage_says_what_it_holds() -> None:
    missing = [
        str(p.relative_to(REPO))
        for p in PACKAGE.glob("*/__init__.py")
        if p.parent.name != "conf" and not (ast.get_docstring(ast.parse(p.read_text())) or "").strip()
    ]
    assert not missing, missing


def test_module_docstrings_say_why_in_a_few_lines() -> None:
    long = [
        f"{_name(p)}: {n} lines"
        for p in _modules() + list(PLUGIN.rglob("*.py"))
        if (n := len((ast.get_docstring(ast.parse(p.read_text())) or "").splitlines())) > MAX_DOC_LINES
        and _name(p) not in LONG_DOCS_PENDING
    ]
    assert not long, "\n".join(long)


def test_the_report_does_not_read_the_sweeps_summary_writer() -> None:
    """report.summary writes results/summary.md for the sweep; the report's own pages share report.cell_text and
    report.sections instead, so a change to the one never reaches the other."""
    readers = [_name(p) for p in _modules() if "neuronexp.report.summary" in _imports(p)]
    assert all(r == "neuronexp.report.terminal" or _stage(r) == "engine" for r in readers), readers
