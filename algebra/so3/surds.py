"""`Surd`: exact real numbers sum_s c_s sqrt(s), c_s rational, s a square-free positive integer.

Clebsch-Gordan and Gaunt coefficients live here.  Arithmetic on `fractions.Fraction` is exact and much faster
than on sympy expressions; `to_sympy` gives the canonical sympy number (memoised) and `float` the value.  The
JSON form ``[[s, "p/q"], ...]`` is read back with `int` and `Fraction` only, never evaluated.

>>> import sympy
>>> half = Surd.from_sympy(sympy.sqrt(2) / 2)
>>> half * half, (half + half).to_sympy(), half * Surd.from_sympy(sympy.sqrt(6))
(Surd(1/2), sqrt(2), Surd(sqrt(3)))
>>> Surd.from_json([[2, "1/2"], [3, "-1"]]).to_sympy()
-sqrt(3) + sqrt(2)/2
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import sympy

#: The default largest prime factor of an s read by `Surd.from_json`, and the digits of a rational read.
MAX_PRIME = 1000
MAX_DIGITS = 1000
_RATIONAL = re.compile(r"(-?[0-9]+)(?:/([0-9]+))?", re.ASCII)


@dataclass(frozen=True, repr=False)
class Surd:
    """``terms`` is a tuple of ``(s, c)`` sorted by s, with s square-free, c a nonzero Fraction."""

    terms: tuple[tuple[int, Fraction], ...] = ()

    @classmethod
    def from_terms(cls, pairs: Iterable[tuple[int, Fraction | int]]) -> Surd:
        """Sum of ``c * sqrt(s)`` over ``(s, c)`` pairs (s square-free; equal s are collected, zeros dropped)."""
        pairs = list(pairs)
        if len(pairs) == 1:
            (s, c), = pairs
            return cls(((s, c if type(c) is Fraction else Fraction(c)),) if c else ())
        collected: dict[int, Fraction | int] = {}
        for s, c in pairs:
            collected[s] = collected.get(s, 0) + c
        return cls(tuple((s, Fraction(c)) for s, c in sorted(collected.items()) if c))

    @classmethod
    def from_sympy(cls, value: sympy.Expr | int) -> Surd:
        """From a sympy number ``c * sqrt(s)`` (rational c, integer s), as sympy writes such numbers."""
        value = sympy.sympify(value)
        coefficient, root = value.as_coeff_Mul()
        if root == 1:
            s = 1
        elif root.is_Pow and root.exp == sympy.S.Half and root.base.is_Integer and root.base > 0:
            s = int(root.base)
        else:
            raise ValueError(f"value: expected a rational times sqrt(integer), got {value}")
        if not coefficient.is_Rational:
            raise ValueError(f"value: expected a rational times sqrt(integer), got {value}")
        return cls.from_terms([(s, Fraction(int(coefficient.p), int(coefficient.q)))])

    def __repr__(self) -> str:
        return f"Surd({self.to_sympy()})"

    def __bool__(self) -> bool:
        return bool(self.terms)

    def __neg__(self) -> Surd:
        return Surd(tuple((s, -c) for s, c in self.terms))

    def __add__(self, other: Surd) -> Surd:
        return Surd.from_terms(self.terms + other.terms)

    def __sub__(self, other: Surd) -> Surd:
        return self + -other

    def __mul__(self, other: Surd) -> Surd:
        pairs: list[tuple[int, Fraction]] = []
        for s1, c1 in self.terms:
            for s2, c2 in other.terms:
                g = math.gcd(s1, s2)            # s1 s2 = g^2 (s1/g)(s2/g), and (s1/g)(s2/g) is square-free
                pairs.append(((s1 // g) * (s2 // g), c1 * c2 * g))
        return Surd.from_terms(pairs)

    def __float__(self) -> float:
        return float(sum(c * math.sqrt(s) for s, c in self.terms))

    def to_sympy(self) -> sympy.Expr:
        """The exact sympy number."""
        return _to_sympy(self.terms)

    def to_json(self) -> list[list[int | str]]:
        """``[[s, "p/q"], ...]``."""
        return [[s, str(c)] for s, c in self.terms]

    @classmethod
    def from_json(cls, data: object, largest_prime: int = MAX_PRIME) -> Surd:
        """Inverse of `to_json`; raises ValueError on anything else.

        Each s must be a product of distinct primes <= `largest_prime` (a bound that keeps the check cheap;
        the Clebsch-Gordan coefficients up to lmax need primes <= 3 lmax + 1), each c a nonzero rational
        ``"p/q"`` (`parse_rational`), the s strictly increasing.
        """
        if not isinstance(data, list):
            raise ValueError(f"surd: expected a list of [s, 'p/q'] pairs, got {type(data).__name__}")
        pairs: list[tuple[int, Fraction]] = []
        for pair in data:
            if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and pair[0] > 0
                    and isinstance(pair[1], str)):
                raise ValueError(f"surd: expected [square-free int, 'p/q'], got {pair!r}"[:300])
            if not is_square_free(pair[0], largest_prime):
                raise ValueError(f"surd: s = {pair[0]} is not a product of distinct primes <= {largest_prime}"[:300])
            if pairs and pair[0] <= pairs[-1][0]:
                raise ValueError(f"surd: expected the s in increasing order, got {pair[0]} after {pairs[-1][0]}")
            value = parse_rational(pair[1], "surd coefficient")
            if not value:
                raise ValueError(f"surd coefficient: expected a nonzero rational, got {pair[1]!r}")
            pairs.append((pair[0], value))
        return cls(tuple(pairs))


#: One path's nonzero coefficients ``((m1, m2, m), value)``, and the table of all paths ``{(l1, l2, l): entries}``.
PathEntries = tuple[tuple[tuple[int, int, int], Surd], ...]
PathTable = dict[tuple[int, int, int], PathEntries]


def parse_rational(text: str, argument: str) -> Fraction:
    """``"p"`` or ``"p/q"`` (ASCII digits, optional leading minus, at most `MAX_DIGITS` digits each, q nonzero),
    else ValueError naming `argument`; nothing else (no exponents, spaces or underscores) is accepted."""
    match = _RATIONAL.fullmatch(text) if isinstance(text, str) and len(text) <= 2 * MAX_DIGITS + 2 else None
    if match is None:
        raise ValueError(f"{argument}: expected a rational 'p/q' with at most {MAX_DIGITS} ASCII digits each, "
                         f"got {text!r}"[:300])
    numerator, denominator = int(match.group(1)), int(match.group(2) or 1)
    if denominator == 0:
        raise ValueError(f"{argument}: zero denominator in {text!r}")
    return Fraction(numerator, denominator)


def is_square_free(n: int, largest_prime: int) -> bool:
    """True when n is a product of distinct primes <= largest_prime (trial division by those primes only)."""
    for p in _primes(largest_prime):
        if n % p == 0:
            n //= p
            if n % p == 0:
                return False
    return n == 1


@functools.lru_cache(maxsize=None)
def _primes(largest: int) -> tuple[int, ...]:
    return tuple(sympy.primerange(2, largest + 1))


@functools.lru_cache(maxsize=None)
def _to_sympy(terms: tuple[tuple[int, Fraction], ...]) -> sympy.Expr:
    return sympy.Add(*(sympy.Rational(c.numerator, c.denominator) * _sympy_sqrt(s) for s, c in terms))


@functools.lru_cache(maxsize=None)
def _sympy_sqrt(s: int) -> sympy.Expr:
    return sympy.sqrt(s)
