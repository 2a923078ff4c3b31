"""Causal convolution along the last axis by the FFT, with non-finite inputs kept causal.

y[..., t] = sum_{s <= t} kernel[..., t - s] x[..., s]: both zero-padded to twice the length (even, as autograd's
rfft gradient needs), multiplied as spectra and cut back.  The FFT would spread a NaN or an infinity at step s to
every output; such entries are left out of the transform and their terms added back directly, to the outputs at
t >= s only, so the result is what the direct sum gives (under JAX's jit, whose values are unknown when it
compiles, the outputs from s on come out NaN instead).  Runs and differentiates on every engine.

>>> import numpy as np
>>> x = np.array([1.0, 2.0, 3.0, np.nan])
>>> causal_convolution(x, np.array([1.0, 1.0, 0.0, 0.0]))       # y_t = x_t + x_{t-1}
array([ 1.,  3.,  5., nan])
"""
from __future__ import annotations

import numpy as np

from .engines import adopt


def causal_convolution(x, kernel):
    """The causal convolution of x (..., L) with kernel (..., L) (broadcasting), see the module docstring."""
    engine, arrays = adopt({"x": x, "kernel": kernel})
    x, kernel = arrays["x"], arrays["kernel"]
    length = x.shape[-1]
    size = 2 * length
    bad = ~engine.isfinite(x)
    clean = engine.where(bad, 0.0, x)
    y = engine.irfft(engine.rfft(clean, size) * engine.rfft(kernel, size), size)[..., :length]
    if not engine.concrete(bad):
        seen = engine.cumsum(engine.floats(bad, y), axis=-1)
        return engine.where(seen > 0, np.nan, y)
    for step in np.unique(np.nonzero(engine.value(bad))[-1]):
        column = engine.where(bad[..., step], x[..., step], 0.0)             # the non-finite entries at this step
        terms = kernel[..., :length - step] * column[..., None]
        y = y + engine.concatenate([engine.zeros(tuple(terms.shape[:-1]) + (int(step),), terms), terms], axis=-1)
    return y
