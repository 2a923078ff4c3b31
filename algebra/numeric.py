"""Converting an algebra between exact and float scalars: `Algebra.numeric` and `Algebra.exact`.

* ``numeric_algebra(A, tol)``: the same basis and name, each structure constant a float, the queries decided
  within `tol` (`algebra.scalars.Floats`).  A tensor product or a direct sum keeps its parts as they are and
  converts their products, so a tensor product keeps its axes and a structured factor its rule.
* ``exact_algebra(A, tol, max_denominator)``: each float as the nearest rational whose denominator is at most
  `max_denominator`, when it lies within `tol`, else as plus or minus the square root of one (the Clebsch-Gordan
  constants are).  A constant that is neither, as a learned one usually is, is refused by name.

>>> from product_interactions.algebra import clebsch_gordan
>>> CG = clebsch_gordan(1)
>>> CG.numeric().exact() == CG
True
>>> snap(0.8660254037844386, 1e-12, 100), snap(0.1234567, 1e-9, 100)
(sqrt(3)/2, None)
"""
from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import sympy

from .algebra import Algebra, Table, check_count, check_tolerance
from ._direct_sum import DirectSum
from .scalars import EXACT, Exact, Floats
from .structured import StructuredAlgebra
from ._tensor_product import TensorProduct


def _rebuild(A: Algebra, convert: Callable[[Algebra], Algebra], scalars: Exact | Floats) -> Algebra | None:
    """A tensor product or direct sum rebuilt from its parts, each converted, with `scalars`; None for any other
    algebra."""
    if isinstance(A, TensorProduct):
        return TensorProduct([convert(f) for f in A.factors], A.name, scalars)
    if isinstance(A, DirectSum):
        return DirectSum([convert(s) for s in A.summands], A.name, scalars)
    return None


def numeric_algebra(A: Algebra, tol: float) -> Algebra:
    """A with float structure constants and the tolerance `tol` (see the module docstring)."""
    scalars = Floats(check_tolerance(tol, "tol"))
    if A.scalars == scalars:
        return A
    rebuilt = _rebuild(A, lambda part: part, scalars)
    if rebuilt is not None:                              # its stored parts' constants must be numbers too
        parts = A.factors if isinstance(A, TensorProduct) else A.summands if isinstance(A, DirectSum) else ()
        for part in parts:
            if not isinstance(part, StructuredAlgebra):  # structured builders' constants are numbers
                for i, j, k, c in part.entries():
                    _number(part, i, j, k, c)
        return rebuilt
    table: Table = {}
    for i, j, k, c in A.entries():
        value = scalars.convert(_number(A, i, j, k, c), f"numeric: lam[{i}, {j}, {k}] of {A.name}")
        if value != 0:                                   # below the smallest float: gone, as in float arithmetic
            table.setdefault((i, j), {})[k] = value
    return Algebra(table, A.basis, A.name, scalars)


def _number(A: Algebra, i: int, j: int, k: int, c: sympy.Expr) -> sympy.Expr:
    """The constant c of A, or a ValueError when it has symbols (they have no float value)."""
    if isinstance(c, sympy.Expr) and c.free_symbols:
        raise ValueError(f"numeric: the structure constant lam[{i}, {j}, {k}] = {c} of {A.name} is symbolic; "
                         f"substitute values for {', '.join(sorted(map(str, c.free_symbols)))} first")
    return c


def snap(value: float, tol: float, max_denominator: int) -> sympy.Expr | None:
    """The nearest rational p/q with q <= max_denominator, when it lies within `tol` of `value`; else such a
    +-sqrt(p/q) within `tol`; else None."""
    rational = Fraction(value).limit_denominator(max_denominator)
    if abs(float(rational) - value) <= tol:
        return sympy.Rational(rational.numerator, rational.denominator)
    square = Fraction(value * value).limit_denominator(max_denominator)
    root = sympy.sqrt(sympy.Rational(square.numerator, square.denominator)) * (1 if value > 0 else -1)
    return root if abs(float(root) - value) <= tol else None


def exact_algebra(A: Algebra, tol: float | None, max_denominator: int) -> Algebra:
    """A with exact structure constants, each recognised within `tol` (see the module docstring)."""
    tolerance = A.scalars.tol if tol is None else check_tolerance(tol, "tol")
    max_denominator = check_count(max_denominator, "max_denominator")
    if isinstance(A.scalars, Exact):
        return A
    assert tolerance is not None                         # a numeric algebra has its tolerance
    rebuilt = _rebuild(A, lambda part: exact_algebra(part, tolerance, max_denominator), EXACT)
    if rebuilt is not None:
        return rebuilt
    table: Table = {}
    for i, j, k, c in A.entries():
        value = snap(float(c), tolerance, max_denominator)
        if value is None:
            raise ValueError(f"exact: the structure constant lam[{i}, {j}, {k}] = {float(c)!r} of {A.name} is "
                             f"within tol = {tolerance:g} of no rational with a denominator up to max_denominator = "
                             f"{max_denominator} nor of the square root of one; round the constants and build the "
                             f"exact algebra from them")
        if value != 0:
            table.setdefault((i, j), {})[k] = value
    return Algebra(table, A.basis, A.name, EXACT)
