"""Real Gaunt coefficients and the Gaunt algebra `gaunt(lmax)`: pointwise products of functions on the sphere.

G^{l m}_{l1 m1, l2 m2} = integral over the sphere of Y_l1^m1 Y_l2^m2 Y_l^m dOmega for the real orthonormal
harmonics of `spherical_harmonics`.  So for f = sum_lm x_lm Y_l^m and g = sum_lm y_lm Y_l^m the product of
elements is the coefficient vector of the pointwise product f g projected back onto degrees <= lmax.  The
coefficients vanish unless l1 + l2 + l is even and are exact:

    G^{l m}_{l1 m1, l2 m2} = sqrt((2 l1 + 1)(2 l2 + 1) / (4 pi (2 l + 1))) |<l1 0 l2 0 | l 0>| C^{l m}_{l1 m1, l2 m2}

with C the real Clebsch-Gordan coefficients of `clebsch_gordan` (whose phase makes this factor positive).
The algebra is commutative and has the unit 2 sqrt(pi) e^0_0 (the constant function 1); truncation makes it
non-associative for lmax >= 1.

>>> G = gaunt(1)
>>> G.is_commutative(), G.unit()
(True, 2*sqrt(pi)*e^0_0)
>>> z = G.basis_element("e^1_0")
>>> z * z
1/(2*sqrt(pi))*e^0_0
"""
from __future__ import annotations

import functools

import numpy as np
import sympy
from numpy.typing import DTypeLike

from ..exact import check_dtype
from .basis import feature_dim
from ._clebsch_gordan import assemble, check_table_lmax, complex_clebsch_gordan, path_table
from .path_algebra import PathAlgebra
from .surds import PathTable, Surd

_SQRT_PI = sympy.sqrt(sympy.pi)


def _path_factor(l1: int, l2: int, l: int) -> Surd:
    """sqrt(pi) times the factor relating the path's Gaunt coefficients to its Clebsch-Gordan coefficients."""
    if (l1 + l2 + l) % 2:
        return Surd()
    parity_cg = complex_clebsch_gordan(l1, 0, l2, 0, l, 0)
    magnitude = Surd(tuple((s, abs(c)) for s, c in parity_cg.terms))
    return magnitude * Surd.from_sympy(sympy.sqrt(sympy.Rational((2 * l1 + 1) * (2 * l2 + 1), 4 * (2 * l + 1))))


@functools.lru_cache(maxsize=None)
def _gaunt_table(lmax: int) -> PathTable:
    """``{path: ((m1, m2, m), sqrt(pi) G)}`` for every path up to lmax with l1 + l2 + l even."""
    table: PathTable = {}
    for path, entries in path_table(lmax).items():
        factor = _path_factor(*path)
        if factor:
            table[path] = tuple((key, factor * value) for key, value in entries)
    return table


def gaunt_tensor(lmax: int, dtype: DTypeLike = np.float64) -> np.ndarray:
    """The dense structure constants G[i, j, k] of ``gaunt(lmax)`` (fast, numeric)."""
    lmax = check_table_lmax(lmax)
    out = np.zeros((feature_dim(lmax),) * 3, dtype=check_dtype(dtype, allow_object=True))
    for i, j, k, value in assemble(lmax, False, _gaunt_table(lmax)):
        out[i, j, k] = value.to_sympy() / _SQRT_PI if out.dtype == object else float(value) / np.sqrt(np.pi)
    return out


def gaunt(lmax: int) -> PathAlgebra:
    """The Gaunt algebra on ``basis_labels(lmax)``: e^{l1}_{m1} e^{l2}_{m2} = sum_{l <= lmax, m} G e^l_m.

    G = G^{l m}_{l1 m1, l2 m2} as in the module docstring; structured like `clebsch_gordan`.
    """
    lmax = check_table_lmax(lmax)
    return PathAlgebra("gaunt", lmax, False, _gaunt_table(lmax), 1 / _SQRT_PI)
