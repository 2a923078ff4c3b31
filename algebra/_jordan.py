"""The Jordan algebra of an algebra: the same space with the symmetrised product x o y = (x y + y x) / 2.

For an associative algebra it is a (special) Jordan algebra: commutative, and (x o x o y) o x = (x o x) o (y o x).

>>> from product_interactions.algebra import matrix_algebra
>>> J = jordan(matrix_algebra(2))
>>> J.is_jordan(), J.is_associative()
(True, False)
"""
from __future__ import annotations

import sympy

from .algebra import Algebra


def jordan(A: Algebra) -> Algebra:
    """A with x o y = (x y + y x) / 2, on A's basis (numeric when A is)."""
    if not isinstance(A, Algebra):
        raise TypeError(f"A: expected an Algebra, got {type(A).__name__}")
    half = sympy.Rational(1, 2) if A.tol is None else 0.5
    table: dict[tuple[int, int], dict[int, sympy.Expr]] = {}
    for i, j, k, c in A.entries():
        for key in ((i, j), (j, i)):
            row = table.setdefault(key, {})
            row[k] = row.get(k, 0) + half * c
    return Algebra.from_structure_constants({key: {k: c for k, c in row.items() if c != 0}
                                            for key, row in table.items()},
                                            basis=list(A.basis), name=f"jordan({A.name})", dim=A.dim,
                                            exact=A.tol is None, tol=A.tol)
