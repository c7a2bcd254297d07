"""neuronexp in a real Jupyter kernel (`jupyter nbconvert --execute`, as a user's notebook runs): a sweep from Python,
`res` as a cell's last line shows the short findings table, `res.plot()` draws the speedup chart, and no cell prints
rich's `install "ipywidgets"` warning (the progress bar is left out where ipywidgets is missing)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FAST

pytestmark = [
    pytest.mark.slow,  # a kernel's start and a sweep: 20 s on the 2-core VM
    pytest.mark.skipif(importlib.util.find_spec("nbconvert") is None, reason="pip install nbconvert ipykernel"),
]


def test_a_notebook_shows_the_findings_and_the_chart_and_no_widget_warning(tmp_path: Path) -> None:
    import nbformat

    args = ", ".join(repr(a) for a in [*FAST, "input.shape=[1,8,64],[1,16,128]", "roofline.probe=off"])
    out = tmp_path / "sweep"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import neuronexp\n"
            f'res = neuronexp.sweep("module=rmsnorm_naive,rmsnorm_fused", {args}, baseline="rmsnorm_naive", '
            f"out={str(out)!r})\nres"
        ),
        nbformat.v4.new_code_cell("res.plot()"),
        nbformat.v4.new_code_cell("res.findings[['input', 'variant', 'outcome']]"),
    ]
    nbformat.write(notebook, tmp_path / "study.ipynb")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "study.ipynb"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = nbformat.read(tmp_path / "study.nbconvert.ipynb", 4)
    assert not any("ipywidgets" in str(output) for cell in ran.cells for output in cell.outputs)
    shown = next(o for o in ran.cells[0].outputs if o.output_type == "execute_result")
    html, text = shown.data["text/html"], shown.data["text/plain"]
    assert "<table>" in html and html.count("<tr><td>") == 4 and "rmsnorm_fused" in html
    assert text.startswith("neuronexp.Results · sweep") and len(text.splitlines()) <= 8
    chart = next(o for o in ran.cells[1].outputs if o.output_type == "execute_result")
    assert chart.data["image/svg+xml"].lstrip().startswith("<svg") and "nx-speedup-1-0" in chart.data["image/svg+xml"]
    table = next(o for o in ran.cells[2].outputs if o.output_type == "execute_result")
    assert "rmsnorm_naive" in table.data["text/html"] and "outcome" in table.data["text/html"]
