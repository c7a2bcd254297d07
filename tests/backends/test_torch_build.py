"""Whether the installed torch has CUDA, read from its version file without importing torch (backends.cuda.torch_build):
a CPU-only build is named as such, a CUDA or ROCm build and a file that cannot be read leave the answer to torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronexp.backends.cuda.torch_build import build_versions, cpu_only_build, version_file

# torch/version.py as torch's build writes it (tools/generate_torch_version.py), one per kind of build.
CPU = "__version__ = '2.13.0+cpu'\ndebug = False\ncuda: Optional[str] = None\nhip: Optional[str] = None\n"
CUDA = "__version__ = '2.13.0'\ndebug = False\ncuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n"
ROCM = "__version__ = '2.13.0+rocm6.4'\ncuda: Optional[str] = None\nhip: Optional[str] = '6.4.1'\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        (CPU, "2.13.0+cpu"),
        (CUDA, None),
        (ROCM, None),  # torch.cuda drives ROCm GPUs too
        ("__version__ = '2.13.0'\ncuda = compute()\nhip = None\n", None),  # not a literal: torch must tell
        ("__version__ = '2.13.0'\n", None),  # no cuda entry: unknown, not "CPU-only"
        ("cuda = None\nhip = None\n(", None),  # not Python
    ],
)
def test_a_cpu_only_build_is_told_from_its_version_file(tmp_path: Path, text: str, expected: str | None) -> None:
    path = tmp_path / "version.py"
    path.write_text(text)
    assert cpu_only_build(path) == expected


def test_the_installed_torchs_file_is_read_as_torch_itself_says() -> None:
    import torch

    found = build_versions(version_file())
    assert found is not None and found["cuda"] == torch.version.cuda and found["__version__"] == torch.__version__
    expected = torch.__version__ if torch.version.cuda is None and torch.version.hip is None else None
    assert cpu_only_build() == expected
    assert build_versions(None) is None and build_versions(Path("/nonexistent/version.py")) is None
