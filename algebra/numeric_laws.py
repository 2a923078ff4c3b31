"""The laws of a numeric algebra, decided within its tolerance on dense float structure constants.

**The rule** (`algebra.scalars`, one for every query of a numeric algebra): each structure constant is known to
within ``A.tol``; a law holds when every coefficient of its defect on basis elements is within the most that
changing each constant by at most ``tol`` could move it (bounded entrywise through the products: for a product
of constants, (|a| + tol)(|b| + tol) - |a||b|), plus the float rounding of the sums.  Everything is computed on
the constants divided by the largest of them (and tol alike): the laws are homogeneous, so the answer is the same,
and constants of 1e200 no longer overflow.  The multilinear laws (commutative, associative, alternative,
flexible, Jacobi) are checked on their defect tensors; the Jordan identity and power-associativity, which repeat
an argument, on their full polarisation: the symmetrised multilinear form, which vanishes on basis elements
exactly when the law holds for every element (in characteristic 0).  The dense tensors are refused beyond
`algebra.limits.MAX_DENSE_BYTES`.

>>> import numpy as np
>>> from product_interactions.algebra import octonions
>>> O = octonions().numeric(tol=1e-9)
>>> is_alternative(O), is_associative(O)
(True, False)
>>> noisy = O.structure_constants() + 1e-12 * np.random.default_rng(0).standard_normal((8, 8, 8))
>>> from product_interactions.algebra import Algebra
>>> is_alternative(Algebra.from_structure_constants(noisy, exact=False, tol=1e-9))
True
"""
from __future__ import annotations

import itertools
import string
from typing import TYPE_CHECKING

import numpy as np

from . import limits

if TYPE_CHECKING:
    from .algebra import Algebra


class _Bounded:
    """A tensor computed from the scaled constants: its `value`, the most that changes of at most tol in each
    constant can move each entry (`bound`), and the size of the terms summed into it (`size`, for rounding)."""

    def __init__(self, value: np.ndarray, bound: np.ndarray, size: np.ndarray) -> None:
        self.value, self.bound, self.size = value, bound, size

    def __add__(self, other: _Bounded) -> _Bounded:
        return _Bounded(self.value + other.value, self.bound + other.bound, self.size + other.size)

    def __sub__(self, other: _Bounded) -> _Bounded:
        return _Bounded(self.value - other.value, self.bound + other.bound, self.size + other.size)

    def moved(self, equation: str) -> _Bounded:
        """The axes permuted (`equation` an einsum of one operand)."""
        return _Bounded(*(np.einsum(equation, part) for part in (self.value, self.bound, self.size)))


def _product(equation: str, *operands: _Bounded, optimize: bool = False) -> _Bounded:
    """einsum of the operands, with the bound of its change: einsum(|v| + b, ...) - einsum(|v|, ...)."""
    magnitude = np.einsum(equation, *(np.abs(o.value) for o in operands), optimize=optimize)
    widened = np.einsum(equation, *(np.abs(o.value) + o.bound for o in operands), optimize=optimize)
    return _Bounded(np.einsum(equation, *(o.value for o in operands), optimize=optimize),
                    np.maximum(widened - magnitude, 0.0),
                    np.einsum(equation, *(o.size for o in operands), optimize=optimize))


def _constants(A: Algebra, query: str, order: int) -> _Bounded:
    """The dense constants divided by the largest (tol alike), after checking that three defect tensors with
    `order` basis indices fit."""
    size = 3 * 8 * A.dim ** (order + 1)
    if size > limits.MAX_DENSE_BYTES:
        raise ValueError(f"{query}: the dense defect tensors of {A.name} take {size:,} bytes (dimension {A.dim}), "
                         f"more than algebra.limits.MAX_DENSE_BYTES = {limits.MAX_DENSE_BYTES:,}")
    lam = A.structure_constants()
    scale = float(np.max(np.abs(lam))) if lam.size else 0.0
    scale = scale if scale > 0 else 1.0
    lam = lam / scale
    return _Bounded(lam, np.full(lam.shape, A.scalars.tol / scale), np.abs(lam))  # type: ignore[operator]


