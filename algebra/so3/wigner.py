"""Wigner-D matrices of the real irreducible representations, numeric (batched) and exact.

D^l(R) is the (2l + 1) x (2l + 1) orthogonal matrix with Y_l(R x) = D^l(R) Y_l(x) for the real spherical
harmonics of `spherical_harmonics` (so D(R1 R2) = D(R1) D(R2)).  A feature vector f, the coefficients of the
function sum_lm f_lm Y_l^m, rotates to D(R) f.  Numerically D^l(R) is read off the harmonics at a quadrature
grid that integrates every product Y_l Y_l' (l, l' <= lmax) exactly:
D^l(R) = sum_n w_n Y_l(R p_n) Y_l(p_n)^T.

>>> import numpy as np
>>> from product_interactions.algebra.so3.rotations import rotation_from_euler
>>> D = wigner_D(1, rotation_from_euler(np.pi / 2, 0.0, 0.0))   # the basis (y, z, x): x -> y, y -> -x
>>> np.round(D, 12) + 0.0
array([[ 0.,  0.,  1.],
       [ 0.,  1.,  0.],
       [-1.,  0.,  0.]])
>>> wigner_D_exact(1, [[0, -1, 0], [1, 0, 0], [0, 0, 1]])
Matrix([
[ 0, 0, 1],
[ 0, 1, 0],
[-1, 0, 0]])
"""
from __future__ import annotations

import functools

import numpy as np
import sympy
from numpy.typing import ArrayLike

from ..exact import object_array, to_exact
from ..limits import check_size
from .basis import check_lmax, check_parity, feature_dim, irreps
from .quadrature import sphere_quadrature
from .rotations import check_rotation, rotation_from_euler
from ._spherical_harmonics import MAX_FORMULA_DEGREE, spherical_harmonic_formula, spherical_harmonics


@functools.lru_cache(maxsize=None)
def _quadrature(lmax: int) -> tuple[np.ndarray, np.ndarray]:
    """Points (n, 3) and weighted harmonics w_n Y(p_n), shape (n, (lmax + 1)**2), of `sphere_quadrature`
    of degree 2 lmax: exact for every product Y_l Y_l' with l, l' <= lmax."""
    points, weights = sphere_quadrature(2 * lmax)
    weighted = spherical_harmonics(lmax, points) * weights[:, None]
    points.flags.writeable = weighted.flags.writeable = False
    return points, weighted


def _blocks(lmax: int, rotation: np.ndarray, argument: str) -> list[np.ndarray]:
    """[D^0(R), ..., D^lmax(R)] for checked proper rotations of shape (..., 3, 3); a degree whose quadrature
    samples exceed ``MAX_ENTRIES`` is refused naming `argument`."""
    check_size((lmax + 1) * (2 * lmax + 1) * (lmax + 1) ** 2, argument,
               f"harmonics sampled at the quadrature points of degree {lmax}", "use a smaller degree")
    points, weighted = _quadrature(lmax)
    rotated = spherical_harmonics(lmax, np.einsum("...ij,nj->...ni", rotation, points))
    return [np.einsum("...ni,nj->...ij", rotated[..., l * l:(l + 1) ** 2], weighted[:, l * l:(l + 1) ** 2])
            for l in range(lmax + 1)]


def wigner_D(l: int, rotation: ArrayLike) -> np.ndarray:
    """D^l(R) for a rotation matrix or a batch of them (..., 3, 3): shape (..., 2l + 1, 2l + 1), float64."""
    l = check_lmax(l, "l")
    return _blocks(l, check_rotation(rotation), "l")[l]


