"""The laws of a numeric algebra, decided within its tolerance on dense float structure constants.

A law holds when every coefficient of its defect on basis elements is at most ``A.tol`` in absolute value.  The
multilinear laws (commutative, associative, alternative, flexible, Jacobi) are checked on their defect tensors;
the Jordan identity and power-associativity, which repeat an argument, on their full polarisation: the
symmetrised multilinear form, which vanishes on basis elements exactly when the law holds for every element (in
characteristic 0).  The dense tensors are refused beyond `algebra.limits.MAX_DENSE_BYTES`.

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


def _constants(A: Algebra, query: str, order: int) -> np.ndarray:
    """The dense constants, after checking that three defect tensors with `order` basis indices fit."""
    size = 3 * 8 * A.dim ** (order + 1)
    if size > limits.MAX_DENSE_BYTES:
        raise ValueError(f"{query}: the dense defect tensors of {A.name} take {size:,} bytes (dimension {A.dim}), "
                         f"more than algebra.limits.MAX_DENSE_BYTES = {limits.MAX_DENSE_BYTES:,}")
    return A.structure_constants()


def _small(defect: np.ndarray, A: Algebra) -> bool:
    return not defect.size or float(np.max(np.abs(defect))) <= A.scalars.tol  # type: ignore[operator]


def _symmetrised(tensor: np.ndarray, slots: tuple[int, ...]) -> np.ndarray:
    """The sum of `tensor` over all permutations of its axes `slots` (the others stay in place)."""
    letters = string.ascii_letters[:tensor.ndim]
    total = np.zeros_like(tensor)
    for order in itertools.permutations(slots):
        target = list(letters)
        for slot, moved in zip(slots, order):
            target[slot] = letters[moved]
        total += np.einsum(f"{letters}->{''.join(target)}", tensor)
    return total


def is_commutative(A: Algebra) -> bool:
    """lam[i, j, k] = lam[j, i, k] within tol."""
    lam = _constants(A, "is_commutative", 2)
    return _small(lam - lam.transpose(1, 0, 2), A)


def is_anticommutative(A: Algebra) -> bool:
    """lam[i, j, k] = -lam[j, i, k] within tol."""
    lam = _constants(A, "is_anticommutative", 2)
    return _small(lam + lam.transpose(1, 0, 2), A)


def _associator(lam: np.ndarray) -> np.ndarray:
    """(e_i e_j) e_k - e_i (e_j e_k) at e_m, indexed [i, j, k, m]."""
    return np.einsum("ijp,pkm->ijkm", lam, lam) - np.einsum("jkp,ipm->ijkm", lam, lam)


def is_associative(A: Algebra) -> bool:
    """(e_i e_j) e_k = e_i (e_j e_k) within tol."""
    return _small(_associator(_constants(A, "is_associative", 3)), A)


def is_alternative(A: Algebra) -> bool:
    """The associator changes sign when its first two, and when its last two, arguments swap."""
    associator = _associator(_constants(A, "is_alternative", 3))
    return _small(associator + np.einsum("jikm->ijkm", associator), A) and \
        _small(associator + np.einsum("ikjm->ijkm", associator), A)


def is_flexible(A: Algebra) -> bool:
    """The associator changes sign when its outer arguments swap: (x y) x = x (y x)."""
    associator = _associator(_constants(A, "is_flexible", 3))
    return _small(associator + np.einsum("kjim->ijkm", associator), A)


def satisfies_jacobi(A: Algebra) -> bool:
    """(e_i e_j) e_k + (e_j e_k) e_i + (e_k e_i) e_j = 0 within tol."""
    lam = _constants(A, "is_lie", 3)
    left = np.einsum("ijp,pkm->ijkm", lam, lam)
    return _small(left + np.einsum("jkim->ijkm", left) + np.einsum("kijm->ijkm", left), A)


def is_jordan(A: Algebra) -> bool:
    """Commutative, and (x x y) x = (x x)(y x): its polarisation in the three x's vanishes on basis elements."""
    if not is_commutative(A):
        return False
    lam = _constants(A, "is_jordan", 4)
    square_times = np.einsum("abp,pem->abem", lam, lam)                          # (e_a e_b) e_e
    defect = np.einsum("abem,mcn->abecn", square_times, lam) - np.einsum(         # ... e_c  -  (e_a e_b)(e_e e_c)
        "abp,pqn,ecq->abecn", lam, lam, lam, optimize=True)
    return _small(_symmetrised(defect, (0, 1, 3)), A)


def is_power_associative(A: Algebra) -> bool:
    """x^2 x = x x^2 and (x^2 x) x = x^2 x^2 (Albert), each polarised over all its arguments."""
    lam = _constants(A, "is_power_associative", 4)
    if not _small(_symmetrised(_associator(lam), (0, 1, 2)), A):
        return False
    cube = np.einsum("abp,pcm->abcm", lam, lam)                                   # (e_a e_b) e_c
    defect = np.einsum("abcm,men->abcen", cube, lam) - np.einsum(                 # ... e_e  -  (e_a e_b)(e_c e_e)
        "abp,pqn,ceq->abcen", lam, lam, lam, optimize=True)
    return _small(_symmetrised(defect, (0, 1, 2, 3)), A)
