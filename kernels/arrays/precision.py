"""The one dtype a scan or an FFT computes in: its operands' common dtype, and float32 where that is of half
precision (float16, bfloat16).  A recurrence adds up rounding error step by step (a selective scan in bfloat16 was
4x further from the exact result than the same scan in float32 rounded to bfloat16), and torch refuses FFTs in
half precision, so half-precision operands are computed in float32 and the result goes back to their dtype, as
Mamba's reference keeps its state in float32.  Operands of two dtypes (a bfloat16 input beside a float32
parameter, float32 beside float64, a real beside a complex one, an integer beside a float) meet in their common
dtype first, the library's promotion: some torch operations, matmul among them, refuse to mix dtypes.

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> arrays, half = common_precision(NUMPY, {"x": np.ones(2, np.float16), "mask": None})
>>> arrays["x"].dtype, half
(dtype('float32'), dtype('float16'))
>>> arrays, half = common_precision(NUMPY, {"x": np.ones(2, np.float32), "A": np.ones(2)})
>>> arrays["x"].dtype, half is None
(dtype('float64'), True)

Mixed precision: inside an enabled ``torch.autocast``, a product kernel takes its operands as torch's matrix
products do (`autocast`).
"""
from __future__ import annotations

import sys
from typing import Any

from .engine import Engine

#: The half-precision dtypes, by name (numpy, torch and JAX name them alike).
HALF = ("float16", "bfloat16")


#: dtype -> whether it is of half precision, for the dtypes met (a handful: naming a numpy dtype costs 2 us).
_HALVES: dict[Any, bool] = {}


def is_half(dtype: Any) -> bool:
    """Whether `dtype` (numpy's, torch's or JAX's) is of half precision."""
    try:
        found = _HALVES.get(dtype)
    except TypeError:                             # an unhashable stand-in for a dtype: named each time
        return str(dtype).rsplit(".", 1)[-1] in HALF
    if found is None:
        found = str(dtype).rsplit(".", 1)[-1] in HALF
        if len(_HALVES) < 64:
            _HALVES[dtype] = found
    return found


def common_precision(engine: Engine, arrays: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """`arrays` (values of `engine`'s library, or None) with their numbers (integers, real and complex floats) in
    the dtype they compute in (see the module docstring), and the half dtype to cast the result back to
    (`Engine.cast`) where their common dtype is one, else None."""
    dtypes = {a.dtype for a in arrays.values() if a is not None}
    if len(dtypes) == 1 and not is_half(next(iter(dtypes))):   # the common case, at a few set operations
        return arrays, None
    numbers = [a for a in arrays.values() if a is not None and engine.dtype(a).kind in "iufc"]
    if not numbers:
        return arrays, None
    common = engine.common_dtype(numbers)
    half = common if is_half(common) else None
    computing = engine.native_dtype("float32") if half is not None else common
    return {name: engine.cast(a, computing) if a is not None and engine.dtype(a).kind in "iufc" else a
            for name, a in arrays.items()}, half


#: torch device type -> whether torch has an autocast for it (asked once per type: "meta" has none).
_AUTOCAST_TYPES: dict[str, bool] = {}


def autocast(x: Any, y: Any) -> tuple[Any, Any, str | None]:
    """x, y as torch's matrix products take them inside an enabled ``torch.autocast`` of their device: floating
    tensors other than float64 in the autocast's dtype (float16 or bfloat16); anything else, and everything outside
    an autocast, as it is; beside a float64 tensor both stay as they are (torch's matrix products refuse that mix;
    a float64 result of a bfloat16 operand would keep bfloat16's error).  Third, that autocast's device type (None
    where none is enabled): the caller computes with it disabled, so that eager calls run the steps a custom
    operator's body runs (below torch's autocast).

    >>> import torch
    >>> with torch.autocast("cpu", dtype=torch.bfloat16):
    ...     x, y, kind = autocast(torch.ones(2), torch.ones(2, dtype=torch.float16))
    ...     wide = autocast(torch.ones(2), torch.ones(2, dtype=torch.float64))
    >>> x.dtype, y.dtype, kind, [a.dtype for a in wide[:2]]
    (torch.bfloat16, torch.bfloat16, 'cpu', [torch.float32, torch.float64])
    >>> autocast(torch.ones(2), torch.ones(2))[2] is None
    True
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return x, y, None
    kind = autocast_of(x if isinstance(x, torch.Tensor) else y)
    if kind is None:
        return x, y, None
    if any(isinstance(a, torch.Tensor) and a.dtype == torch.float64 for a in (x, y)):
        return x, y, kind                               # float64 asked for: computed in it, as before
    target = torch.get_autocast_dtype(kind)
    return x.to(target) if _eligible(torch, x) else x, y.to(target) if _eligible(torch, y) else y, kind


def autocast_of(a: Any) -> str | None:
    """The device type of the ``torch.autocast`` enabled for tensor `a`'s device ("cpu", "cuda"), or None: none
    is, torch has none for that device ("meta"), or `a` is not a torch tensor."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(a, torch.Tensor) or not getattr(
            torch._C, "_is_any_autocast_enabled", lambda: True)():  # one question first: naming the device cost 4 us
        return None
    kind = a.device.type
    available = _AUTOCAST_TYPES.get(kind)
    if available is None:
        available = _AUTOCAST_TYPES.setdefault(kind, bool(torch.amp.is_autocast_available(kind)))
    return kind if available and torch.is_autocast_enabled(kind) else None


def _eligible(torch: Any, a: Any) -> bool:
    """Whether torch's autocast casts `a` for a matrix product: a floating tensor other than float64."""
    return isinstance(a, torch.Tensor) and a.is_floating_point() and a.dtype != torch.float64
