"""The scalars of an algebra: exact sympy numbers (the default), or floats decided within a tolerance.

Every `Algebra` holds one of these as ``A.scalars``.  It converts coefficients, tests them for zero and solves
the linear systems behind the queries (unit, inverse, centre, ideals, radical, Killing form, derivations), so that
each query is written once for both kinds of algebra:

* `EXACT`: sympy numbers.  Every answer is exact (`algebra.linear`).
* ``Floats(tol)``: Python floats, under one rule for every query of a numeric algebra: **each structure constant
  is known to within tol, and a quantity derived from the constants counts as zero when it is within the most
  that changing each constant by at most tol could move it** (plus float rounding).  So:

  - an element coefficient is zero when ``|value| <= tol`` (``x == 0``), and what equals 0 has no inverse;
  - a law (`numeric_laws`) holds when each coefficient of its defect is within its entrywise bound, computed on
    the constants divided by the largest of them (homogeneous laws: no overflow at 1e200);
  - a linear system (unit, inverse, centre, derivations, ideals) is divided by its largest coefficient, and a
    direction is null when its singular value is at most ``TERMS * tol * sqrt(nonzero coefficients)`` on that
    scale (each coefficient sums at most `TERMS` constants; Weyl: no singular value moves further), or within
    the rounding of the largest; a solution is accepted when its residual is within the same bound.

  An algebra within tol of an exact one (``A.exact() == H``) therefore answers every query as that one does.

>>> Floats(1e-9).is_zero(1e-12), EXACT.is_zero(sympy.Rational(1, 10**12))
(True, False)
>>> [{c: round(v, 6) for c, v in vector.items()} for vector in Floats(1e-9).nullspace([{0: 1.0, 1: -1.0}], 2)]
[{0: 0.707107, 1: 0.707107}]
>>> Floats(1e-9).convert("1/3", "c")
Traceback (most recent call last):
...
TypeError: c: expected a real number, got str '1/3'
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import sympy

from . import linear
from .exact import is_zero, to_exact
from .limits import check_size

#: A sparse linear equation ``{unknown: coefficient}``, and a sparse vector.
Row = Mapping[int, Any]

#: Entries of one block of equations held densely while a float system is reduced (32 MiB of floats).
BLOCK_ENTRIES = 2**22


@dataclass(frozen=True)
class Exact:
    """Exact sympy scalars (see the module docstring)."""

    tol: ClassVar[None] = None
    zero: ClassVar[sympy.Expr] = sympy.Integer(0)

    def convert(self, value: object, argument: str) -> sympy.Expr:
        """`value` as an exact sympy number or expression (`algebra.exact.to_exact`)."""
        return to_exact(value, argument)

    def is_zero(self, value: sympy.Expr) -> bool:
        """Exactly zero."""
        return is_zero(value)

    def nonzero(self, value: sympy.Expr) -> bool:
        """Not exactly zero (a structure constant is stored when it is nonzero)."""
        return not is_zero(value)

    def normal(self, value: sympy.Expr) -> sympy.Expr:
        """The coefficient of a product, expanded (powers and logarithms left as they are)."""
        return sympy.expand(value, power_exp=False, log=False)

    def matrix(self, nrows: int, ncols: int, entries: Mapping[tuple[int, int], sympy.Expr]) -> sympy.Matrix:
        """A sympy matrix with the given nonzero `entries`."""
        matrix = sympy.zeros(nrows, ncols)
        for (r, c), value in entries.items():
            matrix[r, c] = value
        return matrix

    def rank(self, matrix: sympy.Matrix) -> int:
        """The exact rank."""
        return int(matrix.rank())

    def nullspace(self, rows: Sequence[Row], ncols: int) -> list[dict[int, sympy.Expr]]:
        """A basis of the solutions of ``sum_c row[c] u_c = 0``, sparse (`algebra.linear.sparse_nullspace`)."""
        return linear.sparse_nullspace(_nonzero(rows), ncols)

    def row_space(self, rows: Sequence[Row], ncols: int) -> list[dict[int, sympy.Expr]]:
        """A basis of the span of `rows`, sparse (`algebra.linear.row_space`)."""
        return linear.row_space(_nonzero(rows), ncols)

    def solve(self, rows: Sequence[Row], rhs: Sequence[sympy.Expr], ncols: int) -> list[sympy.Expr] | None:
        """One solution of ``sum_c row[c] u_c = rhs[r]``, or None when there is none."""
        return linear.solve_affine(_nonzero(rows), list(rhs), ncols)

    def __repr__(self) -> str:
        return "exact"


def _nonzero(rows: Sequence[Row]) -> list[dict[int, sympy.Expr]]:
    return [{c: v for c, v in row.items() if v != 0} for row in rows]


#: The exact scalars, the default of every algebra.
EXACT = Exact()


@dataclass(frozen=True)
class Floats:
    """Float scalars decided within the absolute tolerance `tol` (see the module docstring)."""

    tol: float
    zero: ClassVar[float] = 0.0

    def convert(self, value: object, argument: str) -> float:
        """`value` (a real number: int, float, Fraction, numpy or sympy number) as a finite float."""
        symbolic = isinstance(value, sympy.Basic) and not (isinstance(value, sympy.Expr) and value.is_number)
        if isinstance(value, (bool, np.bool_)) or symbolic or \
                not isinstance(value, (numbers.Real, np.integer, np.floating, Fraction, sympy.Basic)):
            hint = "; a numeric algebra holds floats, symbols need an exact one" if symbolic else ""
            raise TypeError(f"{argument}: expected a real number, got {type(value).__name__} {value!r:.60}{hint}")
        try:
            result = float(value)
        except (OverflowError, TypeError):      # a huge int or Fraction; a complex sympy number
            result = np.nan
        if not np.isfinite(result):
            raise ValueError(f"{argument}: expected a finite real number, got {value!r:.60}")
        return result

    def is_zero(self, value: float) -> bool:
        """``|value| <= tol``."""
        return abs(float(value)) <= self.tol

    def nonzero(self, value: float) -> bool:
        """Not exactly 0.0 (a structure constant is stored as given when it is nonzero)."""
        return value != 0

    def normal(self, value: float) -> float:
        """The coefficient of a product, as a float."""
        return float(value)

    def matrix(self, nrows: int, ncols: int, entries: Mapping[tuple[int, int], float]) -> np.ndarray:
        """A float array with the given nonzero `entries`."""
        matrix = np.zeros((nrows, ncols))
        for (r, c), value in entries.items():
            matrix[r, c] = float(value)
        return matrix

    def rank(self, matrix: np.ndarray) -> int:
        """The number of singular values above `tol`."""
        return int(np.sum(np.linalg.svd(np.asarray(matrix, dtype=float), compute_uv=False) > self.tol))

    def _triangle(self, rows: Sequence[Row], ncols: int, columns: int | None = None) -> tuple[np.ndarray, float]:
        """``(R, cutoff)``: R with R^T R = M^T M for the matrix M of `rows` divided by its largest entry among the
        first `columns` (so the same singular values and vectors over that scale, and the same least-squares
        solutions), reduced block by block: it holds ncols^2 floats however many equations there are.  `cutoff`
        is the rule's singular value below which a direction counts as null, on that scale (`threshold`)."""
        check_size(ncols * ncols, "a numeric query", f"entries in the reduced matrix of a float system in {ncols} "
                   f"unknowns", "ask on a smaller algebra")
        columns = ncols if columns is None else columns
        scale = max((abs(float(v)) for row in rows for c, v in row.items() if c < columns), default=0.0) or 1.0
        count = sum(1 for row in rows for c in row if c < columns)
        triangle = np.zeros((0, ncols))
        block = max(1, BLOCK_ENTRIES // max(1, ncols))
        for start in range(0, len(rows), block):
            dense = np.zeros((min(block, len(rows) - start), ncols))
            for r, row in enumerate(rows[start:start + block]):
                for c, value in row.items():
                    dense[r, c] += float(value) / scale
            triangle = np.linalg.qr(np.vstack([triangle, dense]), mode="r")  # type: ignore[assignment]  # R alone
        return triangle, self.threshold(count, scale)

    def threshold(self, count: int, scale: float) -> float:
        """The singular value up to which a system of `count` nonzero coefficients, divided by `scale`, has a null
        direction within the rule: changing each constant by at most tol moves each coefficient (a sum of at most
        `TERMS` constants) by at most TERMS * tol, so the matrix by at most TERMS * tol * sqrt(count) in norm
        (Weyl: no singular value moves more)."""
        return TERMS * self.tol * float(np.sqrt(max(count, 1))) / scale

    def _decompose(self, rows: Sequence[Row], ncols: int) -> tuple[int, np.ndarray]:
        """``(rank, V)``: the right singular vectors of the system, rows of V, those of the row space first."""
        triangle, cutoff = self._triangle(rows, ncols)
        if not triangle.size:
            return 0, np.eye(ncols)
        _, singular, vectors = np.linalg.svd(triangle, full_matrices=True)
        return _rank(singular, cutoff, triangle.shape), vectors

    def nullspace(self, rows: Sequence[Row], ncols: int) -> list[dict[int, float]]:
        """An orthonormal basis of the solutions: the singular vectors of singular value within the rule."""
        rank, vectors = self._decompose(rows, ncols)
        return [_sparse(v) for v in vectors[rank:]]

    def row_space(self, rows: Sequence[Row], ncols: int) -> list[dict[int, float]]:
        """An orthonormal basis of the span of `rows`: the singular vectors of singular value beyond the rule."""
        rank, vectors = self._decompose(rows, ncols)
        return [_sparse(v) for v in vectors[:rank]]

    def solve(self, rows: Sequence[Row], rhs: Sequence[float], ncols: int) -> list[float] | None:
        """The least-squares solution of least norm over the directions the rule does not count as null, or None
        when its residual exceeds what the rule allows (the cutoff times the solution's norm, plus rounding):
        solved on the reduced triangle of the system with the right-hand side as one more column."""
        augmented = [{**row, ncols: b} for row, b in zip(rows, rhs)]
        triangle, cutoff = self._triangle(augmented, ncols + 1, columns=ncols)
        matrix, target = triangle[:, :ncols], triangle[:, ncols]
        if not ncols:
            return [] if not triangle.size or np.linalg.norm(target) <= cutoff else None
        u, singular, vt = np.linalg.svd(matrix, full_matrices=False)
        rank = _rank(singular, cutoff, matrix.shape)
        solution = vt[:rank].T @ ((u[:, :rank].T @ target) / singular[:rank])
        size = float(np.linalg.norm(solution))
        allowed = cutoff * size + ROUNDING * max(matrix.shape, default=1) * (
            (singular[0] if singular.size else 0.0) * size + float(np.linalg.norm(target)))
        if triangle.size and np.linalg.norm(matrix @ solution - target) > allowed:
            return None
        return [float(v) for v in solution]

    def __repr__(self) -> str:
        return f"floats(tol={self.tol:g})"


#: The most constants one coefficient of a query's linear system sums (the derivation equations: three).
TERMS = 3
#: Float rounding, per unknown, relative to the largest singular value.
ROUNDING = 4 * float(np.finfo(float).eps)


def _rank(singular: np.ndarray, cutoff: float, shape: tuple[int, ...]) -> int:
    """The singular values beyond the rule's cutoff and beyond the rounding of the largest."""
    if not singular.size:
        return 0
    return int(np.sum(singular > max(cutoff, ROUNDING * max(shape) * float(singular[0]))))


def common(scalars: Iterable[Exact | Floats]) -> Exact | Floats:
    """The scalars of an algebra built from parts with these: exact when every part is, else floats within the
    largest tolerance of the numeric parts.

    >>> common([EXACT, Floats(1e-9), Floats(1e-6)])
    floats(tol=1e-06)
    """
    tolerances = [s.tol for s in scalars if s.tol is not None]
    return Floats(max(tolerances)) if tolerances else EXACT


def _sparse(vector: np.ndarray) -> dict[int, float]:
    """The nonzero entries of a unit vector, its sign fixed so that its largest entry is positive."""
    vector = vector if vector[np.argmax(np.abs(vector))] > 0 else -vector
    return {int(c): float(v) for c, v in enumerate(vector) if v != 0}
