"""The structure of an algebra: derived algebra, ideals, radical, Killing form, semisimplicity and derivations.
Each returns a basis (a list of `Element`, or of matrices for derivations) computed by linear algebra on the
structure constants in the algebra's scalars (`algebra.scalars`): exact, with sympy matrices, for an exact
algebra; within the tolerance, with float arrays and orthonormal bases, for a numeric one.  `Algebra` offers each
as a method.

* ``derived_algebra(A)``: the span of all products A A.
* ``ideal(A, generators)``: the smallest two-sided ideal containing the generators.
* ``radical(A)`` (associative A): the largest nilpotent ideal, by Dickson's trace criterion in characteristic 0,
  rad A = {x : tr L_x = 0 and tr L_(x y) = 0 for all y} (L the left regular representation; the first condition
  makes it hold without a unit too).
* ``killing_form(A)`` (Lie A): K(x, y) = tr(ad_x ad_y).
* ``is_semisimple(A)``: no radical (associative), or a nondegenerate Killing form (Lie, Cartan's criterion).
* ``derivations(A)``: Der(A) = {D : D(x y) = D(x) y + x D(y)}, the Lie algebra of the infinitesimal symmetries of
  the product: a one-parameter group exp(t M) acts by automorphisms exactly when M is a derivation.

>>> from product_interactions.algebra import matrix_algebra, quaternions
>>> len(derivations(quaternions()))                   # so(3): the rotations of the imaginary quaternions
3
>>> len(derivations(matrix_algebra(2)))               # the inner derivations [a, -], a traceless
3
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import sympy

from .element import Element
from .limits import check_size

if TYPE_CHECKING:
    from .algebra import Algebra


def _basis(A: Algebra, rows: Sequence[Mapping[int, sympy.Expr]]) -> list[Element]:
    return [A.element([row.get(c, 0) for c in range(A.dim)]) for row in rows]


def _products(A: Algebra) -> dict[tuple[int, int], dict[int, sympy.Expr]]:
    """{(i, j): {k: c}} with e_i e_j = sum_k c e_k (nonzero products only)."""
    table: defaultdict[tuple[int, int], dict[int, sympy.Expr]] = defaultdict(dict)
    for i, j, k, c in A.entries():
        table[i, j][k] = c
    return table


def derived_algebra(A: Algebra) -> list[Element]:
    """A basis of A A = span{x y}: all of A for a unital algebra, [g, g] for a Lie algebra g."""
    return _basis(A, A.scalars.row_space(list(_products(A).values()), A.dim))


def ideal(A: Algebra, generators: Sequence[Element]) -> list[Element]:
    """A basis of the smallest two-sided ideal of A containing `generators` (elements of A): their span, closed
    under multiplication by every basis element on either side."""
    if isinstance(generators, Element) or not isinstance(generators, Sequence):
        raise TypeError(f"generators: expected a list of elements of {A.name}, got {type(generators).__name__}")
    for n, g in enumerate(generators):
        if not isinstance(g, Element) or g.algebra != A:
            raise TypeError(f"generators[{n}]: expected an element of {A.describe()}, got "
                            f"{g.algebra.describe() if isinstance(g, Element) else type(g).__name__}")
    check_size(2 * A.dim**3, "ideal", f"products of basis elements to close an ideal of {A.name} (at most)",
               "ask on a smaller algebra")
    basis = A.scalars.row_space([_sparse(g) for g in generators], A.dim)
    table = _products(A)
    while True:
        grown = basis + [_sparse_product(table, side, i, v) for v in basis for i in range(A.dim) for side in (0, 1)]
        larger = A.scalars.row_space(grown, A.dim)
        if len(larger) == len(basis):
            return _basis(A, basis)
        basis = larger


def _sparse(x: Element) -> dict[int, sympy.Expr]:
    return {c: v for c, v in enumerate(x.flat) if v != 0}


def _sparse_product(table: dict[tuple[int, int], dict[int, sympy.Expr]], side: int, i: int,
                    v: dict[int, sympy.Expr]) -> dict[int, sympy.Expr]:
    """e_i v (side 0) or v e_i (side 1) for a sparse vector v."""
    result: defaultdict[int, sympy.Expr] = defaultdict(lambda: sympy.Integer(0))
    for j, a in v.items():
        for k, c in table.get((i, j) if side == 0 else (j, i), {}).items():
            result[k] += a * c
    return {k: c for k, c in result.items() if c != 0}


def _is(A: Algebra, query: str, kind: str) -> bool:
    """Whether A is associative or Lie (`kind`), for `query`: a check too large to start names the query too."""
    try:
        return A.is_associative() if kind == "associative" else A.is_lie()
    except ValueError as error:
        raise ValueError(f"{query}: needs to know whether {A.name} is {kind}, and {error}") from None


def _require(A: Algebra, query: str, kind: str) -> None:
    if not _is(A, query, kind):
        raise ValueError(f"{query}: applies to {kind} algebras; {A.name} is not {kind}")


def _left_traces(A: Algebra) -> dict[int, sympy.Expr]:
    """{k: tr L_(e_k)}, nonzero only: tr L_(e_k) = sum_i lam[k, i, i]."""
    traces: defaultdict[int, sympy.Expr] = defaultdict(lambda: sympy.Integer(0))
    for k, i, m, c in A.entries():
        if i == m:
            traces[k] += c
    return {k: t for k, t in traces.items() if t != 0}


def radical(A: Algebra) -> list[Element]:
    """A basis of the radical of an associative algebra: the largest nilpotent ideal (strictly upper triangular
    matrices in the upper triangular ones; zero for a semisimple algebra)."""
    _require(A, "radical", "associative")
    traces = _left_traces(A)
    equations: defaultdict[int, dict[int, sympy.Expr]] = defaultdict(dict)   # sum_a x_a tr L_(e_a e_b) = 0
    for a, b, k, c in A.entries():
        if k in traces:
            equations[b][a] = equations[b].get(a, 0) + c * traces[k]
    rows = list(equations.values()) + [traces]                                  # and tr L_x = 0
    return _basis(A, A.scalars.nullspace(rows, A.dim))


def killing_form(A: Algebra) -> sympy.Matrix | np.ndarray:
    """The Killing form of a Lie algebra, K[a, b] = tr(ad_(e_a) ad_(e_b)), as a symmetric matrix (sympy, or
    floats for a numeric algebra)."""
    _require(A, "killing_form", "Lie")
    check_size(A.dim**2, "killing_form", f"entries in the Killing form of {A.name}", "ask on a smaller algebra")
    by_first: defaultdict[int, list[tuple[int, int, sympy.Expr]]] = defaultdict(list)    # a -> (i, k, lam[a,i,k])
    for a, i, k, c in A.entries():
        by_first[a].append((i, k, c))
    form = {}
    for a, row in by_first.items():
        ad_a = {(k, i): c for i, k, c in row}                                    # (ad_a)[k, i]
        for b, other in by_first.items():
            form[a, b] = sum((c * ad_a.get((i, k), 0) for i, k, c in other), A.scalars.zero)   # ad_b[k, i] = c
    return A.scalars.matrix(A.dim, A.dim, form)


def is_semisimple(A: Algebra) -> bool:
    """Associative: the radical is zero.  Lie: the Killing form is nondegenerate (Cartan's criterion).  Other
    algebras: a ValueError (semisimplicity is asked of one of the two)."""
    if _is(A, "is_semisimple", "associative"):
        return not radical(A)
    if A.is_lie():
        return A.dim > 0 and A.scalars.rank(killing_form(A)) == A.dim
    raise ValueError(f"is_semisimple: applies to associative or Lie algebras; {A.name} is neither")


def _leibniz_terms(A: Algebra, support: Iterable[tuple[int, int]]
                   ) -> Iterator[tuple[tuple[int, int, int], tuple[int, int], sympy.Expr]]:
    """The terms of J(e_a e_b) - J(e_a) e_b - e_a J(e_b) for a linear map J with nonzero entries only at `support`
    (J e_j = sum_i J[i, j] e_i): ((a, b, k), (i, j), c), meaning c J[i, j] in the e_k coefficient of entry (a, b).
    The defect of a given J and the linear equations of Der(A) both read them."""
    by_row: defaultdict[int, list[int]] = defaultdict(list)         # i -> [j with (i, j) in support]
    by_column: defaultdict[int, list[int]] = defaultdict(list)      # j -> [i with (i, j) in support]
    for i, j in support:
        by_row[i].append(j)
        by_column[j].append(i)
    for a, b, c, value in A.entries():
        for i in by_column[c]:
            yield (a, b, i), (i, c), value                  # J(e_a e_b): lam[a, b, c] J[i, c] e_i
        for k in by_row[a]:
            yield (k, b, c), (a, k), -value                 # J(e_k) e_b holds J[a, k] e_a e_b
        for k in by_row[b]:
            yield (a, k, c), (b, k), -value                 # e_a J(e_k) holds J[b, k] e_a e_b


def leibniz_defect(A: Algebra, matrix: Mapping[tuple[int, int], sympy.Expr]) -> dict[tuple[int, int, int], sympy.Expr]:
    """The nonzero entries of J(e_a e_b) - J(e_a) e_b - e_a J(e_b), keyed (a, b, k), for the linear map J given by
    its nonzero entries ``{(i, j): value}`` (J e_j = sum_i J[i, j] e_i): empty exactly when J is a derivation."""
    defect: defaultdict[tuple[int, int, int], sympy.Expr] = defaultdict(lambda: A.scalars.zero)
    for key, entry, c in _leibniz_terms(A, matrix):
        defect[key] += c * matrix[entry]
    return {key: v for key, v in defect.items() if not A.scalars.is_zero(v)}


def derivations(A: Algebra) -> list[sympy.Matrix] | list[np.ndarray]:
    """A basis of Der(A) as (dim, dim) matrices D (D e_j = sum_i D[i, j] e_i) with
    D(e_a e_b) = D(e_a) e_b + e_a D(e_b): one sparse linear system in the dim^2 entries of D (exact, or within
    the tolerance of a numeric algebra)."""
    dim = A.dim
    check_size(3 * A.nnz * dim + dim**2, "derivations",
               f"coefficients in the derivation equations of {A.name}", "ask on a smaller algebra")
    equations: defaultdict[tuple[int, int, int], dict[int, sympy.Expr]] = defaultdict(dict)
    for key, (i, j), c in _leibniz_terms(A, [(i, j) for i in range(dim) for j in range(dim)]):
        row = equations[key]
        row[i * dim + j] = row.get(i * dim + j, 0) + c
    return [A.scalars.matrix(dim, dim, {divmod(u, dim): v for u, v in vector.items()})
            for vector in A.scalars.nullspace(list(equations.values()), dim * dim)]
