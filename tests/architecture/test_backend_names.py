"""Device knowledge stays in backends/: outside it, no module names a backend ("cpu", "cuda", "neuron") in code, and
none reads a backend's options (the schema's nodes named for a backend: `neuron`, `profiler.neuron`) but the schema
itself. Each stage reads the backend's row of the table (backends.table) instead, which answers for its options, so
that adding a backend means its folder and one row there.

Where a backend's name may still be written outside backends/, and why:
- config/: the user-facing config values. `backend=auto|cpu|cuda|neuron` is the schema's enum (its values and its
  error message are the interface; the table is checked against it below), and "neuron" is also the name of
  torch.compile's Neuron backend (`compile.backend`), which the config validates before any backend is built.
- torch's own device type, as the argument of `.to(...)`, `torch.device(...)` or `map_location=`: a tensor or a
  module copied to the host (an output saved, a float32 reference, an extracted layer loaded), whatever the backend.
- host/activity.py, `startswith("cpu")`: the per-core lines of /proc/stat.
Docstrings and comments are prose, not code: they are not read.
"""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path
from typing import Any

from helpers import REPO
from neuronexp.backends import BACKENDS
from neuronexp.config import BackendName, RunConfig

PACKAGE = REPO / "src" / "neuronexp"
PLUGIN = REPO / "src" / "hydra_plugins"
NAMES = {info.name for info in BACKENDS}
EXEMPT_STAGES = {"backends", "config"}
TORCH_DEVICE_CALLS = {"to", "device"}  # tensor.to("cpu"), torch.device("cpu")
TORCH_DEVICE_KEYWORDS = {"map_location"}
EXEMPT_CALLS = {("host/activity.py", "startswith")}


def _files() -> list[Path]:
    return sorted(
        p
        for p in [*PACKAGE.rglob("*.py"), *PLUGIN.rglob("*.py")]
        if p.relative_to(PACKAGE.parent).parts[1:2] != ("conf",)
        and not (p.is_relative_to(PACKAGE) and p.relative_to(PACKAGE).parts[0] in EXEMPT_STAGES)
    )


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    nodes = [n for n in ast.walk(tree) if isinstance(n, kinds)]
    return {
        id(n.body[0].value)
        for n in nodes
        if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
    }


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _exempt(node: ast.Constant, parent: ast.AST | None, rel: str) -> bool:
    if isinstance(parent, ast.keyword):
        return parent.arg in TORCH_DEVICE_KEYWORDS
    if isinstance(parent, ast.Call) and node in parent.args:
        return _callee(parent) in TORCH_DEVICE_CALLS or (rel, _callee(parent)) in EXEMPT_CALLS
    return False


def backend_names_in_code(source: str, rel: str) -> list[str]:
    """Every place the module `rel` (its path under src/neuronexp) writes a backend's name as a string in code,
    outside the exemptions above: "line: the expression around it"."""
    tree = ast.parse(source)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    docs = _docstrings(tree)
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and node.value in NAMES
        and id(node) not in docs
        and not _exempt(node, parents.get(id(node)), rel)
    ]
    return [
        f"{node.lineno}: {ast.unparse(parents.get(id(node), node))[:120]}"
        for node in sorted(found, key=lambda n: (n.lineno, n.col_offset))
    ]


def test_no_stage_but_backends_names_a_backend() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in _files()
        for line in backend_names_in_code(path.read_text(), _rel(path))
    ]
    assert not found, "read the backend's row of backends.table instead:\n" + "\n".join(found)


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE if path.is_relative_to(PACKAGE) else PLUGIN))


def test_the_check_sees_a_name_in_a_comparison_a_lookup_and_a_default() -> None:
    code = (
        '"""A docstring may say "cuda"."""\n'
        "import torch\n"
        'def f(kind: str = "cpu") -> object:\n'
        '    if kind == "neuron" or line.startswith("cpu"):\n'
        '        return {"cuda": 1}["cuda"]\n'
        '    return torch.zeros(1).to("cpu")\n'
    )
    found = [line.split(":")[0] for line in backend_names_in_code(code, "sweep/x.py")]
    assert found == ["3", "4", "4", "5", "5"], found
    assert [line.split(":")[0] for line in backend_names_in_code(code, "host/activity.py")] == ["3", "4", "5", "5"]


