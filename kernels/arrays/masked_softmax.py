"""The masked softmax: exp(x) normalised along one axis over the entries a mask keeps; the others are left out.

Masked entries are replaced by -inf before anything else, so whatever they hold, a NaN or an infinity included,
they come out exactly 0 and reach no other entry; a row the mask empties entirely comes out 0.  The shift by the
row maximum is taken as a constant (softmax does not depend on it), so autograd differentiates the exact formula.
Without a gradient to trace, the last axis is normalised in chunks of rows that stay in cache, in place when the
caller gives `out` (a plan does when the scores are not needed again).

>>> import numpy as np
>>> x = np.array([[1.0, np.nan], [0.0, 0.0]])
>>> keep = np.array([[True, False], [True, True]])
>>> softmax(x, axis=-1, mask=keep)
array([[1. , 0. ],
       [0.5, 0.5]])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .checks import check_arrays
from .registry import Engine, outside_torch_compile, owner

#: Bytes of scores one chunk of the in-cache path works on.
CHUNK_BYTES = 1 << 20


@outside_torch_compile
def softmax(x: Any, axis: int = -1, mask: Any = None, out: np.ndarray | None = None,
            engine: Engine | None = None) -> Any:
    """exp(x) / sum exp(x) along `axis`, over the entries where `mask` (a bool array of the engine, broadcasting
    to x) is True; `out` (x itself, say) receives the result when nothing is traced (numpy); `engine`, that of x's
    library unless given."""
    if engine is None:
        engine = owner(x)
    _check(engine, x, axis, mask)
    if isinstance(x, np.ndarray) and axis in (-1, x.ndim - 1) and x.ndim >= 1:
        return _in_cache(x, mask, out)
    tiny = np.finfo(engine.dtype(x)).tiny
    if mask is not None:
        x = engine.where(mask, x, -np.inf)
    peak = engine.amax(engine.detached(x), axis=axis, keepdims=True)
    peak = engine.where(engine.isfinite(peak), peak, 0.0)            # rows the mask empties entirely
    exps = engine.exp(x - peak)
    return exps / engine.maximum(engine.sum(exps, axis=axis, keepdims=True), tiny)


def _check(engine: Engine, x: Any, axis: int, mask: Any) -> None:
    """Floats, an axis of x and a mask that broadcasts to x, or a TypeError / ValueError naming the argument."""
    if not hasattr(x, "shape") or engine.dtype(x).kind != "f":
        raise TypeError(f"x: expected an array of floats, got {getattr(x, 'dtype', type(x).__name__)}")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -len(x.shape) <= axis < len(x.shape):
        raise ValueError(f"axis: expected an axis of x (shape {tuple(x.shape)}), got {axis!r}")
    check_arrays({"mask": mask}, "b", "bools", optional=("mask",))
    if mask is not None and not _broadcasts_to(tuple(mask.shape), tuple(x.shape)):
        raise ValueError(f"mask: expected a shape that broadcasts to x's {tuple(x.shape)}, got "
                         f"{tuple(getattr(mask, 'shape', ()))}")


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _in_cache(x: np.ndarray, mask: np.ndarray | None, out: np.ndarray | None) -> np.ndarray:
    """The numpy path: rows in chunks of about CHUNK_BYTES, each masked, shifted, exponentiated and normalised
    while it is in cache; `out` must be C-contiguous."""
    out = np.empty(x.shape, x.dtype) if out is None else out          # C order: its rows are views
    rows = x.reshape(-1, x.shape[-1]) if x.size else x.reshape(0, max(x.shape[-1], 1))
    target = out.reshape(rows.shape)
    keep = None if mask is None else np.broadcast_to(mask, x.shape).reshape(rows.shape)
    tiny = np.finfo(x.dtype).tiny
    step = max(1, CHUNK_BYTES // max(1, x.shape[-1] * x.itemsize))
    for start in range(0, rows.shape[0], step):
        part = target[start:start + step]
        if out is not x:
            np.copyto(part, rows[start:start + step])
        if keep is not None:
            np.copyto(part, -np.inf, where=~keep[start:start + step])
        peak = part.max(axis=-1, keepdims=True)
        peak[~np.isfinite(peak)] = 0
        part -= peak
        np.exp(part, out=part)
        total = part.sum(axis=-1, keepdims=True)
        part /= np.maximum(total, tiny)
    return out
