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

from ..algebra.algebra import check_flag
from .degrees import Degrees
from .expression import Expr, Signal


def order(expr: Expr, signal: Signal, per_step: bool = True) -> int:
    """The self-interaction order of `expr` in `signal` (0 if the signal does not occur).

    A `Scan` counts per step by default (the paper's convention: the order of what one step adds, with the state
    as order 0, so an SSM is 1 and Mamba 3).  ``per_step=False`` gives the total polynomial degree in the whole
    sequence instead, unrolling the recurrence: h_t = h_(t-1)^2 + x_t has order 1 per step and degree 4 after
    three steps (`polynomial_degree` of the formula agrees).  Products of nonlinearities count each factor, so
    exp(a) exp(b) is 2 here while `polynomial_degree`, which merges it into exp(a + b), counts 1 (Mamba at
    length 3: 7 here, 6 from its formula).
    """
    if not isinstance(expr, Expr):
        raise TypeError(f"expr: expected an expression, got {type(expr).__name__}")
    if not isinstance(signal, Signal):
        raise TypeError(f"signal: expected a Signal, got {type(signal).__name__}")
    profile = Degrees(check_flag(per_step, "per_step")).of(expr, (signal,))
    return max(vector[0] for vector in profile)


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
