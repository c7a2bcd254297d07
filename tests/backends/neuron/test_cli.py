"""The Neuron checks as a user meets them on the command line: one line, exit status 2, nothing written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HAS_NEURON = importlib.util.find_spec("torch_neuronx") is not None


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["neuron.visible_cores='0,2'"],
            "neuronexp: error: neuron.visible_cores=0,2: the Neuron runtime needs one contiguous",
        ),
        (
            ["backend=neuron", "compile.enabled=true", "compile.dynamic=true"],
            'neuronexp: error: compile.dynamic=True: torch.compile(backend="neuron") rejects dynamic=True',
        ),
        (
            ["backend=neuron", "module=rmsnorm_compiled", "compile.mode=max-autotune"],
            'neuronexp: error: compile.mode=max-autotune: torch.compile(backend="neuron") runs only the default mode',
        ),
    ],
)
def test_neuron_config_mistakes_stop_in_one_line(cli, standin, tmp_path: Path, args: list[str], line: str) -> None:
    # With torch-neuronx importable (the stand-in): without it, `backend=neuron` typed on the command line is refused
    # first, before Hydra composes anything (test_contiguous_comma_list_... below).
    res = cli(*args)
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(line), res.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.skipif(HAS_NEURON, reason="a real torch-neuronx is installed")
def test_contiguous_comma_list_passes_validation_and_reaches_the_backend_check(cli) -> None:
    res = cli("backend=neuron", "neuron.visible_cores='0,1'")
    assert res.returncode == 2 and "backend=neuron: torch-neuronx is not installed" in res.stderr
    assert "visible_cores" not in res.stderr


@pytest.mark.skipif(HAS_NEURON, reason="a real torch-neuronx is installed")
def test_pypis_placeholder_is_named_as_such_in_one_line(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip install .[neuron]` without the Neuron package repository can only find PyPI's torch-neuronx 1.0 (2022),
    whose import raises "WRONG PACKAGE": the line says so and what to do, not "not installed"."""
    site = tmp_path / "site"
    (site / "torch_neuronx").mkdir(parents=True)
    (site / "torch_neuronx" / "__init__.py").write_text(  # the placeholder's whole code, as PyPI ships it
        'raise ImportError("WRONG PACKAGE. Please install the package from Neuron Repository - '
        'pip.repos.neuron.amazonaws.com")\n'
    )
    (site / "torch_neuronx-1.0.dist-info").mkdir()
    (site / "torch_neuronx-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch-neuronx\nVersion: 1.0\n"
    )
    monkeypatch.syspath_prepend(str(site))
    res = cli("backend=neuron")
    assert res.returncode == 2, res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert line.startswith(
        "neuronexp: error: backend=neuron: torch-neuronx 1.0 is PyPI's 2022 placeholder (its import raises "
        "'WRONG PACKAGE'), not TorchNeuron: pip uninstall torch-neuronx, then on a Trn2/Trn3 instance install"
    ), line
    assert "--extra-index-url https://pip.repos.neuron.amazonaws.com" in line
    assert not (tmp_path / "outputs").exists()


def test_a_neff_cache_another_user_can_write_stops_the_run_in_one_line(cli, standin, tmp_path: Path) -> None:
    """The NEFF cache's ownership rule (docs/guarantees.md): a `<cache>/neff` left world-writable by someone else, with
    a planted file, stops the command before any work, naming the folder."""
    root = tmp_path / "shared-cache"
    (root / "neff").mkdir(parents=True)
    (root / "neff" / "planted.neff").write_bytes(b"not yours")
    (root / "neff").chmod(0o777)
    res = cli("backend=neuron", env={"NEURONEXP_CACHE_DIR": str(root)})
    assert res.returncode == 2, res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert line.startswith(f"neuronexp: error: NEURONEXP_CACHE_DIR={root / 'neff'}: is writable by others (mode 777)")
    assert not (tmp_path / "outputs").exists() and sorted(p.name for p in (root / "neff").iterdir()) == ["planted.neff"]