def wigner_D_from_euler(l: int, alpha: ArrayLike, beta: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """D^l of ``rotation_from_euler(alpha, beta, gamma)`` = Rz(alpha) Ry(beta) Rz(gamma) (z-y-z, active)."""
    return wigner_D(l, rotation_from_euler(alpha, beta, gamma))


def representation(lmax: int, matrix: ArrayLike, parity: bool = False) -> np.ndarray:
    """The block-diagonal matrix acting on feature vectors of the basis ``basis_labels(lmax, parity)``.

    Without parity `matrix` must be a rotation and the blocks are D^0(R), ..., D^lmax(R).  With parity it may
    be any orthogonal matrix g = s R (s = det g = +-1, R a rotation): the block of irrep (l, p) is
    D^l(R) times p when s = -1, so the inversion -I acts as +1 on even and -1 on odd irreps.  Shape
    (..., d, d) with d = ``feature_dim(lmax, parity)``.
    """
    lmax, parity = check_lmax(lmax), check_parity(parity)
    g = check_rotation(matrix, "matrix", proper=not parity)
    sign = np.sign(np.linalg.det(g))[..., None, None]
    blocks = _blocks(lmax, g * sign, "lmax")
    out = np.zeros(g.shape[:-2] + (feature_dim(lmax, parity),) * 2)
    start = 0
    for l, p in irreps(lmax, parity):
        stop = start + 2 * l + 1
        out[..., start:stop, start:stop] = blocks[l] * (sign if p == -1 else 1)
        start = stop
    return out


def wigner_D_exact(l: int, rotation: ArrayLike | sympy.Matrix) -> sympy.Matrix:
    """D^l(R) as an exact sympy Matrix for an exact rotation matrix (sympy numbers or ints), small l.

    Found by writing Y_l^m(R x), a harmonic polynomial of degree l, in the basis Y_l^m'(x): both sides are
    determined by their monomials of degree <= 1 in x, which gives a square linear system.
    """
    l = check_lmax(l, "l")
    if l > MAX_FORMULA_DEGREE:
        raise ValueError(f"l: the exact formula is built for l <= MAX_FORMULA_DEGREE = {MAX_FORMULA_DEGREE}, got "
                         f"{l}; use wigner_D for numeric rotations")
    array = object_array(rotation, "rotation", "an exact 3 x 3 matrix")   # never sympify: text is not parsed
    if array.shape != (3, 3):
        raise ValueError(f"rotation: expected shape (3, 3), got {array.shape}")
    if any(isinstance(v, (float, np.floating, sympy.Float)) for v in array.flat):
        raise TypeError("rotation: expected exact entries (integers, rationals, sqrt(...)), got floats; use "
                        "wigner_D for numeric rotations")
    R = sympy.Matrix(3, 3, [to_exact(v, f"rotation[{i}, {j}]") for (i, j), v in np.ndenumerate(array)])
    if not all(sympy.simplify(v) == 0 for v in R.T * R - sympy.eye(3)) or sympy.simplify(R.det() - 1) != 0:
        raise ValueError(f"rotation: expected an exact rotation matrix (R^T R = I, det R = 1), got {R.tolist()}")
    x, y, z = sympy.symbols("x y z", real=True)
    rotated = dict(zip((x, y, z), R * sympy.Matrix([x, y, z])))
    monomials = [y**b * z**(l - b) for b in range(l + 1)] + [x * y**b * z**(l - 1 - b) for b in range(l)]

    def coefficients(polynomial: sympy.Expr) -> list[sympy.Expr]:
        poly = sympy.Poly(sympy.expand(polynomial), x, y, z)
        return [poly.coeff_monomial(monomial) for monomial in monomials]

    scale = 2 * sympy.sqrt(sympy.pi)  # removes the common 1 / (2 sqrt(pi)) of the normalisation
    basis = [scale * spherical_harmonic_formula(l, m, x, y, z) for m in range(-l, l + 1)]
    fixed = sympy.Matrix([coefficients(f) for f in basis])
    moved = sympy.Matrix([coefficients(f.xreplace(rotated)) for f in basis])
    return (moved * fixed.inv()).applyfunc(sympy.radsimp)