def test_the_table_has_a_row_for_every_backend_the_config_accepts() -> None:
    assert NAMES | {BackendName.auto.value} == {member.value for member in BackendName}


def option_nodes(cls: Any = RunConfig, prefix: str = "") -> set[str]:
    """The schema's nodes that hold a backend's options, as key paths: a node named for a backend, at any depth."""
    found = set()
    for name, hint in typing.get_type_hints(cls).items():
        if dataclasses.is_dataclass(hint):
            path = f"{prefix}{name}"
            found |= {path} if name in NAMES else option_nodes(hint, f"{path}.")
    return found


OPTION_NODES = option_nodes()
OPTION_FIELDS = {path.rsplit(".", 1)[-1] for path in OPTION_NODES}  # `neuron`: `cfg.neuron`, `cfg.profiler.neuron`
OPTION_READERS = {"getattr", "setattr", "hasattr", "delattr", "select", "update"}  # getattr(cfg, "neuron"), select


def _named_option(node: ast.AST, parent: ast.AST | None) -> bool:
    """A string naming an option node: a key path into one ("neuron.visible_cores"), or the node's own name where
    something is looked up by it (getattr(cfg, "neuron"), cfg["neuron"], OmegaConf.select(cfg, "profiler.neuron"))."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return False
    if any(node.value.startswith(f"{path}.") for path in OPTION_NODES):
        return True
    looked_up = isinstance(parent, ast.Subscript) or (
        isinstance(parent, ast.Call) and _callee(parent) in OPTION_READERS
    )
    return looked_up and (node.value in OPTION_FIELDS or node.value in OPTION_NODES)


def backend_option_reads(source: str) -> list[str]:
    """Every place a module reads (or sets) a backend's options: "line: the expression"."""
    tree = ast.parse(source)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    docs = _docstrings(tree)
    found = [
        node
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr in OPTION_FIELDS)
        or (id(node) not in docs and _named_option(node, parents.get(id(node))))
    ]
    return [
        f"{node.lineno}: {ast.unparse(node)[:120]}" for node in sorted(found, key=lambda n: (n.lineno, n.col_offset))
    ]


def test_no_module_but_the_backends_and_the_schema_reads_a_backends_options() -> None:
    schema = PACKAGE / "config" / "schema.py"
    files = [p for p in [*PACKAGE.rglob("*.py"), *PLUGIN.rglob("*.py")] if p != schema]
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in files
        if not path.is_relative_to(PACKAGE / "backends")
        for line in backend_option_reads(path.read_text())
    ]
    assert not found, "ask the backend's row (backends.info.BackendInfo) instead:\n" + "\n".join(found)


def test_the_option_rule_knows_the_schema_and_sees_every_kind_of_read() -> None:
    assert OPTION_NODES == {"neuron", "profiler.neuron"}  # derived from the schema: a new backend's node joins it
    code = (
        '"""A docstring may say cfg.neuron.visible_cores and "neuron.num_cores"."""\n'
        "def f(cfg, spec, node):\n"
        "    a = spec.config.neuron.visible_cores\n"
        "    b = cfg.profiler.neuron\n"
        '    c = getattr(cfg, "neuron")\n'
        '    d = OmegaConf.select(node, "profiler.neuron.modes")\n'
        '    e = node["neuron"]\n'
        '    raise ConfigError("neuron.visible_cores", a, "...")\n'
    )
    found = [line.split(":")[0] for line in backend_option_reads(code)]
    assert found == ["3", "4", "5", "6", "7", "8"], found
    clean = 'def g(cfg):\n    return cfg.compile.backend == "neuron" or {"neuron": 1}, cfg.launcher.pool\n'
    assert backend_option_reads(clean) == []
