"""Masks over (query, key) position pairs, used by the reductions P, P^c, P^N and the masked softmax.

A mask is a 0/1 array of shape (n_query, n_key): mask[k, l] = 1 keeps the pair (query k, key l).  The nodes
also take a `Mask` rule (``Mask.causal()``, ``Mask.band(r)``, ``Mask.full()``), which fits every length, so a
compiled expression that uses one serves every sequence length; an array fixes the length.

>>> causal(3)
array([[1., 0., 0.],
       [1., 1., 0.],
       [1., 1., 1.]])
>>> radius(4, 1)[0]
array([1., 1., 0., 0.])
"""
from __future__ import annotations

from typing import TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from ..algebra.algebra import check_count
from ..kernels import Mask

#: A mask as the nodes take it: a `Mask` rule, or a 0/1 array of shape (n_query, n_key).
MaskLike: TypeAlias = "Mask | ArrayLike"


def full(n: int) -> np.ndarray:
    """Every pair: the plain reduction P."""
    n = check_count(n, "n")
    return np.ones((n, n))


def causal(n: int) -> np.ndarray:
    """Pairs with l <= k: the causal reduction P^c."""
    n = check_count(n, "n")
    return np.tril(np.ones((n, n)))


def radius(n: int, r: float, points: ArrayLike | None = None) -> np.ndarray:
    """Pairs within distance r: |k - l| <= r on a 1-D lattice, or |points[k] - points[l]| <= r for given points."""
    n = check_count(n, "n")
    if not np.isscalar(r) or not r >= 0:  # type: ignore[operator]  # r is meant to be a real number
        raise ValueError(f"r: expected a non-negative number, got {r!r}")
    if points is None:
        distance = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    else:
        try:
            points = np.asarray(points, dtype=float)
        except (TypeError, ValueError) as error:
            raise TypeError(f"points: expected an array of real coordinates, got {type(points).__name__} "
                            f"({error})") from None
        if points.ndim != 2 or points.shape[0] != n:
            raise ValueError(f"points: expected shape ({n}, dims), got {points.shape}")
        distance = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)
    return (distance <= r).astype(float)


def as_mask(mask: MaskLike, rows: int, columns: int, argument: str = "mask") -> Mask:
    """Check a user mask, a `Mask` rule or a 0/1 array of shape (rows, columns) = (query, key), as a `Mask`."""
    if not isinstance(mask, Mask):
        mask = Mask.fixed(mask, argument)
    if mask.shape is not None and mask.shape != (rows, columns):
        raise ValueError(f"{argument}: expected shape ({rows}, {columns}) (query, key), got {mask.shape}")
    return mask
