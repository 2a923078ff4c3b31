"""The self-interaction order: the polynomial degree of an expression in one of its signals.

Read off the expression (products add orders; structural and linear maps keep them; inside a nonlinearity an
argument of order n counts n) and cross-checked against the symbolic formula by `polynomial_degree`.

>>> from product_interactions.algebra import position
>>> from product_interactions.interactions import Signal, Parameter, Pointwise
>>> X, K = Signal("x", position(3)), Parameter("k", position(3))
>>> order(K * X, X), order(X * X, X), order(Pointwise("exp", X * X) * X, X)
(1, 2, 3)
"""
from __future__ import annotations

from collections.abc import Iterable

import sympy

from .expression import Expr, Signal


def order(expr: Expr, signal: Signal) -> int:
    """The self-interaction order of `expr` in `signal` (0 if the signal does not occur)."""
    if not isinstance(expr, Expr):
        raise TypeError(f"expr: expected an expression, got {type(expr).__name__}")
    if not isinstance(signal, Signal):
        raise TypeError(f"signal: expected a Signal, got {type(signal).__name__}")
    return expr._order(signal)


def polynomial_degree(value: sympy.Expr, symbols: Iterable[sympy.Symbol]) -> int:
    """Degree of a formula in `symbols`, counting a function of an argument of degree n as n and ignoring
    denominators (the softmax normaliser); the reference for `order` in the tests.

    >>> x, y = sympy.symbols("x y")
    >>> polynomial_degree(x * sympy.exp(x * y) / (1 + sympy.exp(x)), {x})
    2
    """
    return _degree(sympy.powsimp(value), set(symbols))      # exp(a) exp(-a) cancels before counting


def _degree(value: sympy.Expr, symbols: set[sympy.Symbol]) -> int:
    if value.is_Symbol:
        return int(value in symbols)
    if value.is_Number or not value.free_symbols & symbols:
        return 0
    if value.is_Add:
        return max(_degree(term, symbols) for term in value.args)
    if value.is_Mul:
        return sum(_degree(factor, symbols) for factor in value.args)
    if value.is_Pow:
        base, exponent = value.args
        if exponent.is_Integer and exponent > 0:
            return int(exponent) * _degree(base, symbols)
        return 0 if exponent.is_negative else _degree(base, symbols)
    return max(_degree(argument, symbols) for argument in value.args)