def _small(defect: _Bounded, A: Algebra) -> bool:
    """Every entry within its bound, plus the rounding of sums of `A.dim`-fold products."""
    if not defect.value.size:
        return True
    rounding = 8 * (A.dim + 1) * np.finfo(float).eps * defect.size
    return bool(np.all(np.abs(defect.value) <= defect.bound + rounding))


def _symmetrised(tensor: _Bounded, slots: tuple[int, ...]) -> _Bounded:
    """The sum of `tensor` over all permutations of its axes `slots` (the others stay in place)."""
    letters = string.ascii_letters[:tensor.value.ndim]
    total = None
    for order in itertools.permutations(slots):
        target = list(letters)
        for slot, moved in zip(slots, order):
            target[slot] = letters[moved]
        term = tensor.moved(f"{letters}->{''.join(target)}")
        total = term if total is None else total + term
    return total  # type: ignore[return-value]  # slots is never empty


def is_commutative(A: Algebra) -> bool:
    """lam[i, j, k] = lam[j, i, k] within tol."""
    lam = _constants(A, "is_commutative", 2)
    return _small(lam - lam.moved("ijk->jik"), A)


def is_anticommutative(A: Algebra) -> bool:
    """lam[i, j, k] = -lam[j, i, k] within tol."""
    lam = _constants(A, "is_anticommutative", 2)
    return _small(lam + lam.moved("ijk->jik"), A)


def _associator(lam: _Bounded) -> _Bounded:
    """(e_i e_j) e_k - e_i (e_j e_k) at e_m, indexed [i, j, k, m]."""
    return _product("ijp,pkm->ijkm", lam, lam) - _product("jkp,ipm->ijkm", lam, lam)


def is_associative(A: Algebra) -> bool:
    """(e_i e_j) e_k = e_i (e_j e_k) within tol."""
    return _small(_associator(_constants(A, "is_associative", 3)), A)


def is_alternative(A: Algebra) -> bool:
    """The associator changes sign when its first two, and when its last two, arguments swap."""
    associator = _associator(_constants(A, "is_alternative", 3))
    return _small(associator + associator.moved("jikm->ijkm"), A) and \
        _small(associator + associator.moved("ikjm->ijkm"), A)


def is_flexible(A: Algebra) -> bool:
    """The associator changes sign when its outer arguments swap: (x y) x = x (y x)."""
    associator = _associator(_constants(A, "is_flexible", 3))
    return _small(associator + associator.moved("kjim->ijkm"), A)


def satisfies_jacobi(A: Algebra) -> bool:
    """(e_i e_j) e_k + (e_j e_k) e_i + (e_k e_i) e_j = 0 within tol."""
    lam = _constants(A, "is_lie", 3)
    left = _product("ijp,pkm->ijkm", lam, lam)
    return _small(left + left.moved("jkim->ijkm") + left.moved("kijm->ijkm"), A)


def is_jordan(A: Algebra) -> bool:
    """Commutative, and (x x y) x = (x x)(y x): its polarisation in the three x's vanishes on basis elements."""
    if not is_commutative(A):
        return False
    lam = _constants(A, "is_jordan", 4)
    square_times = _product("abp,pem->abem", lam, lam)                           # (e_a e_b) e_e
    defect = _product("abem,mcn->abecn", square_times, lam) - _product(           # ... e_c  -  (e_a e_b)(e_e e_c)
        "abp,pqn,ecq->abecn", lam, lam, lam, optimize=True)
    return _small(_symmetrised(defect, (0, 1, 3)), A)


def is_power_associative(A: Algebra) -> bool:
    """x^2 x = x x^2 and (x^2 x) x = x^2 x^2 (Albert), each polarised over all its arguments."""
    lam = _constants(A, "is_power_associative", 4)
    if not _small(_symmetrised(_associator(lam), (0, 1, 2)), A):
        return False
    cube = _product("abp,pcm->abcm", lam, lam)                                    # (e_a e_b) e_c
    defect = _product("abcm,men->abcen", cube, lam) - _product(                   # ... e_e  -  (e_a e_b)(e_c e_e)
        "abp,pqn,ceq->abcen", lam, lam, lam, optimize=True)
    return _small(_symmetrised(defect, (0, 1, 2, 3)), A)
