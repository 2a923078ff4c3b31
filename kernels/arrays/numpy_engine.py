"""`NUMPY`: numpy arrays and autograd's traced arrays alike (autograd.numpy underneath), the default engine.

``autograd.grad`` flows through everything it runs; where nothing is traced, some operations work in place.

>>> import numpy as np
>>> NUMPY.lag(np.arange(1.0, 5.0), -1, 2)
array([0., 0., 1., 2.])
>>> NUMPY.scatter(np.array([[1.0, 2.0]]), 1, (0, 2), 3)
array([[1., 0., 2.]])
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive
from autograd.tracer import getval

from .engine import Engine
from .normalisation import masked_softmax


@functools.cache
def _blas() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries numpy loaded (found once; asking one its threads costs
    about a microsecond)."""
    from threadpoolctl import ThreadpoolController
    found = ThreadpoolController().select(user_api="blas").lib_controllers
    own = [library for library in found if "numpy" in library.filepath]
    return own or found


def blas_threads() -> int:
    """The threads numpy's BLAS runs on now (a limit set at run time, by threadpoolctl's ``threadpool_limits`` say,
    is seen), else, where no BLAS library says, every core this process may use."""
    counts = [library.get_num_threads() for library in _blas()]
    if counts and min(counts) >= 1:
        return max(counts)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class NumpyEngine(Engine):
    """See the module docstring."""

    name = "numpy"
    xp = anp

    def threads(self) -> int:
        return blas_threads()

    def owns(self, a: Any) -> bool:
        raw = getval(a)
        return isinstance(raw, (np.ndarray, np.generic, float, int))

    @staticmethod
    def traced(a: Any) -> bool:
        return not isinstance(a, np.ndarray) and not np.isscalar(a)

    def value(self, a: Any) -> np.ndarray:
        return np.asarray(getval(a))

    def detached(self, a: Any) -> Any:
        return getval(a)

    def dtype(self, a: Any) -> np.dtype:
        return np.asarray(getval(a)).dtype

    def convert(self, value: Any, like: Any) -> Any:
        value = np.asarray(value)
        if value.dtype.kind in "fc":
            return value.astype(self.dtype(like) if self.dtype(like).kind == "f" else np.float64, copy=False)
        return value

    def constant(self, value: Any, like: Any) -> Any:
        return self.convert(value, like)                # nothing to move: no cache needed

    def zeros(self, shape: Sequence[int], like: Any) -> np.ndarray:
        return np.zeros(shape, self.dtype(like))

    def floats(self, mask: Any, like: Any) -> np.ndarray:
        return np.asarray(getval(mask)).astype(self.dtype(like) if like is not None else np.float64)

    def contiguous(self, a: Any) -> Any:
        """C order for a numpy array (matmul lays its product out like its inputs); traced arrays unchanged."""
        return np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a

    def add_at(self, z: Any, rows: int | slice | np.ndarray, w: Any, scale: float = 1.0) -> Any:
        if scale == 1:                                  # the levels run on plain numpy arrays: in place
            z[rows] += w
        elif scale == -1:
            z[rows] -= w
        else:
            z[rows] += scale * w
        return z

    def flip(self, a: Any, axis: int) -> Any:
        return a[(slice(None),) * (axis % len(a.shape)) + (slice(None, None, -1),)]      # autograd has no flip VJP

    def repeat_new(self, a: Any, axis: int, count: int) -> Any:
        return anp.repeat(anp.expand_dims(a, axis), count, axis=axis)

    def scatter(self, a: Any, axis: int, support: Sequence[int], size: int) -> Any:
        if self.traced(a):
            return super().scatter(a, axis, support, size)
        shape = list(np.shape(a))
        shape[axis] = size
        out = np.zeros(shape, a.dtype)
        out[(slice(None),) * axis + (list(support),)] = a
        return out

    def softmax(self, a: Any, axis: int = -1, mask: Any = None, out: Any = None) -> Any:
        return masked_softmax(a, axis, mask, self, out)

    def segment_sum(self, a: Any, segments: np.ndarray, count: int) -> Any:
        """``add.reduceat`` over the runs of equal segments (autograd's traced arrays: a sum per run)."""
        firsts = np.flatnonzero(np.diff(segments, prepend=-1))
        if not len(firsts):
            return self.zeros((count,) + tuple(np.shape(a)[1:]), a)
        if isinstance(a, np.ndarray):
            sums = np.add.reduceat(a, firsts, axis=0)
        else:
            bounds = [*firsts.tolist(), len(segments)]
            sums = anp.stack([anp.sum(a[start:stop], axis=0) for start, stop in zip(bounds, bounds[1:])])
        return sums if len(firsts) == count else self.scatter(sums, 0, segments[firsts].tolist(), count)

    def cumulative_sum(self, a: Any, axis: int) -> Any:
        """One primitive with its own VJP (autograd has none for an in-place cumsum)."""
        return _cumulative_sum(a, axis)


@primitive
def _cumulative_sum(a: Any, axis: int) -> Any:
    shape = list(np.shape(a))
    shape[axis] += 1
    out = np.zeros(shape, dtype=a.dtype)
    np.cumsum(a, axis=axis, out=out[(slice(None),) * axis + (slice(1, None),)])
    return out


def _cumulative_sum_vjp(result: Any, a: Any, axis: int) -> Callable[[Any], Any]:
    """Entry s of a reaches the outputs s + 1 .. n: its gradient sums those, a reversed cumulative sum (reversed by
    slicing, which autograd differentiates again: it has no VJP of flip)."""
    reverse = (slice(None),) * axis + (slice(None, None, -1),)

    def vjp(gradient: Any) -> Any:
        later = gradient[reverse][(slice(None),) * axis + (slice(0, -1),)]
        return anp.cumsum(later, axis=axis)[reverse]
    return vjp


defvjp(_cumulative_sum, _cumulative_sum_vjp)


#: The default engine.
NUMPY = NumpyEngine()
