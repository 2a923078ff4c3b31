"""Classical Lie algebras as algebras whose product is the bracket: gl(n), sl(n), so(n), and R^3 with the cross
product (so(3) on its vector representation).

Bases: gl(n) the matrix units E_ij (row-major); sl(n) the E_ij with i != j, then H_i = E_ii - E_(i+1)(i+1);
so(n) the L_ij = E_ij - E_ji with i < j.  Brackets are commutators of these matrices, expressed on the basis.

>>> sl2 = lie_algebra("sl", 2)
>>> sl2.basis, sl2.is_lie(), sl2.is_semisimple()
(('E12', 'E21', 'H1'), True, True)
>>> cross_product().product_of_basis("e1", "e2")       # e1 x e2 = e3
{2: 1}
"""
from __future__ import annotations

import sympy

from .algebra import Algebra, check_count
from .labels import word_label
from .limits import check_size

#: The largest n built (gl(n) has n^2 basis elements and n^4 brackets).
MAX_N = 16

#: A sparse matrix: {(row, column): value}.
Matrix = dict[tuple[int, int], int]


def _commutator(a: Matrix, b: Matrix) -> Matrix:
    product: dict[tuple[int, int], int] = {}
    for sign, (left, right) in ((1, (a, b)), (-1, (b, a))):
        for (i, k), u in left.items():
            for (k2, j), v in right.items():
                if k == k2:
                    product[i, j] = product.get((i, j), 0) + sign * u * v
    return {key: v for key, v in product.items() if v}


def _basis(name: str, n: int) -> tuple[list[str], list[Matrix]]:
    if name == "gl":
        units = [(i, j) for i in range(n) for j in range(n)]
        return [word_label("E", (i + 1, j + 1), n) for i, j in units], [{u: 1} for u in units]
    if name == "sl":
        units = [(i, j) for i in range(n) for j in range(n) if i != j]
        return ([word_label("E", (i + 1, j + 1), n) for i, j in units] + [f"H{i + 1}" for i in range(n - 1)],
                [{u: 1} for u in units] + [{(i, i): 1, (i + 1, i + 1): -1} for i in range(n - 1)])
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    return [word_label("L", (i + 1, j + 1), n) for i, j in pairs], [{(i, j): 1, (j, i): -1} for i, j in pairs]


def _coordinates(name: str, n: int, matrix: Matrix) -> dict[int, int]:
    """The coefficients of a bracket on the basis of `_basis` (it lies in the algebra)."""
    if name == "gl":
        return {i * n + j: v for (i, j), v in matrix.items()}
    if name == "so":
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        return {k: matrix[p] for k, p in enumerate(pairs) if matrix.get(p)}
    units = [(i, j) for i in range(n) for j in range(n) if i != j]
    result = {k: matrix[u] for k, u in enumerate(units) if matrix.get(u)}
    running = 0                                    # diagonal d = sum_i c_i H_i: c_i = d_1 + ... + d_i
    for i in range(n - 1):
        running += matrix.get((i, i), 0)
        if running:
            result[len(units) + i] = running
    return result


def lie_algebra(name: str, n: int) -> Algebra:
    """gl(n), sl(n) or so(n) (``name`` "gl", "sl" or "so") with the commutator as product."""
    if name not in ("gl", "sl", "so"):
        raise ValueError(f"name: expected 'gl', 'sl' or 'so', got {name!r:.40}")
    n = check_count(n, "n", minimum=2 if name == "so" else 1)
    if n > MAX_N:
        raise ValueError(f"n: at most algebra.lie_algebra.MAX_N = {MAX_N}, got {n}")
    labels, matrices = _basis(name, n)
    check_size(len(labels) ** 2, "n", f"brackets of basis elements of {name}({n})", "use a smaller n")
    return Algebra.from_function(
        len(labels), lambda i, j: {k: sympy.Integer(v) for k, v in
                                   _coordinates(name, n, _commutator(matrices[i], matrices[j])).items()},
        basis=labels, name=f"{name}({n})")


def cross_product() -> Algebra:
    """R^3 with the cross product: e1 x e2 = e3 and cyclically, a Lie algebra isomorphic to so(3)."""
    return Algebra.from_function(3, lambda i, j: {} if i == j else
                                 {3 - i - j: sympy.Integer(1 if (j - i) % 3 == 1 else -1)},
                                 basis=["e1", "e2", "e3"], name="cross_product")
