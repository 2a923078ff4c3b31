"""Exact coefficients: turning user input into sympy numbers, and exact arithmetic domains.

Every structure constant and element coefficient in `algebra` is a real sympy expression: an integer, a
rational, an algebraic number such as ``sqrt(3)/2``, or an expression in sympy symbols.  Python floats are
accepted only when they are exactly a rational with a small denominator (``0.5``, ``-2.0``), so a rounded
decimal never slips in.  Strings are never parsed here: text is read only by `algebra.serialization`, through a
whitelist parser.

>>> to_exact(0.25, "c")
1/4
>>> to_exact(0.1, "c")
Traceback (most recent call last):
...
TypeError: c: expected an exact number (int, fractions.Fraction, sympy expression) or a float with a small binary denominator, got float 0.1
"""
from __future__ import annotations

import numbers
from collections.abc import Collection, Iterable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import sympy
from numpy.typing import DTypeLike
from sympy.polys.constructor import construct_domain

if TYPE_CHECKING:
    from sympy.polys.domains import Domain

#: What `to_exact` takes as an exact number: ints, fractions, floats with a small binary denominator, and real
#: sympy expressions (checked when converted).
ExactLike: TypeAlias = "int | Fraction | float | np.integer | np.floating | sympy.Expr"
#: A nonzero structure constant ``(i, j, k, c)``: c is the coefficient of e_k in e_i e_j.
Entry: TypeAlias = "tuple[int, int, int, sympy.Expr]"

#: Largest denominator a float may have to be taken as exact (0.5, 0.125, ... but not 0.1).
FLOAT_DENOMINATOR_LIMIT = 2**16


def to_exact(value: object, argument: str) -> sympy.Expr:
    """Return `value` as a real sympy expression, or raise naming `argument`."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{argument}: expected an exact number, got bool {value!r}")
    if isinstance(value, (numbers.Integral, np.integer)):
        return sympy.Integer(int(value))
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    if isinstance(value, (float, np.floating)):
        exact = Fraction(float(value)) if np.isfinite(value) else None
        if exact is None or exact.denominator > FLOAT_DENOMINATOR_LIMIT:
            raise TypeError(
                f"{argument}: expected an exact number (int, fractions.Fraction, sympy expression) or a float "
                f"with a small binary denominator, got float {value!r}")
        return sympy.Rational(exact.numerator, exact.denominator)
    if isinstance(value, sympy.Basic):
        if not isinstance(value, sympy.Expr):
            raise TypeError(f"{argument}: expected a sympy expression, got {type(value).__name__} {value!r}")
        if value.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan):
            raise ValueError(f"{argument}: expected a finite coefficient, got {value}")
        if value.is_real is False or value.has(sympy.I):
            raise ValueError(f"{argument}: expected a real coefficient, got {value}")
        if value.atoms(sympy.Float):
            raise TypeError(f"{argument}: expected an exact expression, got one containing a float: {value}")
        return value
    raise TypeError(
        f"{argument}: expected an exact number (int, fractions.Fraction, sympy expression), "
        f"got {type(value).__name__} {value!r}")


#: The sympy assumptions `Algebra.symbols` passes on (all of sympy's but ``commutative``: coefficients commute).
ASSUMPTIONS = frozenset({
    "algebraic", "antihermitian", "complex", "composite", "even", "extended_negative", "extended_nonnegative",
    "extended_nonpositive", "extended_nonzero", "extended_positive", "extended_real", "finite", "hermitian",
    "imaginary", "infinite", "integer", "irrational", "negative", "noninteger", "nonnegative", "nonpositive",
    "nonzero", "odd", "positive", "prime", "rational", "real", "transcendental", "zero"})


def check_assumptions(assumptions: Mapping[str, object]) -> dict[str, bool]:
    """`assumptions` for ``sympy.Symbol``: names from `ASSUMPTIONS`, each True or False (sympy would take
    ``real='maybe'`` as True and store an unknown name without a word).

    >>> check_assumptions({"positive": True})
    {'positive': True}
    >>> check_assumptions({"real": "maybe"})
    Traceback (most recent call last):
    ...
    TypeError: real: expected True or False, got str 'maybe'
    """
    for name, value in assumptions.items():
        if name not in ASSUMPTIONS:
            raise ValueError(f"{name}: expected a sympy assumption ({', '.join(sorted(ASSUMPTIONS))}), got the "
                             f"unknown name {name!r}")
        if not isinstance(value, bool):
            raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}"[:200])
    return dict(assumptions)  # type: ignore[arg-type]  # every value is a bool, checked above


def check_dtype(dtype: DTypeLike, allow_object: bool = False) -> np.dtype:
    """`dtype` as a float or complex numpy dtype (or object when allowed), else TypeError naming `dtype`.

    Integer, bool and string dtypes would truncate or mangle the coefficients, so they are refused.
    """
    try:
        result = np.dtype(dtype)
    except (TypeError, ValueError):            # ValueError: a string numpy cannot parse, e.g. "1/0"
        result = None
    if result is None or not (result.kind in "fc" or allow_object and result == object):
        kinds = "a float or complex dtype" + (" or object" if allow_object else "")
        raise TypeError(f"dtype: expected {kinds}, got {dtype!r}")
    return result


def object_array(value: object, argument: str, expected: str) -> np.ndarray:
    """`value` as a numpy object array (exact entries kept), or an error naming `argument` and `expected`."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{argument}: expected {expected}, got str")
    if isinstance(value, sympy.MatrixBase):
        value = value.tolist()
    try:
        return np.array(value, dtype=object)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{argument}: expected {expected}, got a ragged or invalid input ({error})") from None


def is_zero(value: sympy.Expr) -> bool:
    """Exact zero test for the coefficients used here (numbers, algebraic numbers, polynomials).

    Cheap answers first: numbers, sympy's own assumptions, a 30-digit evaluation that is clearly nonzero; only a
    number that evaluates to (nearly) zero is proved zero by ``equals``.
    """
    if value.is_Number:
        return value == 0
    known = value.is_zero
    if known is not None:
        return bool(known)
    expanded = sympy.expand(value)
    if expanded == 0:
        return True
    if not expanded.is_number:
        return False
    if abs(expanded.evalf(30)) > 1e-20:
        return False
    return bool(expanded.equals(0))


def exact_domain(values: Iterable[sympy.Expr]) -> tuple[Domain, list[Any]]:
    """The smallest sympy domain holding all `values` (QQ, an algebraic field QQ<...>, or a polynomial ring).

    Returns ``(domain, converted)``.  Arithmetic in the domain is exact and canonical, so equality of domain
    elements is equality of numbers.
    """
    values = list(values)
    if not values:
        return sympy.QQ, []
    return construct_domain(values, extension=True)


def common_integer_scaling(values: Collection[sympy.Expr]) -> tuple[list[int], int] | None:
    """If all `values` are rational, return ``(integers, denominator)`` with value = integer / denominator.

    Returns None when some value is irrational or symbolic.
    """
    if not all(isinstance(v, sympy.Rational) for v in values):
        return None
    denominator = 1
    for q in {v.q for v in values}:
        denominator = sympy.ilcm(denominator, q)
    return [int(v * denominator) for v in values], int(denominator)
