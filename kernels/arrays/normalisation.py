"""The masked softmax, numerically: exp(x) normalised along one axis over the entries a mask keeps, the others left
out.  Unchecked, for the engines (`Engine.softmax`); the checked public function is `kernels.arrays.masked_softmax`.

Masked entries are replaced by -inf before anything else, so whatever they hold, a NaN or an infinity included,
they come out exactly 0 and reach no other entry; a row the mask empties entirely comes out 0.  The shift by the
row maximum is taken as a constant (softmax does not depend on it), so autograd differentiates the exact formula.
Plain numpy arrays are normalised along their last axis in chunks of rows that stay in cache, in place when the
caller gives `out` (a plan does when the scores are not needed again).

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> masked_softmax(np.array([[0.0, np.log(3.0)]]), -1, None, NUMPY)
array([[0.25, 0.75]])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .engine import Engine

#: Bytes of scores one chunk of the in-cache path works on.
CHUNK_BYTES = 1 << 20


def masked_softmax(x: Any, axis: int, mask: Any, engine: Engine, out: np.ndarray | None = None) -> Any:
    """exp(x) / sum exp(x) along `axis`, over the entries where `mask` (a bool array of the engine, or None for
    all, broadcasting to x) is True, by `engine`'s operations; `out` (x itself, say) receives the result where x is
    a plain numpy array normalised along its last axis."""
    if isinstance(x, np.ndarray) and axis in (-1, x.ndim - 1) and x.ndim >= 1:
        return _in_cache(x, mask, out)
    tiny = np.finfo(engine.dtype(x)).tiny
    if mask is not None:
        x = engine.where(mask, x, -np.inf)
    peak = engine.amax(engine.detached(x), axis=axis, keepdims=True)
    peak = engine.where(engine.isfinite(peak), peak, 0.0)            # rows the mask empties entirely
    exps = engine.exp(x - peak)
    return exps / engine.maximum(engine.sum(exps, axis=axis, keepdims=True), tiny)


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
