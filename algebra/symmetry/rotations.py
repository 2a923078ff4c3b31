"""`rotations_so3(lmax)`: SO(3) on a Clebsch-Gordan factor, by the exact Lie-algebra generators of its real irreps.

Conventions are those of `algebra.so3`: degrees l ascending, m = -l..l inside each degree, the real spherical
harmonics Y_l^m (no Condon-Shortley phase) and Y_l(R x) = D^l(R) Y_l(x).  The generator J^l_a of V_l is the
derivative of D^l along the rotations about axis a = x, y, z: J^l_a = d/dt D^l(exp(t L_a)) at t = 0, with L_a the
standard basis of so(3), L_a v = e_a cross v, so [J_x, J_y] = J_z.  It is exact: differentiating
Y_l(exp(t L_a) x) gives grad Y_l^m(x) . (L_a x) = sum_m' J^l_a[m, m'] Y_l^m'(x), an identity of harmonic
polynomials solved row by row (in the rational polynomials Y_l^m / c_m, c_m the leading coefficient, so the
elimination stays in QQ).  On several degrees the generators are block diagonal.

SO(3) is connected, so equivariance under these three generators (the infinitesimal constraint) is equivariance
under every rotation.

>>> J_x, J_y, J_z = rotations_so3([1]).matrices(dtype=object)     # V_1 has the basis (y, z, x)
>>> J_z
array([[0, 0, 1],
       [0, 0, 0],
       [-1, 0, 0]], dtype=object)
>>> bool(((J_x @ J_y - J_y @ J_x) == J_z).all())
True
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import sympy

from .. import linear
from ..so3 import clebsch_gordan, spherical_harmonic_formula
from ..so3._spherical_harmonics import MAX_FORMULA_DEGREE
from ..so3.basis import check_lmax
from .action import LIE, Action
from .sparse import Sparse

_X, _Y, _Z = _POINT = sympy.symbols("x y z", real=True)
#: L_a v = e_a cross v for a = x, y, z.
_SO3_BASIS = tuple(sympy.Matrix(3, 3, lambda i, j: sympy.LeviCivita(i, a, j)) for a in range(3))


@functools.lru_cache(maxsize=None)
def irrep_generators(l: int) -> tuple[sympy.Matrix, ...]:
    """(J_x, J_y, J_z) on V_l as exact sympy matrices, in the basis m = -l..l of `algebra.so3`."""
    polynomials: list[sympy.Poly] = []
    scales: list[sympy.Expr] = []
    for m in range(-l, l + 1):
        poly = sympy.Poly(spherical_harmonic_formula(l, m, *_POINT), *_POINT)
        scales.append(poly.LC())
        polynomials.append(poly.quo_ground(poly.LC()))        # Y_l^m = scales[m] * polynomials[m]
    monomials = sorted({monomial for poly in polynomials for monomial in poly.monoms()})
    rows = [{m: poly.coeff_monomial(monomial) for m, poly in enumerate(polynomials) if poly.coeff_monomial(monomial)}
            for monomial in monomials]
    generators = []
    for L in _SO3_BASIS:
        velocity = L * sympy.Matrix(_POINT)
        J = sympy.zeros(2 * l + 1, 2 * l + 1)
        for m, poly in enumerate(polynomials):
            moved = sum((velocity[a] * poly.diff(_POINT[a]) for a in range(3)), sympy.Poly(0, *_POINT))
            coefficients = linear.solve_affine(rows, [moved.coeff_monomial(monomial) for monomial in monomials],
                                               len(polynomials))
            for n, value in enumerate(coefficients):  # type: ignore[arg-type]  # J maps V_l into V_l: solvable
                J[m, n] = sympy.radsimp(value * scales[m] / scales[n])
        generators.append(J)
    return tuple(generators)


def rotations_so3(lmax: int | Sequence[int]) -> Action:
    """SO(3) by its Lie-algebra generators J_x, J_y, J_z (kind ``"lie"``).

    An int `lmax` acts on the degrees 0..lmax, dimension (lmax + 1)^2, bound to
    ``algebra.so3.clebsch_gordan(lmax)``; a sequence of degrees, e.g. ``[2]`` or ``[1, 1]``, acts on the direct sum
    of those irreps in that order, on a bare space.
    """
    if isinstance(lmax, (list, tuple)):
        if not lmax:
            raise ValueError("lmax: expected an int or a non-empty sequence of degrees, got an empty sequence")
        degrees = tuple(check_lmax(l, f"lmax[{i}]") for i, l in enumerate(lmax))
        for i, l in enumerate(degrees):
            if l > MAX_FORMULA_DEGREE:
                raise ValueError(f"lmax[{i}]: the generators are exact for degrees <= MAX_FORMULA_DEGREE = "
                                 f"{MAX_FORMULA_DEGREE}, got {l}")
        algebra, name = None, f"rotations_so3({list(degrees)})"
    else:
        algebra = clebsch_gordan(check_lmax(lmax))          # bounded by its table's size, far below 64
        degrees = tuple(range(algebra.lmax + 1))
        name = f"rotations_so3({degrees[-1]})"
    blocks = [irrep_generators(l) for l in degrees]
    generators = [(LIE, [Sparse.from_dense(np.array(sympy.diag(*[block[a] for block in blocks]).tolist(),
                                                    dtype=object), "generator")])
                  for a in range(3)]
    return Action(generators, name, None if algebra is None else [algebra])
