"""Exact sparse linear algebra over sympy domains (rationals, algebraic fields, polynomial rings).

Equations are given as sparse rows ``{column: sympy value}``; the solvers return sympy values.

>>> import sympy
>>> solve_affine([{0: sympy.Integer(2)}, {1: sympy.Integer(1)}], [sympy.Integer(1), sympy.Integer(3)], 2)
[1/2, 3]
>>> nullspace([{0: sympy.Integer(1), 1: sympy.Integer(-1)}], 2)
[[1, 1]]
"""
from __future__ import annotations

import sympy
from sympy.polys.matrices import DomainMatrix

from .exact import exact_domain


def _domain_matrix(rows, ncols):
    values = [v for row in rows for v in row.values()]
    domain, converted = exact_domain(values)
    converted = iter(converted)
    sparse = {}
    for r, row in enumerate(rows):
        entries = {c: next(converted) for c in row}
        entries = {c: v for c, v in entries.items() if v}
        if entries:
            sparse[r] = entries
    return DomainMatrix(sparse, (len(rows), ncols), domain), domain


def solve_affine(rows, rhs, ncols):
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


def nullspace(rows, ncols):
    """An exact basis (list of coefficient lists) of ``{u : sum_c row[c] u_c = 0 for every row}``."""
    if not any(rows):
        return [[sympy.Integer(int(i == j)) for j in range(ncols)] for i in range(ncols)]
    matrix, _ = _domain_matrix(rows, ncols)
    basis = matrix.to_field().nullspace()
    field = basis.domain
    return [[field.to_sympy(v) for v in vector] for vector in basis.to_list()]
