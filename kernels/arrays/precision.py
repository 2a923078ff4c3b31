"""The one dtype a scan or an FFT computes in: its operands' common dtype, and float32 where that is of half
precision (float16, bfloat16).  A recurrence adds up rounding error step by step (a selective scan in bfloat16 was
4x further from the exact result than the same scan in float32 rounded to bfloat16), and torch refuses FFTs in
half precision, so half-precision operands are computed in float32 and the result goes back to their dtype, as
Mamba's reference keeps its state in float32.  Operands of two dtypes (a bfloat16 input beside a float32
parameter, float32 beside float64) meet in their common dtype first: some torch operations, matmul among them,
refuse to mix dtypes.

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> arrays, half = common_precision(NUMPY, {"x": np.ones(2, np.float16), "mask": None})
>>> arrays["x"].dtype, half.dtype
(dtype('float32'), dtype('float16'))
>>> arrays, half = common_precision(NUMPY, {"x": np.ones(2, np.float32), "A": np.ones(2)})
>>> arrays["x"].dtype, half is None
(dtype('float64'), True)
"""
from __future__ import annotations

import functools
from typing import Any

from .engine import Engine

#: The half-precision dtypes, by name (numpy, torch and JAX name them alike).
HALF = ("float16", "bfloat16")


def is_half(dtype: Any) -> bool:
    """Whether `dtype` (numpy's, torch's or JAX's) is of half precision."""
    try:
        return _named_half(dtype)
    except TypeError:                           # an unhashable stand-in for a dtype: not kept
        return _named_half.__wrapped__(dtype)


@functools.lru_cache(maxsize=64)
def _named_half(dtype: Any) -> bool:
    return str(dtype).split(".")[-1] in HALF


def common_precision(engine: Engine, arrays: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """`arrays` (values of `engine`'s library, or None) with their floating ones in the dtype they compute in (see
    the module docstring), and an array of their half dtype to cast the result back to (`Engine.cast`) where they
    are all of one, else None."""
    dtypes = {a.dtype for a in arrays.values() if a is not None}
    if len(dtypes) == 1 and not is_half(next(iter(dtypes))):   # the common case, at a few set operations
        return arrays, None
    floating = [a for a in arrays.values() if a is not None and engine.dtype(a).kind == "f"]
    if not floating:
        return arrays, None
    dtype = functools.reduce(engine.xp.promote_types,  # type: ignore[attr-defined]  # a concrete engine's namespace
                             [a.dtype for a in floating])
    half = floating[0] if is_half(dtype) else None          # two dtypes never promote to a half one
    target = None if half is not None else next((a for a in floating if a.dtype == dtype), None)
    if target is None:                                      # float32 for half precision, or for float16 + bfloat16
        target = engine.like("float32", engine.device(floating[0]))
    return {name: engine.cast(a, target) if a is not None and engine.dtype(a).kind == "f" and a.dtype != target.dtype
            else a for name, a in arrays.items()}, half
