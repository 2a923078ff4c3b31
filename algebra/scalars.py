"""The scalars of an algebra: exact sympy numbers (the default), or floats decided within a tolerance.

Every `Algebra` holds one of these as ``A.scalars``.  It converts coefficients, tests them for zero and solves
the linear systems behind the queries (unit, inverse, centre, ideals, radical, Killing form, derivations), so that
each query is written once for both kinds of algebra:

* `EXACT`: sympy numbers.  Every answer is exact (`algebra.linear`).
* ``Floats(tol)``: Python floats.  A value is zero when ``|value| <= tol``, and the rank of a linear system counts
  its singular values above ``tol``.  The tolerance is absolute: for constants far from order 1, scale it with
  them.

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

    def _triangle(self, rows: Sequence[Row], ncols: int) -> np.ndarray:
        """R with R^T R = M^T M for the matrix M of `rows` (so the same singular values and vectors, and the same
        least-squares solutions), reduced block by block: it holds ncols^2 floats however many equations there
        are."""
        check_size(ncols * ncols, "a numeric query", f"entries in the reduced matrix of a float system in {ncols} "
                   f"unknowns", "ask on a smaller algebra")
        triangle = np.zeros((0, ncols))
        block = max(1, BLOCK_ENTRIES // max(1, ncols))
        for start in range(0, len(rows), block):
            dense = np.zeros((min(block, len(rows) - start), ncols))
            for r, row in enumerate(rows[start:start + block]):
                for c, value in row.items():
                    dense[r, c] += float(value)
            triangle = np.linalg.qr(np.vstack([triangle, dense]), mode="r")  # type: ignore[assignment]  # R alone
        return triangle

    def _decompose(self, rows: Sequence[Row], ncols: int) -> tuple[int, np.ndarray]:
        """``(rank, V)``: the right singular vectors of the system, rows of V, those of the row space first."""
        triangle = self._triangle(rows, ncols)
        if not triangle.size:
            return 0, np.eye(ncols)
        _, singular, vectors = np.linalg.svd(triangle, full_matrices=True)
        return int(np.sum(singular > self.tol)), vectors

    def nullspace(self, rows: Sequence[Row], ncols: int) -> list[dict[int, float]]:
        """An orthonormal basis of the solutions: the singular vectors of singular value at most `tol`."""
        rank, vectors = self._decompose(rows, ncols)
        return [_sparse(v) for v in vectors[rank:]]

    def row_space(self, rows: Sequence[Row], ncols: int) -> list[dict[int, float]]:
        """An orthonormal basis of the span of `rows`: the singular vectors of singular value above `tol`."""
        rank, vectors = self._decompose(rows, ncols)
        return [_sparse(v) for v in vectors[:rank]]

    def solve(self, rows: Sequence[Row], rhs: Sequence[float], ncols: int) -> list[float] | None:
        """The least-squares solution of least norm, or None when its residual (2-norm) exceeds `tol`: solved on
        the reduced triangle of the system with the right-hand side as one more column."""
        augmented = [{**row, ncols: b} for row, b in zip(rows, rhs)]
        triangle = self._triangle(augmented, ncols + 1)
        matrix, target = triangle[:, :ncols], triangle[:, ncols]
        solution = np.linalg.lstsq(matrix, target, rcond=None)[0] if ncols else np.zeros(0)
        if triangle.size and np.linalg.norm(matrix @ solution - target) > self.tol:
            return None
        return [float(u) for u in solution]

    def __repr__(self) -> str:
        return f"floats(tol={self.tol:g})"


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
