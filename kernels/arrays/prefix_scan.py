"""Associative scans along one axis in logarithmic depth: every inclusive prefix, or only the total.

An *element* is a tuple of arrays that share the scanned axis; ``combine(a, b)`` is an associative product of
two elements, applied to many of them at once (the scanned axis is just another batch axis to it).
`prefix_scan` returns e_0, e_0 e_1, ..., e_0 ... e_{n-1} with fewer than 2n products in about 2 log2(n) rounds
(combine neighbours, scan the half-length sequence, fix up the even positions); `tree_reduce` returns the
total e_0 ... e_{n-1} in log2(n) rounds.  The product need not commute; arrays may be numpy (autograd's traced
ones too), torch or JAX arrays (`kernels.arrays.registry`).

>>> import numpy as np
>>> matmul = lambda a, b: (a[0] @ b[0],)
>>> shears = np.array([[[1., 1.], [0., 1.]], [[1., 0.], [2., 1.]], [[1., 3.], [0., 1.]]])
>>> prefix_scan(matmul, (shears,))[0][-1]
array([[ 3., 10.],
       [ 2.,  7.]])
>>> tree_reduce(matmul, (shears,))[0]
array([[ 3., 10.],
       [ 2.,  7.]])
>>> cumulative_sum(np.array([1., 2., 3.]), axis=0)      # [:-1] exclusive, [1:] inclusive prefixes
array([0., 1., 3., 6.])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive

from .registry import NUMPY, engine_of

if TYPE_CHECKING:
    from .engine import Engine

#: An element of a scan: arrays (of any engine) that share the scanned axis.
Element = tuple[Any, ...]


def _engine(element: Element) -> Engine:
    return engine_of({f"element[{n}]": a for n, a in enumerate(element)})


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


def prefix_scan(combine: Callable[[Element, Element], Element], element: Iterable[Any], axis: int = 0) -> Element:
    """Every inclusive prefix product of the elements along `axis` (see the module docstring)."""
    element = tuple(element)
    n = _length(element, axis)
    if n < 2:
        return element
    pairs = combine(_take(element, slice(0, n - 1, 2), axis), _take(element, slice(1, n, 2), axis))
    odd = prefix_scan(combine, pairs, axis)                       # the prefixes ending at 1, 3, 5, ...
    even = combine(_take(odd, slice(0, (n - 1) // 2), axis), _take(element, slice(2, n, 2), axis))
    first, engine = _take(element, slice(0, 1), axis), _engine(element)
    return tuple(_interleave(engine, engine.concatenate([f, e], axis=axis), o, axis) for f, e, o in
                 zip(first, even, odd))


def tree_reduce(combine: Callable[[Element, Element], Element], element: Iterable[Any], axis: int = 0) -> Element:
    """The product of all elements along `axis`, which is removed (see the module docstring)."""
    element = tuple(element)
    n = _length(element, axis)
    while n > 1:
        pairs = combine(_take(element, slice(0, n - 1, 2), axis), _take(element, slice(1, n, 2), axis))
        if n % 2:
            engine = _engine(element)
            pairs = tuple(engine.concatenate([p, e], axis=axis) for p, e in zip(pairs, _take(element, slice(-1, None),
                                                                                              axis)))
        element, n = pairs, (n + 1) // 2
    return _take(element, 0, axis)


def cumulative_sum(a: Any, axis: int) -> Any:
    """Sums of a along `axis` of every prefix, the empty one first: n + 1 entries (0, a_0, a_0 + a_1, ...)."""
    engine = engine_of({"a": a})
    if engine is NUMPY:
        return _numpy_cumulative_sum(a, axis)
    shape = list(a.shape)
    shape[axis] = 1
    return engine.concatenate([engine.zeros(tuple(shape), a), engine.cumsum(a, axis=axis)], axis=axis)


@primitive
def _numpy_cumulative_sum(a: Any, axis: int) -> Any:
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


defvjp(_numpy_cumulative_sum, _cumulative_sum_vjp)
