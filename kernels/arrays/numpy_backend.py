"""The opt_einsum backend the dense strategy uses for numpy arrays: numpy, with `tensordot` as one ``matmul``.

``numpy.tensordot`` multiplies through ``numpy.dot``; the same reshaped product through ``matmul`` ran about 25%
faster for the (batch, d) x (d, d*d) products of a dense kernel on this project's machine.  opt_einsum
imports this module by name (``backend="kernels.arrays.numpy_backend"``).

>>> import numpy as np
>>> a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(4, 3)
>>> np.array_equal(tensordot(a, b, axes=([1, 2], [1, 0])), np.tensordot(a, b, axes=([1, 2], [1, 0])))
True
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

einsum = np.einsum
transpose = np.transpose

#: The name opt_einsum imports this backend by.
NAME = __name__


def tensordot(a: np.ndarray, b: np.ndarray, axes: int | Sequence[int | Sequence[int]] = 2) -> np.ndarray:
    """numpy.tensordot, computed as one matrix product by ``matmul``."""
    if isinstance(axes, int):
        summed_a, summed_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        summed_a, summed_b = ([axis] if isinstance(axis, int) else list(axis) for axis in axes)
    summed_a, summed_b = [s % a.ndim for s in summed_a], [s % b.ndim for s in summed_b]
    free_a = [axis for axis in range(a.ndim) if axis not in summed_a]
    free_b = [axis for axis in range(b.ndim) if axis not in summed_b]
    inner = math.prod(a.shape[axis] for axis in summed_a)
    left = np.transpose(a, free_a + summed_a).reshape(-1, inner)
    right = np.transpose(b, summed_b + free_b).reshape(inner, -1)
    return np.matmul(left, right).reshape([a.shape[axis] for axis in free_a] + [b.shape[axis] for axis in free_b])
