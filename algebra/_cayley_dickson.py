"""The Cayley-Dickson doubling: from a *-algebra A (its first basis element the unit, conjugation negating the
others) to A (+) A with (p, q)(r, s) = (p r - s* q, s p + q r*), conjugation (p, q)* = (p*, -q).

Doubling the complex numbers gives the quaternions (associative), then the octonions (alternative, not
associative), then the sedenions (flexible and power-associative only).  Each step keeps the basis convention,
so the tower continues.

>>> O = octonions()
>>> O.dim, O.is_alternative(), O.is_associative()
(8, True, False)
>>> O.basis[:3]
('1', 'e1', 'e2')
"""
from __future__ import annotations

import sympy

from .algebra import Algebra
from ._clifford import complex_numbers
from .limits import check_size

#: The largest doubling built: the 64-dimensional algebra after the sedenions.
MAX_DIM = 64


def _shifted(sign: int, row: dict[int, sympy.Expr], offset: int) -> dict[int, sympy.Expr]:
    """sign * row with its components moved by `offset` (into the second half of the doubling)."""
    return {k + offset: sign * c for k, c in row.items()}


def cayley_dickson(A: Algebra, name: str | None = None) -> Algebra:
    """The doubling of `A`, dimension 2 A.dim, basis 1, e1, ..., e(2n-1).  `A` must have the unit as its first
    basis element (conjugation negates the others): `complex_numbers()` or an earlier doubling.  The doubling of
    a numeric algebra is numeric."""
    if not isinstance(A, Algebra):
        raise TypeError(f"A: expected an Algebra, got {type(A).__name__}")
    n = A.dim
    if 2 * n > MAX_DIM:
        raise ValueError(f"A: the doubling of {A.name} has dimension {2 * n}, more than "
                         f"algebra.cayley_dickson.MAX_DIM = {MAX_DIM}")
    check_size(n * n, "A", f"products of basis elements of {A.name}", "use a smaller algebra")
    unit = A.unit()
    if unit is None or unit != A.basis_element(0):
        raise ValueError(f"A: expected an algebra whose first basis element is its unit (a Cayley-Dickson algebra "
                         f"such as complex_numbers()), got {A.name}")
    table = {(i, j): A.product_of_basis(i, j) for i in range(n) for j in range(n)}

    def product(i: int, j: int) -> dict[int, sympy.Expr]:
        (a, first), (b, second) = divmod(i, n)[::-1], divmod(j, n)[::-1]
        if not first and not second:
            return _shifted(1, table[a, b], 0)                          # (a, 0)(b, 0) = (a b, 0)
        if not first:
            return _shifted(1, table[b, a], n)                          # (a, 0)(0, b) = (0, b a)
        if not second:
            return _shifted(1, _conjugated(table[a, b], b), n)          # (0, a)(b, 0) = (0, a b*)
        return _shifted(-1, _conjugated(table[b, a], b), 0)            # (0, a)(0, b) = (-b* a, 0)

    labels = ["1"] + [f"e{k}" for k in range(1, 2 * n)]
    return Algebra.from_function(2 * n, product, basis=labels, exact=A.tol is None, tol=A.tol,
                                 name=f"cayley_dickson({A.name})" if name is None else name)


def _conjugated(row: dict[int, sympy.Expr], b: int) -> dict[int, sympy.Expr]:
    """A product of basis elements with its factor e_b conjugated (e_b* = e_b for b = 0, else -e_b)."""
    return row if b == 0 else {k: -c for k, c in row.items()}


def octonions() -> Algebra:
    """The octonions: the Cayley-Dickson doubling of the quaternions (of the complex numbers, twice)."""
    return cayley_dickson(cayley_dickson(complex_numbers()), name="octonions")
