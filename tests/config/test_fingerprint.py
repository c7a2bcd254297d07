"""The code fingerprint in every cell's run_id (issue 26): a changed layer, or a file of yours it imports, is a new
cell; an installed package's files and an unrelated file of yours are not followed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from neuronexp.config.fingerprint import code_fingerprint


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A user's directory: a layer module importing a package of theirs (absolute and relative imports)."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "util.py").write_text("from .deeper import SCALE\n")
    (tmp_path / "mypkg" / "deeper.py").write_text("SCALE = 2\n")
    (tmp_path / "layers.py").write_text(
        "import torch\nfrom mypkg import util\n\nclass Layer(torch.nn.Module):\n    pass\n"
    )
    (tmp_path / "unrelated.py").write_text("X = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _edit(path: Path, text: str) -> None:
    path.write_text(text)
    later = time.time_ns() + 10_000_000
    os.utime(path, ns=(later, later))  # a new mtime even on a coarse clock: the cache must see the edit


def test_the_layer_and_every_file_of_yours_it_imports_are_in_it(project: Path) -> None:
    before = code_fingerprint("layers.Layer")
    assert code_fingerprint("layers.Layer") == before  # stable
    _edit(project / "unrelated.py", "X = 2\n")
    assert code_fingerprint("layers.Layer") == before  # not imported: not part of it
    _edit(project / "mypkg" / "deeper.py", "SCALE = 3\n")  # imported by an import of the layer's module
    after_deep = code_fingerprint("layers.Layer")
    assert after_deep != before
    _edit(project / "layers.py", "import torch\nfrom mypkg import util\n\nclass Layer(torch.nn.Module):\n    x = 1\n")
    assert code_fingerprint("layers.Layer") not in (before, after_deep)


def test_builtin_and_installed_targets_have_one_and_do_not_follow_installed_packages(project: Path) -> None:
    import neuronexp.modules.rmsnorm as rmsnorm

    assert len(code_fingerprint("neuronexp.modules.rmsnorm.RMSNormNaive")) == 16
    assert code_fingerprint("neuronexp.modules.rmsnorm.RMSNormNaive") != code_fingerprint("layers.Layer")
    assert Path(rmsnorm.__file__).is_file()
    start = time.perf_counter()
    code_fingerprint("torch.nn.LayerNorm")  # torch.nn's __init__ only: torch's thousands of files are not read
    assert time.perf_counter() - start < 2.0


def test_a_nested_class_is_fingerprinted_with_the_file_it_is_defined_in(project: Path) -> None:
    # `mypkg.nested.Outer.Inner`: Hydra locates it in the module mypkg.nested (the longest prefix that is a module),
    # so editing that file must make a new cell, as for a top-level class.
    layer = "import torch\n\nclass Outer:\n    class Inner(torch.nn.Module):\n        def forward(self, x):\n"
    (project / "mypkg" / "nested.py").write_text(layer + "            return x\n")
    before = code_fingerprint("mypkg.nested.Outer.Inner")
    assert before != code_fingerprint("no_such_module.Outer.Inner")  # the file is hashed, not only the versions
    _edit(project / "mypkg" / "nested.py", layer + "            return x * 2\n")
    assert code_fingerprint("mypkg.nested.Outer.Inner") != before


def test_an_import_added_in_a_running_process_is_followed(project: Path) -> None:
    # A long-lived process (a notebook, a test session) that fingerprinted the layer once must see a file the layer
    # imports after an edit: the edited file is read again, and its new imports followed.
    (project / "helper.py").write_text("K = 1\n")
    before = code_fingerprint("layers.Layer")
    _edit(project / "layers.py", "import torch\nimport helper\n\nclass Layer(torch.nn.Module):\n    pass\n")
    with_helper = code_fingerprint("layers.Layer")
    assert with_helper != before
    _edit(project / "helper.py", "K = 2\n")
    assert code_fingerprint("layers.Layer") != with_helper
