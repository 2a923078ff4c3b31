"""`NUMPY`: numpy arrays and autograd's traced arrays alike (autograd.numpy underneath), the default engine.

``autograd.grad`` flows through everything it runs; where nothing is traced, some operations work in place.

>>> import numpy as np
>>> NUMPY.lag(np.arange(1.0, 5.0), -1, 2)
array([0., 0., 1., 2.])
>>> NUMPY.scatter(np.array([[1.0, 2.0]]), 1, (0, 2), 3)
array([[1., 0., 2.]])
"""
from __future__ import annotations

import autograd.numpy as anp
import numpy as np
from autograd.tracer import getval

from .base import Engine


class NumpyEngine(Engine):
    """See the module docstring."""

    name = "numpy"
    xp = anp
    #: Measured with float64 on 2 cores: below this a step costs more in call overhead than in arithmetic; from
    #: about 128 elements the sequential scan is as fast or faster at any length.
    loop_scan_width = 128

    def owns(self, a) -> bool:
        raw = getval(a)
        return isinstance(raw, (np.ndarray, np.generic, float, int))

    @staticmethod
    def traced(a) -> bool:
        return not isinstance(a, np.ndarray) and not np.isscalar(a)

    def value(self, a) -> np.ndarray:
        return np.asarray(getval(a))

    def detached(self, a):
        return getval(a)

    def dtype(self, a) -> np.dtype:
        return np.asarray(getval(a)).dtype

    def convert(self, value, like):
        value = np.asarray(value)
        if value.dtype.kind in "fc":
            return value.astype(self.dtype(like) if self.dtype(like).kind == "f" else np.float64, copy=False)
        return value

    def constant(self, value, like):
        return self.convert(value, like)                # nothing to move: no cache needed

    def zeros(self, shape, like):
        return np.zeros(shape, self.dtype(like))

    def floats(self, mask, like):
        return np.asarray(getval(mask)).astype(self.dtype(like) if like is not None else np.float64)

    def contiguous(self, a):
        """C order for a numpy array (matmul lays its product out like its inputs); traced arrays unchanged."""
        return np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a

    def add_at(self, z, rows, w, scale=1.0):
        if scale == 1:                                  # the levels run on plain numpy arrays: in place
            z[rows] += w
        elif scale == -1:
            z[rows] -= w
        else:
            z[rows] += scale * w
        return z

    def flip(self, a, axis: int):
        return a[(slice(None),) * (axis % len(a.shape)) + (slice(None, None, -1),)]      # autograd has no flip VJP

    def repeat_new(self, a, axis: int, count: int):
        return anp.repeat(anp.expand_dims(a, axis), count, axis=axis)

    def scatter(self, a, axis: int, support, size: int):
        if self.traced(a):
            return super().scatter(a, axis, support, size)
        shape = list(np.shape(a))
        shape[axis] = size
        out = np.zeros(shape, a.dtype)
        out[(slice(None),) * axis + (list(support),)] = a
        return out

    def softmax(self, a, axis: int = -1, mask=None, out=None):
        from ..masked_softmax import softmax
        return softmax(a, axis, mask, out=out)


#: The default engine.
NUMPY = NumpyEngine()
