"""Engines run plans: the array operations the steps of `kernels.plan` need, for one array library.

`NUMPY` runs numpy arrays and autograd's traced arrays alike (autograd.numpy underneath), so ``autograd.grad``
flows through a plan; where nothing is traced, some steps work in place.  Another engine (torch, JAX) provides
the same methods.

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

from .pointwise import FUNCTIONS


def result_dtype(arrays):
    """The floating dtype of a step's result: that of its variable operands (float64 when there are none)."""
    dtypes = [getval(a).dtype for a in arrays if hasattr(getval(a), "dtype")]
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    return dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)


class NumpyEngine:
    """numpy and autograd arrays (see the module docstring)."""

    name = "numpy"

    @staticmethod
    def traced(a) -> bool:
        return not isinstance(a, np.ndarray) and not np.isscalar(a)

    def asarray(self, a, dtype):
        return np.asarray(a, dtype=dtype)

    def value(self, a):
        """The plain numbers of `a` (for checks that need no gradient)."""
        return getval(a)

    def to_bool(self, a):
        return np.asarray(getval(a)) != 0

    def where(self, condition, a, b):
        return anp.where(condition, a, b)

    def take(self, a, indices, axis: int):
        return a[(slice(None),) * (axis % np.ndim(a)) + (np.asarray(indices),)]      # autograd has no take VJP

    def take_index(self, a, index: int, axis: int):
        return a[(slice(None),) * axis + (index,)]

    def sum(self, a, axis):
        return anp.sum(a, axis=axis)

    def transpose(self, a, axes):
        return anp.transpose(a, axes)

    def reshape(self, a, shape):
        return anp.reshape(a, shape)

    def expand_dims(self, a, axis: int):
        return anp.expand_dims(a, axis)

    def zeros(self, shape, dtype):
        return np.zeros(shape, dtype)

    def stack(self, arrays, axis: int):
        return anp.stack(arrays, axis=axis)

    def pointwise(self, name: str, a):
        return FUNCTIONS[name](a)

    def repeat_new(self, a, axis: int, count: int):
        """A new axis at `axis` holding `count` copies of a."""
        return anp.repeat(anp.expand_dims(a, axis), count, axis=axis)

    def scatter(self, a, axis: int, support, size: int):
        """A's `axis` placed at positions `support` of a new axis of `size`, zeros elsewhere."""
        if not self.traced(a):
            shape = list(np.shape(a))
            shape[axis] = size
            out = np.zeros(shape, a.dtype)
            out[(slice(None),) * axis + (list(support),)] = a
            return out
        placement = np.zeros((len(support), size), getval(a).dtype)
        placement[np.arange(len(support)), list(support)] = 1
        return anp.moveaxis(anp.tensordot(a, placement, axes=([axis], [0])), -1, axis)

    def gather(self, a, axis: int, index, weight, valid):
        """a[..., index[r, m], ...] along `axis` (a new pair of axes r, m there), times `weight`, 0 where not
        `valid` (left out, not multiplied)."""
        axis %= np.ndim(a)
        taken = self.take(a, index.reshape(-1), axis)
        shape = np.shape(a)[:axis] + index.shape + np.shape(a)[axis + 1:]
        taken = anp.reshape(taken, shape)
        tail = (1,) * (np.ndim(a) - axis - 1)
        if not valid.all():
            taken = anp.where(valid.reshape(valid.shape + tail), taken, 0)
        if not np.all(weight[valid] == 1):
            taken = taken * weight.reshape(weight.shape + tail).astype(getval(taken).dtype)
        return taken

    def lag(self, a, axis: int, lag: int):
        """x_t -> x_{t - lag} along `axis` (zeros first)."""
        axis %= np.ndim(a)
        n = np.shape(a)[axis]
        head = (slice(None),) * axis
        shape = list(np.shape(a))
        shape[axis] = min(lag, n)
        return anp.concatenate([np.zeros(shape, getval(a).dtype), a[head + (slice(0, max(n - lag, 0)),)]], axis=axis)


#: The default engine.
NUMPY = NumpyEngine()
