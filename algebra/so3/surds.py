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
from dataclasses import dataclass
from fractions import Fraction

import sympy


@dataclass(frozen=True, repr=False)
class Surd:
    """``terms`` is a tuple of ``(s, c)`` sorted by s, with s square-free, c a nonzero Fraction."""

    terms: tuple = ()

    @classmethod
    def from_terms(cls, pairs) -> "Surd":
        """Sum of ``c * sqrt(s)`` over ``(s, c)`` pairs (s square-free; equal s are collected, zeros dropped)."""
        pairs = list(pairs)
        if len(pairs) == 1:
            (s, c), = pairs
            return cls(((s, c if type(c) is Fraction else Fraction(c)),) if c else ())
        collected: dict = {}
        for s, c in pairs:
            collected[s] = collected.get(s, 0) + c
        return cls(tuple((s, Fraction(c)) for s, c in sorted(collected.items()) if c))

    @classmethod
    def from_sympy(cls, value) -> "Surd":
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

    def __neg__(self) -> "Surd":
        return Surd(tuple((s, -c) for s, c in self.terms))

    def __add__(self, other: "Surd") -> "Surd":
        return Surd.from_terms(self.terms + other.terms)

    def __sub__(self, other: "Surd") -> "Surd":
        return self + -other

    def __mul__(self, other: "Surd") -> "Surd":
        pairs = []
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

    def to_json(self) -> list:
        """``[[s, "p/q"], ...]``."""
        return [[s, str(c)] for s, c in self.terms]

    @classmethod
    def from_json(cls, data) -> "Surd":
        """Inverse of `to_json`; raises ValueError on anything but square-free ints and rational strings."""
        if not isinstance(data, list):
            raise ValueError(f"surd: expected a list of [s, 'p/q'] pairs, got {type(data).__name__}")
        pairs = []
        for pair in data:
            if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and pair[0] > 0
                    and isinstance(pair[1], str) and _is_square_free(pair[0])):
                raise ValueError(f"surd: expected [square-free int, 'p/q'], got {pair!r}")
            pairs.append((pair[0], Fraction(pair[1])))
        return cls.from_terms(pairs)


@functools.lru_cache(maxsize=None)
def _is_square_free(n: int) -> bool:
    return all(n % (k * k) for k in range(2, math.isqrt(n) + 1))


@functools.lru_cache(maxsize=None)
def _to_sympy(terms: tuple) -> sympy.Expr:
    return sympy.Add(*(sympy.Rational(c.numerator, c.denominator) * _sympy_sqrt(s) for s, c in terms))


@functools.lru_cache(maxsize=None)
def _sympy_sqrt(s: int) -> sympy.Expr:
    return sympy.sqrt(s)
