"""Axis bookkeeping shared by the strategies that split an axis into components (numpy arrays).

A strategy working on one factor axis moves it to the front, so that ``x[i]`` is the i-th component with every
other axis intact (contiguous, when the caller's array was not already laid out that way), and moves the
output axis back at the end.

>>> import numpy as np
>>> x, y = align(np.ones((5, 3)), np.ones((2, 5, 3)))
>>> x.shape, components(x, -1).shape, components(x, -1)[0].flags.c_contiguous
((1, 5, 3), (3, 1, 5), True)
"""
from __future__ import annotations

import numpy as np


def align(x, y):
    """x and y with leading unit axes added to the one with fewer axes (a view), so components broadcast."""
    rank = max(x.ndim, y.ndim)
    return x.reshape((1,) * (rank - x.ndim) + x.shape), y.reshape((1,) * (rank - y.ndim) + y.shape)


def _to_front(rank: int, axis: int) -> tuple:
    axis %= rank
    return (axis, *range(axis), *range(axis + 1, rank))


def components(x, axis: int):
    """x with `axis` moved to the front; copied when a component would not be contiguous."""
    moved = x.transpose(_to_front(x.ndim, axis))          # transpose: a fraction of moveaxis's overhead
    return moved if moved[0].flags.c_contiguous else np.ascontiguousarray(moved)


def restore(z, axis: int):
    """Undo `components` on the output: its leading component axis goes back to `axis` (a view)."""
    order = _to_front(z.ndim, axis)
    return z.transpose(sorted(range(z.ndim), key=order.__getitem__))


def stack(parts, probe):
    """Stack component arrays on a new leading axis; None stands for a zero component.

    `probe()` computes one product, only to learn the shape and dtype when every part is None.
    """
    known = next((part for part in parts if part is not None), None)
    if known is None:
        known = probe()
    if any(part is None for part in parts):
        zero = np.zeros_like(known)
        parts = [zero if part is None else part for part in parts]
    return np.stack(parts)
