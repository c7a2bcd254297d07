"""NKI kernels for the "Time an NKI kernel" recipe (docs/neuron.md). They need the `nki` package TorchNeuron brings
(Trn2/Trn3): this module is imported only when a module that calls one is built. UNVERIFIED ON HARDWARE: written to
the documented NKI API (SDK 2.33/2.34: nl.ndarray, nisa.dma_copy, nisa.tensor_tensor) and run here only through the
test suite's stand-in of those calls."""

from __future__ import annotations

from typing import Any

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tensor_add(a: Any, b: Any) -> Any:
    """a + b, element by element, for tensors whose first dimension fits the SBUF's partitions (at most
    nl.tile_size.pmax, 128): no tiling, the smallest kernel that shows the whole path."""
    assert a.shape == b.shape and a.dtype == b.dtype, "two tensors of one shape and dtype"
    assert a.shape[0] <= nl.tile_size.pmax, "the first dimension must fit the partitions (no tiling here)"
    a_sbuf = nl.ndarray(shape=a.shape, dtype=a.dtype, buffer=nl.sbuf)  # HBM -> on-chip memory
    b_sbuf = nl.ndarray(shape=b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_sbuf, src=a)
    nisa.dma_copy(dst=b_sbuf, src=b)
    sum_sbuf = nl.ndarray(shape=a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=sum_sbuf, data1=a_sbuf, data2=b_sbuf, op=nl.add)  # the vector engine
    out = nl.ndarray(shape=a.shape, dtype=a.dtype, buffer=nl.shared_hbm)  # the result back in device memory
    nisa.dma_copy(dst=out, src=sum_sbuf)
    return out
