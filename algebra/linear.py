"""Exact sparse linear algebra over sympy domains (rationals, algebraic fields, polynomial rings).

Equations are given as sparse rows ``{column: sympy value}``; the solvers return sympy values.

>>> import sympy
>>> solve_affine([{0: sympy.Integer(2)}, {1: sympy.Integer(1)}], [sympy.Integer(1), sympy.Integer(3)], 2)
[1/2, 3]
>>> nullspace([{0: sympy.Integer(1), 1: sympy.Integer(-1)}], 2)
[[1, 1]]
>>> sparse_nullspace([{0: sympy.Integer(2), 2: sympy.Integer(1)}], 3)
[{1: 1}, {0: -1/2, 2: 1}]
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy
from sympy.polys.matrices import DomainMatrix

from .blocks import blocks
from .exact import exact_domain

if TYPE_CHECKING:
    from sympy.polys.domains import Domain


def _domain_matrix(rows: Sequence[Mapping[int, sympy.Expr]], ncols: int) -> tuple[DomainMatrix, Domain]:
    values = [v for row in rows for v in row.values()]
    converted: Iterable[Any]
    domain, converted = exact_domain(values)
    converted = iter(converted)
    sparse = {}
    for r, row in enumerate(rows):
        entries = {c: next(converted) for c in row}
        entries = {c: v for c, v in entries.items() if v}
        if entries:
            sparse[r] = entries
    return DomainMatrix(sparse, (len(rows), ncols), domain), domain


def solve_affine(rows: Sequence[Mapping[int, sympy.Expr]], rhs: Sequence[sympy.Expr],
                 ncols: int) -> list[sympy.Expr] | None:
    """One exact solution of ``sum_c row[c] u_c = rhs[r]`` (free unknowns set to 0), or None if inconsistent."""
    augmented = [{**row, ncols: value} if value != 0 else row for row, value in zip(rows, rhs)]
    matrix, domain = _domain_matrix(augmented, ncols + 1)
    reduced, pivots = matrix.to_field().rref()
    if ncols in pivots:
        return None
    field = reduced.domain
    solution = [field.zero] * ncols
    sdm = reduced.rep.to_sdm()
    for r, c in enumerate(pivots):
        row = sdm.get(r, {})
        solution[c] = row.get(ncols, field.zero) / row[c]
    return [field.to_sympy(v) for v in solution]


def sparse_nullspace(rows: Sequence[Mapping[int, sympy.Expr]], ncols: int,
                     solved: Callable[[int], object] | None = None) -> list[dict[int, sympy.Expr]]:
    """The reduced exact basis of ``{u : sum_c row[c] u_c = 0 for every row}``, as sparse ``{unknown: value}``.

    Each vector is 1 at its own free unknown, its last nonzero, and 0 at the others' (one elimination's reduced
    basis); vectors are ordered by free unknown.  Unknowns that share no equation are eliminated apart
    (`algebra.blocks`), all in the one exact domain of every coefficient; ``solved(n)``, when given, is called
    after each block with its number of unknowns (for a progress bar)."""
    import scipy.sparse

    matrix, _ = _domain_matrix(rows, ncols)
    matrix = matrix.to_field()
    field, entries = matrix.domain, matrix.rep.to_sdm()
    coordinates = [(r, c) for r, row in entries.items() for c in row]
    r, c = np.array(coordinates, dtype=np.int64).reshape(-1, 2).T
    pattern = scipy.sparse.coo_array((np.ones(len(r)), (r, c)), shape=(len(rows), ncols))
    vectors = []
    for block in blocks(pattern):
        unknowns = [int(u) for u in block.unknowns]
        local = {u: n for n, u in enumerate(unknowns)}
        system = DomainMatrix({n: {local[c]: v for c, v in entries[int(r)].items()}
                               for n, r in enumerate(block.equations)}, (len(block.equations), len(unknowns)), field)
        for vector in system.nullspace().rep.to_sdm().values():
            last = vector[max(vector)]
            vectors.append({unknowns[n]: field.to_sympy(v / last) for n, v in sorted(vector.items())})
        if solved is not None:
            solved(len(unknowns))
    return sorted(vectors, key=max)


def nullspace(rows: Sequence[Mapping[int, sympy.Expr]], ncols: int) -> list[list[sympy.Expr]]:
    """`sparse_nullspace` as dense coefficient lists."""
    zero = sympy.Integer(0)
    return [[vector.get(c, zero) for c in range(ncols)] for vector in sparse_nullspace(rows, ncols)]


def row_space(rows: Sequence[Mapping[int, sympy.Expr]], ncols: int) -> list[dict[int, sympy.Expr]]:
    """The reduced row echelon basis of the span of `rows` (each 1 at its pivot, 0 at the other pivots), as sparse
    ``{column: value}``; no rows for the zero span.

    >>> row_space([{0: sympy.Integer(2), 1: sympy.Integer(2)}, {0: sympy.Integer(1), 1: sympy.Integer(1)}], 2)
    [{0: 1, 1: 1}]
    """
    if not any(rows):
        return []
    matrix, _ = _domain_matrix(rows, ncols)
    reduced, pivots = matrix.to_field().rref()
    field, entries = reduced.domain, reduced.rep.to_sdm()
    return [{c: field.to_sympy(v) for c, v in sorted(entries[r].items())} for r in range(len(pivots))]
