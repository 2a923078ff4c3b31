"""An algebra in another basis, for tests whose reference is an isomorphism: f_a = sum_i P[i, a] e_i for an
invertible P, so that f_a f_b = sum_c (P^-1 (sum_ij P[i, a] P[j, b] e_i e_j))_c f_c, exactly (sympy)."""
from __future__ import annotations

import itertools

import numpy as np
import sympy

from product_interactions.algebra import Algebra


def unipotent(dim: int, seed: int, entries: tuple[int, int] = (-2, 2), scale: sympy.Expr = sympy.Integer(1)
              ) -> sympy.Matrix:
    """P = 1 + scale N, N strictly upper triangular with random integer entries in `entries` (P^-1 is then a
    polynomial in scale N: integer for scale 1, in Z[sqrt(2)] for sqrt(2))."""
    rng = np.random.default_rng(seed)
    low, high = entries
    return sympy.eye(dim) + scale * sympy.Matrix(np.triu(rng.integers(low, high + 1, (dim, dim)), 1).tolist())


def in_basis(A: Algebra, P: sympy.Matrix) -> Algebra:
    """A in the basis given by the columns of P (exact constants)."""
    inverse = P.inv()
    table = {}
    for a, b in itertools.product(range(A.dim), repeat=2):
        e = sympy.zeros(A.dim, 1)
        for i, j in itertools.product(range(A.dim), repeat=2):
            if P[i, a] != 0 and P[j, b] != 0:
                for k, c in A.product_of_basis(i, j).items():
                    e[k] += P[i, a] * P[j, b] * sympy.sympify(c)
        f = (inverse * e).applyfunc(sympy.expand)
        table[a, b] = {c: f[c] for c in range(A.dim) if f[c] != 0}
    return Algebra.from_structure_constants(table, dim=A.dim, name=f"{A.name} in another basis")
