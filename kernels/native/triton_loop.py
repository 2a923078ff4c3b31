"""The compiled loop on a GPU: the ``compiled`` strategy's sparse bilinear product as one Triton kernel.

The same algorithm as the C loop (`kernels.native.clib`), for torch CUDA tensors: each program adds up one output
component z_k for a block of `BLOCK` rows, term by term of `clib.Terms` (grouped by x index: x_i times the sum of
its terms' c y_j), in registers, and writes it once.  The operands are read with the batch along the fast axis,
(d, rows), so every load of a component is one coalesced read of a block's rows; the programs of one block of rows
run side by side (the output index varies fastest), so its components are read from the L2 cache after the
first, however large the batch.  One launch does the whole product: no temporary per term, no multiplication by a zero.

Triton comes with torch's CUDA builds; `unavailable()` says why the kernel cannot run where it is missing.  CPU
tensors run the same kernel in Triton's interpreter (slowly: it is for tests), so its values are checked on
machines without a GPU.

>>> import numpy as np
>>> from product_interactions.kernels.native.clib import Terms
>>> if unavailable() is None:             # z = 2 x_0 y_1 on three rows, in the interpreter
...     import torch
...     terms = Terms.from_table(np.array([[0, 1, 0]]), np.array([2.0]), 1)
...     x, y = torch.arange(6.0).reshape(3, 2), torch.ones(3, 2)
...     print(sparse_product(terms, x, y, (2, 2, 1)).ravel().tolist())
... else:
...     print([0.0, 4.0, 8.0])
[0.0, 4.0, 8.0]
"""
from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from .clib import Terms

try:                                   # Triton comes with torch's CUDA builds on Linux; else `pip install triton`
    import triton
    import triton.language as tl
except ImportError as missing:
    triton = tl = None
    _MISSING = f"Triton is not installed ({missing})"

#: Rows per program (one per thread of its four warps).  Estimated, not tuned on a GPU.
BLOCK = 128


def unavailable() -> str | None:
    """Why the Triton kernel cannot run here (Triton is not installed), or None."""
    return None if triton is not None else _MISSING


def _body(x: Any, y: Any, z: Any, rows: Any, outputs: Any, starts: Any, group_x: Any, group_terms: Any, j: Any,
          values: Any, BLOCK: tl.constexpr) -> None:  # noqa: N803  # named as the constant it takes
    """The kernel (`_kernel` makes it a Triton function): program p writes z[k, rows of block b] for
    p = b * outputs + k (one axis of programs: CUDA's second and third allow only 65,535 blocks)."""
    program = tl.program_id(0).to(tl.int64)
    k = program % outputs
    offsets = (program // outputs) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < rows
    total = tl.full([BLOCK], 0.0, z.dtype.element_ty)
    for group in range(tl.load(starts + k), tl.load(starts + k + 1)):
        part = tl.full([BLOCK], 0.0, z.dtype.element_ty)
        for term in range(tl.load(group_terms + group), tl.load(group_terms + group + 1)):
            column = tl.load(y + tl.load(j + term) * rows + offsets, mask=inside, other=0.0)
            part += tl.load(values + term) * column
        total += tl.load(x + tl.load(group_x + group) * rows + offsets, mask=inside, other=0.0) * part
    tl.store(z + k * rows + offsets, total, mask=inside)


@functools.cache
def _kernel(interpreted: bool) -> Any:
    """`_body` as a Triton function: compiled for the GPU, or run by Triton's interpreter (`_interpreting`)."""
    with _interpreting(interpreted):
        return triton.jit(_body)


@contextlib.contextmanager
def _interpreting(on: bool) -> Iterator[None]:
    """Within it, Triton interprets kernels where `on` (its knob; restored after), for CPU tensors."""
    if not on:
        yield
        return
    with triton.knobs.runtime.scope():
        triton.knobs.runtime.interpret = True
        yield


#: The terms' arrays on each device and in each dtype they were used with, per `Terms` (freed with it).
_ON_DEVICE: weakref.WeakKeyDictionary[Terms, dict[tuple[str, Any], tuple[Any, ...]]] = weakref.WeakKeyDictionary()


def _arrays(terms: Terms, like: Any) -> tuple[Any, ...]:
    """(starts of each output's groups, each group's x index, each group's terms as starts, y indices, values) as
    tensors on `like`'s device, the values in its dtype (made once per device and dtype)."""
    import torch
    kept = _ON_DEVICE.setdefault(terms, {})
    key = (str(like.device), like.dtype)
    found = kept.get(key)
    if found is None:
        starts, group_x, group_terms = terms.groups
        values = terms.values[np.dtype(str(like.dtype).removeprefix("torch."))]
        found = kept[key] = tuple(torch.from_numpy(a).to(like.device)
                                  for a in (starts, group_x, group_terms, terms.j, values))
    return found


def sparse_product(terms: Terms, x: Any, y: Any, shape: tuple[int, int, int]) -> Any:
    """z[r, k] = sum of c x[r, i] y[r, j] over `terms`, for torch tensors x (rows, d1) and y (rows, d2) of one
    dtype (float32 or float64) on a CUDA device (or the CPU, in Triton's interpreter); `shape` is (d1, d2, d3).
    Returns a new (rows, d3) tensor, column-major: the kernel writes each component's rows in one run, and a copy
    into row-major order would hold the product twice (what `kernels.native.memory`'s guard prices: the operands'
    copies and the result)."""
    import torch
    d1, d2, d3 = shape
    if x.dim() != 2 or y.dim() != 2 or x.shape[1] != d1 or y.shape[1] != d2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"sparse_product: expected x (rows, {d1}) and y (rows, {d2}) with equal rows, got "
                         f"{tuple(x.shape)} and {tuple(y.shape)}")
    if x.dtype != y.dtype or x.dtype not in (torch.float32, torch.float64) or x.device != y.device:
        raise TypeError(f"sparse_product: expected x and y of one dtype, float32 or float64, on one device, got "
                        f"{x.dtype} on {x.device} and {y.dtype} on {y.device}")
    terms.check_within(shape)
    rows = x.shape[0]
    if not rows * d3 * len(terms.i):                   # nothing to launch (Triton refuses empty tensors' pointers)
        return x.new_zeros((rows, d3))
    z = x.new_empty((d3, rows))
    interpreted = x.device.type == "cpu"
    with _interpreting(interpreted):
        _kernel(interpreted)[(d3 * -(-rows // BLOCK),)](x.t().contiguous(), y.t().contiguous(), z, rows, d3,
                                                        *_arrays(terms, x), BLOCK=BLOCK)
    return z.t()
