"""Causal convolution along the last axis by the FFT, with non-finite inputs kept causal.

y[..., t] = sum_{s <= t} kernel[..., t - s] x[..., s]: both zero-padded to twice the length (even, as autograd's
rfft gradient needs), multiplied as spectra and cut back.  The FFT would spread a NaN or an infinity at step s to
every output; such entries are left out of the transform and their terms added back directly, to the outputs at
t >= s only, so the result is what the direct sum gives (under JAX's jit, whose values are unknown when it
compiles, and on a GPU, where reading which steps hold one would wait for the device, the outputs from s on come
out NaN instead).  Runs and differentiates on every engine.

>>> import numpy as np
>>> x = np.array([1.0, 2.0, 3.0, np.nan])
>>> causal_convolution(x, np.array([1.0, 1.0, 0.0, 0.0]))       # y_t = x_t + x_{t-1}
array([ 1.,  3.,  5., nan])
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..native import memory
from ..arrays import adopt, traced_as_operator
from ..arrays.example_sizes import broadcast_shapes, example_shape
from ..arrays.precision import common_precision

if TYPE_CHECKING:
    from ..arrays import Engine

#: Spectra and temporaries held at once, in multiples of one complex spectrum of the broadcast batch.
SPECTRA = 4
#: The passes over the input that mark each output after a non-finite input NaN, where the exact form reads which
#: steps hold one (`Engine.reads_dearly`).
_AVOIDING_PASSES = 3


@traced_as_operator
def causal_convolution(x: Any, kernel: Any) -> Any:
    """The causal convolution of x (..., L) with kernel (..., L) (broadcasting), see the module docstring."""
    engine, arrays = adopt({"x": x, "kernel": kernel})
    _check(engine, arrays["x"], arrays["kernel"])
    arrays, half = common_precision(engine, arrays)     # torch's FFTs refuse half precision
    x, kernel = arrays["x"], arrays["kernel"]
    length = x.shape[-1]
    size = 2 * length
    bad = ~engine.isfinite(x)
    clean = engine.where(bad, 0.0, x)
    y = engine.irfft(engine.rfft(clean, size) * engine.rfft(kernel, size), size)[..., :length]
    if not engine.concrete(bad) or engine.reads_dearly(
            x, _AVOIDING_PASSES * math.prod(x.shape) * engine.dtype(x).itemsize):
        y = engine.where(engine.cumsum(bad, axis=-1) > 0, np.nan, y)           # counted in integers
    else:
        leading = tuple(range(len(bad.shape) - 1))
        for step in np.flatnonzero(engine.value(engine.sum(engine.floats(bad, y), axis=leading))):  # bad per step
            column = engine.where(bad[..., step], x[..., step], 0.0)         # the non-finite entries at this step
            terms = kernel[..., :length - step] * column[..., None]
            y = y + engine.concatenate([engine.zeros(tuple(terms.shape[:-1]) + (int(step),), terms), terms], axis=-1)
    return y if half is None else engine.cast(y, half)


def _check(engine: Engine, x: Any, kernel: Any) -> None:
    """Real numbers with a time axis on both, leading axes that broadcast and spectra within the memory limit;
    else a TypeError, ValueError or `MemoryLimitError` naming the argument, before any transform."""
    for name, a in (("x", x), ("kernel", kernel)):
        if not hasattr(a, "shape") or engine.dtype(a).kind not in "iuf":
            raise TypeError(f"{name}: expected an array of real numbers, got "
                            f"{getattr(a, 'dtype', type(a).__name__)}")
        if len(a.shape) == 0 or a.shape[-1] == 0:
            raise ValueError(f"{name}: expected a last (time) axis of positive length, got shape {tuple(a.shape)}")
    try:
        batch = example_shape(broadcast_shapes(tuple(x.shape[:-1]), tuple(kernel.shape[:-1])))   # priced at the example
    except ValueError:
        raise ValueError(f"x, kernel: leading axes {tuple(x.shape[:-1])} and {tuple(kernel.shape[:-1])} do not "
                         f"broadcast") from None
    needed = SPECTRA * math.prod(batch) * (x.shape[-1] + 1) * 16
    if needed > memory.limit():
        raise memory.MemoryLimitError(f"x, kernel: the spectra of a batch of shape {batch} at length {x.shape[-1]} "
                                      f"need {memory.format_bytes(needed)}, more than kernels.MEMORY_LIMIT = "
                                      f"{memory.format_bytes(memory.limit())}; split the batch")
