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
from .expression import Add, Expr, Signal
from .scan import Scan


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
    if check_flag(per_step, "per_step"):
        return expr._order(signal)
    return max(vector[0] for vector in _profile(expr, (signal,), {}))


#: A set of exponent vectors, one entry per signal: the maximal degrees of an expression's monomials.
Profile = frozenset[tuple[int, ...]]


def _pareto(vectors: Iterable[tuple[int, ...]]) -> Profile:
    """The vectors no other vector dominates (componentwise >=): enough for every maximum taken later."""
    found = set(vectors)
    return frozenset(v for v in found if not any(w != v and all(a >= b for a, b in zip(w, v)) for w in found))


def _sum(first: Profile, second: Profile) -> Profile:
    return _pareto(tuple(a + b for a, b in zip(v, w)) for v in first for w in second)


def _power(profile: Profile, k: int, width: int) -> Profile:
    result: Profile = frozenset({(0,) * width})
    for _ in range(k):
        result = _sum(result, profile)
    return result


def _profile(node: Expr, signals: tuple[Signal, ...], memo: dict[tuple[int, tuple[int, ...]], Profile]) -> Profile:
    """The degrees of `node` in `signals` jointly: sums take either side, products and every other node add their
    children's (a nonlinearity of an argument of degree n counts n, as in `order`), a scan unrolls its steps."""
    key = (id(node), tuple(map(id, signals)))
    if key in memo:
        return memo[key]
    width = len(signals)
    if isinstance(node, Signal):
        result = frozenset({tuple(int(node is s) for s in signals)})
    elif isinstance(node, Scan):
        result = _scan_profile(node, signals, memo)
    elif isinstance(node, Add):
        result = _pareto(v for child in node.children for v in _profile(child, signals, memo))
    else:
        result = frozenset({(0,) * width})
        for child in node.children:
            result = _sum(result, _profile(child, signals, memo))
    memo[key] = result
    return result


def _scan_profile(node: Scan, signals: tuple[Signal, ...], memo: dict[tuple[int, tuple[int, ...]], Profile]
                  ) -> Profile:
    """H(t) = body(H(t-1), x_t) unrolled: a body monomial h^i x_t^j v contributes i copies of H(t-1)'s degrees,
    j of the input's and v's own."""
    X, body = node.children[0], node.children[1]
    width = len(signals)
    inputs = _profile(X, signals, memo)
    steps = _profile(body, (node.h, node.x_t) + signals, memo)
    state = _profile(node.children[2], signals, memo) if len(node.children) > 2 else frozenset({(0,) * width})
    seen: set[tuple[int, ...]] = set()
    for _ in range(node.length):
        state = _pareto(v for i, j, *own in steps for v in _sum(_sum(_power(state, i, width), _power(inputs, j, width)),
                                                                 frozenset({tuple(own)})))
        seen |= state
    return _pareto(seen) if node.return_sequences else state


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
