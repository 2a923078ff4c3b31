"""The masked softmax: exp(x) normalised along one axis over the entries a mask keeps; the others are left out.

Masked entries are replaced by -inf before anything else (``where``), so whatever they hold, a NaN or an
infinity included, they come out exactly 0 and reach no other entry; a row the mask empties entirely comes out
0.  The shift by the row maximum is taken as a constant (softmax does not depend on it), so autograd
differentiates the exact formula; without a gradient to trace, the work is done in place.

>>> import numpy as np
>>> x = np.array([[1.0, np.nan], [0.0, 0.0]])
>>> keep = np.array([[True, False], [True, True]])
>>> softmax(x, axis=-1, mask=keep)
array([[1. , 0. ],
       [0.5, 0.5]])
"""
from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.tracer import getval


def softmax(x, axis: int = -1, mask=None):
    """exp(x) / sum exp(x) along `axis`, over the entries where `mask` (a bool array broadcasting to x) is True."""
    raw = getval(x)
    traced = not isinstance(x, np.ndarray)
    if mask is not None:
        x = anp.where(mask, x, -np.inf) if traced else np.where(mask, x, -np.inf)
    peak = np.max(getval(x), axis=axis, keepdims=True)
    peak[~np.isfinite(peak)] = 0                                   # rows the mask empties entirely
    tiny = np.finfo(raw.dtype).tiny
    if not traced:
        exps = x - peak if mask is None else np.subtract(x, peak, out=x)
        np.exp(exps, out=exps)
        exps /= np.maximum(exps.sum(axis=axis, keepdims=True), tiny)
        return exps
    exps = anp.exp(x - peak)
    return exps / anp.maximum(anp.sum(exps, axis=axis, keepdims=True), tiny)
