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
def test_neuron_config_mistakes_stop_in_one_line(cli, tmp_path: Path, args: list[str], line: str) -> None:
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
