"""Converters between our real spherical-harmonic basis and e3nn's.

e3nn (``e3nn.o3``) uses the same real harmonics with **y as the polar axis** and its own axis order: its l = 1
harmonics are proportional to (x, y, z) itself, where ours are proportional to (y, z, x).  As functions,
``Y_e3nn(u) = Y_ours(P u)`` with P u = (u_z, u_x, u_y), a proper rotation, so a feature vector f (coefficients
of sum f_lm Y_l^m) has the e3nn components ``to_e3nn(f) = D(P) f``, block by block: an orthogonal map, which
sends our D(R) to e3nn's D(R) = D_ours(P R P^T).  Both bases are orthonormal on the sphere (e3nn's
``normalization='integral'``, its default), so

    to_e3nn(spherical_harmonics(lmax, u)) == e3nn.o3.spherical_harmonics(range(lmax + 1), u, True)

and e3nn's ``normalization='component'`` is sqrt(4 pi) times that.  e3nn's ``wigner_3j(l1, l2, l)`` (Frobenius
norm 1) is, up to one sign per path, our `clebsch_gordan_path` with to_e3nn applied on all three axes, divided
by sqrt(2 l + 1).  Features are laid out as ``(..., (lmax + 1)**2)``, degree by degree (one copy of each l, of
any parity, as in e3nn's irreps "1x0e + 1x1o + 1x2e + ...").

>>> import numpy as np
>>> np.round(to_e3nn([0.0, 1.0, 2.0, 3.0]), 12) + 0.0       # l = 1 as (y, z, x) = (1, 2, 3) -> (x, y, z)
array([0., 3., 1., 2.])
>>> from_e3nn(to_e3nn(np.arange(9.0))).round(12) + 0.0
array([0., 1., 2., 3., 4., 5., 6., 7., 8.])
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from .wigner import representation

#: P u = (u_z, u_x, u_y): our harmonics at P u are e3nn's at u.
E3NN_AXES = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


@functools.lru_cache(maxsize=None)
def _change_of_basis(lmax: int) -> np.ndarray:
    matrix = representation(lmax, E3NN_AXES)
    matrix.flags.writeable = False
    return matrix


def _features(features: ArrayLike, argument: str = "features") -> tuple[np.ndarray, np.ndarray]:
    try:
        array = np.asarray(features)
    except (TypeError, ValueError) as error:                # a ragged list
        raise TypeError(f"{argument}: expected a real array of shape (..., (lmax + 1)**2), got "
                        f"{type(features).__name__} ({error})") from None
    if array.dtype.kind not in "fiu" or array.ndim == 0:
        raise TypeError(f"{argument}: expected a real array of shape (..., (lmax + 1)**2), got "
                        f"{type(features).__name__} of dtype {array.dtype} and shape {array.shape}")
    size = array.shape[-1]
    lmax = math.isqrt(size) - 1
    if size == 0 or (lmax + 1) ** 2 != size:
        raise ValueError(f"{argument}: the last axis must have (lmax + 1)**2 components (1, 4, 9, 16, ...), "
                         f"got {size}")
    array = array if array.dtype.kind == "f" else array.astype(np.float64)
    return array, _change_of_basis(lmax).astype(array.dtype)


def to_e3nn(features: ArrayLike) -> np.ndarray:
    """Features in our basis (..., (lmax + 1)**2) -> the same features in e3nn's basis."""
    array, matrix = _features(features)
    return array @ matrix.T


def from_e3nn(features: ArrayLike) -> np.ndarray:
    """Features in e3nn's basis (..., (lmax + 1)**2) -> the same features in our basis (inverse of `to_e3nn`)."""
    array, matrix = _features(features)
    return array @ matrix
