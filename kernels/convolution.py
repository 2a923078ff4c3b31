"""Causal convolution along the last axis by the FFT, with non-finite inputs kept causal.

y[..., t] = sum_{s <= t} kernel[..., t - s] x[..., s]: both zero-padded to twice the length (even, as autograd's
rfft gradient needs), multiplied as spectra and cut back.  The FFT would spread a NaN or an infinity at step s to
every output; such entries are left out of the transform and their terms added back directly, to the outputs at
t >= s only, so the result is what the direct sum gives.  Differentiable with autograd.

>>> import numpy as np
>>> x = np.array([1.0, 2.0, 3.0, np.nan])
>>> causal_convolution(x, np.array([1.0, 1.0, 0.0, 0.0]))       # y_t = x_t + x_{t-1}
array([ 1.,  3.,  5., nan])
"""
from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.tracer import getval


def causal_convolution(x, kernel):
    """The causal convolution of x (..., L) with kernel (..., L) (broadcasting), see the module docstring."""
    length = np.shape(x)[-1]
    size = 2 * length
    bad = ~np.isfinite(getval(x))
    clean = anp.where(bad, 0.0, x) if bad.any() else x
    spectrum = anp.fft.rfft(clean, size) * anp.fft.rfft(kernel, size)
    y = anp.fft.irfft(spectrum, size)[..., :length]
    for step in np.unique(np.nonzero(bad)[-1]):
        column = anp.where(bad[..., step], x[..., step], 0.0)                 # the non-finite entries at this step
        terms = kernel[..., :length - step] * column[..., None]
        zeros = np.zeros(np.shape(terms)[:-1] + (step,), getval(terms).dtype)
        y = y + anp.concatenate([zeros, terms], axis=-1)
    return y
