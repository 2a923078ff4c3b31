"""The matrix algebra M_n on the matrix units E_ij: E_ij E_kl = delta_jk E_il (associative, not commutative).

Basis order is row-major: E_11, E_12, ..., E_nn (1-based labels).

>>> M = matrix_algebra(2)
>>> M.basis_element("E12") * M.basis_element("E21")
E11
"""
from __future__ import annotations

from .algebra import Algebra, check_count, check_entries
from .labels import word_label


def matrix_algebra(n: int) -> Algebra:
    """M_n over the reals; element coefficients of E_ij are the matrix entries in row-major order."""
    n = check_count(n, "n")
    check_entries(n**3, "n", f"matrix_algebra({n})")
    index = lambda i, j: i * n + j  # noqa: E731
    table = {(index(i, j), index(j, l)): {index(i, l): 1} for i in range(n) for j in range(n) for l in range(n)}
    basis = [word_label("E", (i + 1, j + 1), largest=n) for i in range(n) for j in range(n)]
    return Algebra.from_structure_constants(table, basis=basis, name=f"matrix_algebra({n})")
