"""Axis bookkeeping shared by the strategies that split an axis into components, on any engine.

A strategy working on one factor axis moves it to the front, so that ``x[i]`` is the i-th component with every
other axis intact (contiguous, when the caller's array was not already laid out that way), and moves the
output axis back at the end.  Each function works with the operations of the engine it is given.

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> x, y = align(np.ones((5, 3)), np.ones((2, 5, 3)))
>>> x.shape, components(x, -1, NUMPY).shape, components(x, -1, NUMPY)[0].flags.c_contiguous
((1, 5, 3), (3, 1, 5), True)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .example_sizes import broadcast_shapes

if TYPE_CHECKING:
    from .engine import Engine

def align(x: Any, y: Any) -> tuple[Any, Any]:
    """x and y with leading unit axes added to the one with fewer axes (a view), so components broadcast."""
    rank = max(len(x.shape), len(y.shape))
    return (x.reshape((1,) * (rank - len(x.shape)) + tuple(x.shape)),
            y.reshape((1,) * (rank - len(y.shape)) + tuple(y.shape)))


def _to_front(rank: int, axis: int) -> tuple[int, ...]:
    axis %= rank
    return (axis, *range(axis), *range(axis + 1, rank))


def broadcast_batch(x: Any, y: Any, engine: Engine) -> tuple[Any, Any, tuple[int, ...]]:
    """x (..., d1) and y (..., d2) broadcast to one batch shape, their last axes kept (views), and that shape.

    >>> from product_interactions.kernels.arrays import NUMPY
    >>> x, y, batch = broadcast_batch(np.ones((5, 1, 3)), np.ones((2, 4)), NUMPY)
    >>> x.shape, y.shape, batch
    ((5, 2, 3), (5, 2, 4), (5, 2))
    """
    first, second = tuple(x.shape[:-1]), tuple(y.shape[:-1])
    batch = first if first == second else broadcast_shapes(first, second)
    return engine.broadcast_to(x, batch + (x.shape[-1],)), engine.broadcast_to(y, batch + (y.shape[-1],)), batch


def components(x: Any, axis: int, engine: Engine) -> Any:
    """x with `axis` moved to the front; copied when a component would not be contiguous."""
    moved = engine.transpose(x, _to_front(len(x.shape), axis))
    if isinstance(moved, np.ndarray) and moved[0].flags.c_contiguous:
        return moved
    return engine.contiguous(moved)


def restore(z: Any, axis: int, engine: Engine) -> Any:
    """Undo `components` on the output: its leading component axis goes back to `axis` (a view)."""
    order = _to_front(len(z.shape), axis)
    return engine.transpose(z, sorted(range(len(z.shape)), key=order.__getitem__))


def stack(parts: Sequence[Any], probe: Callable[[], Any], engine: Engine) -> Any:
    """Stack component arrays on a new leading axis; None stands for a zero component.

    `probe()` computes one product, only to learn the shape and dtype when every part is None.
    """
    known = next((part for part in parts if part is not None), None)
    if known is None:
        known = probe()
    if any(part is None for part in parts):
        zero = known * 0
        parts = [zero if part is None else part for part in parts]
    return engine.stack(parts, axis=0)


def even_rows(count: int, rows: int) -> int:
    """Rows per chunk when `count` rows are cut into chunks of at most `rows`, all of one size (no short last chunk
    paying every call for a few rows).

    >>> even_rows(10_000, 9_198), even_rows(256, 32)
    (5000, 32)
    """
    return -(-count // -(-count // rows))
