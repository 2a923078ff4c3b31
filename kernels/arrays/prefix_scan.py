"""Associative scans along one axis in logarithmic depth: every inclusive prefix, or only the total.

An *element* is a tuple of arrays that share the scanned axis; ``combine(a, b)`` is an associative product of
two elements, applied to many of them at once (the scanned axis is just another batch axis to it).
`prefix_scan` returns e_0, e_0 e_1, ..., e_0 ... e_{n-1} with fewer than 2n products in about 2 log2(n) rounds
(combine neighbours, scan the half-length sequence, fix up the even positions); `tree_reduce` returns the
total e_0 ... e_{n-1} in log2(n) rounds.  The product need not commute; the arrays are those of `engine` (numpy
with autograd's traced ones too, torch or JAX: `kernels.arrays.engine`).

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> matmul = lambda a, b: (a[0] @ b[0],)
>>> shears = np.array([[[1., 1.], [0., 1.]], [[1., 0.], [2., 1.]], [[1., 3.], [0., 1.]]])
>>> prefix_scan(matmul, (shears,), engine=NUMPY)[0][-1]
array([[ 3., 10.],
       [ 2.,  7.]])
>>> tree_reduce(matmul, (shears,), engine=NUMPY)[0]
array([[ 3., 10.],
       [ 2.,  7.]])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    from .engine import Engine

#: An element of a scan: arrays (of one engine) that share the scanned axis.
Element = tuple[Any, ...]


def _take(element: Element, index: int | slice, axis: int) -> Element:
    key = (slice(None),) * axis + (index,)
    return tuple(array[key] for array in element)


def _length(element: Element, axis: int) -> int:
    lengths = {array.shape[axis] for array in element}
    if len(lengths) != 1:
        raise ValueError(f"element: expected arrays of one length along axis {axis}, got lengths {sorted(lengths)}")
    return lengths.pop()


def _interleave(engine: Engine, even: Any, odd: Any, axis: int) -> Any:
    """Positions 0, 2, 4, ... from `even` and 1, 3, ... from `odd` (len(even) - len(odd) is 0 or 1)."""
    tail = even.shape[axis] - odd.shape[axis]
    paired = even[(slice(None),) * axis + (slice(0, odd.shape[axis]),)]
    shape = tuple(odd.shape)
    woven = engine.reshape(engine.stack([paired, odd], axis=axis + 1),
                           shape[:axis] + (2 * shape[axis],) + shape[axis + 1:])
    return engine.concatenate([woven, even[(slice(None),) * axis + (slice(-1, None),)]], axis=axis) if tail else \
        woven


def prefix_scan(combine: Callable[[Element, Element], Element], element: Iterable[Any], axis: int = 0, *,
                engine: Engine) -> Element:
    """Every inclusive prefix product of the elements along `axis` (see the module docstring)."""
    element = tuple(element)
    n = _length(element, axis)
    if n < 2:
        return element
    pairs = combine(_take(element, slice(0, n - 1, 2), axis), _take(element, slice(1, n, 2), axis))
    odd = prefix_scan(combine, pairs, axis, engine=engine)                       # the prefixes ending at 1, 3, 5, ...
    even = combine(_take(odd, slice(0, (n - 1) // 2), axis), _take(element, slice(2, n, 2), axis))
    first = _take(element, slice(0, 1), axis)
    return tuple(_interleave(engine, engine.concatenate([f, e], axis=axis), o, axis) for f, e, o in
                 zip(first, even, odd))


def tree_reduce(combine: Callable[[Element, Element], Element], element: Iterable[Any], axis: int = 0, *,
                engine: Engine) -> Element:
    """The product of all elements along `axis`, which is removed (see the module docstring)."""
    element = tuple(element)
    n = _length(element, axis)
    while n > 1:
        pairs = combine(_take(element, slice(0, n - 1, 2), axis), _take(element, slice(1, n, 2), axis))
        if n % 2:
            pairs = tuple(engine.concatenate([p, e], axis=axis) for p, e in zip(pairs, _take(element, slice(-1, None),
                                                                                              axis)))
        element, n = pairs, (n + 1) // 2
    return _take(element, 0, axis)
