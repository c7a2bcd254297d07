"""The names neuronexp checks without importing torch (so that a mistake is reported before that import) are
names torch really has: checked here against the installed torch."""

from __future__ import annotations

import torch
import torch._inductor

from neuronexp.config.schema import DType
from neuronexp.config.validate import COMPILE_MODES


def test_every_dtype_name_is_a_torch_dtype() -> None:
    for name in DType:
        assert isinstance(getattr(torch, name.value, None), torch.dtype), name.value


def test_the_compile_modes_are_those_this_torch_compile_knows() -> None:
    known = set(torch._inductor.list_mode_options())
    assert set(COMPILE_MODES) == known, (sorted(set(COMPILE_MODES) - known), sorted(known - set(COMPILE_MODES)))
