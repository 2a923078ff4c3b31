"""Joint degrees of expressions: the exponent vectors of their monomials in several signals at once.

A `Profile` is a set of exponent vectors, one entry per signal, kept Pareto-maximal (a vector another dominates
componentwise is dropped: every degree read off later is a maximum).  Nodes combine their children's profiles
(`Expr._degrees`): a sum takes either side, a product adds, a scan composes its step.  `interactions.orders`
reads the self-interaction order off them.

>>> plus(frozenset({(1, 0), (0, 1)}), frozenset({(1, 0)}))      # (h + x) h
frozenset({(1, 1), (2, 0)})
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .expression import Expr, Signal

#: A set of exponent vectors, one entry per signal: the maximal degrees of an expression's monomials.
Profile = frozenset[tuple[int, ...]]


def pareto(vectors: Iterable[tuple[int, ...]]) -> Profile:
    """The vectors no other vector dominates (componentwise >=)."""
    found = set(vectors)
    return frozenset(v for v in found if not any(w != v and all(a >= b for a, b in zip(w, v)) for w in found))


def zero(width: int) -> Profile:
    """The profile of a constant."""
    return frozenset({(0,) * width})


def plus(first: Profile, second: Profile) -> Profile:
    """The profile of a product: every pair of monomials, their exponents added."""
    return pareto(tuple(a + b for a, b in zip(v, w)) for v in first for w in second)


def power(profile: Profile, k: int, width: int) -> Profile:
    """The profile of a product of k factors of `profile`."""
    result = zero(width)
    for _ in range(k):
        result = plus(result, profile)
    return result


class Degrees:
    """The profiles of nodes in given signals, each computed once; `per_step` is the convention of scans (the
    degree of what one step adds, the state as a constant, or the whole recurrence unrolled)."""

    def __init__(self, per_step: bool) -> None:
        self.per_step = per_step
        self._profiles: dict[tuple[int, tuple[int, ...]], Profile] = {}

    def of(self, node: Expr, signals: tuple[Signal, ...]) -> Profile:
        """The profile of `node` in `signals`."""
        key = (id(node), tuple(map(id, signals)))
        if key not in self._profiles:
            self._profiles[key] = node._degrees(signals, self)
        return self._profiles[key]
