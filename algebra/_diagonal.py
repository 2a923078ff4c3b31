"""The diagonal algebra and the position algebra: e_i e_j = delta_ij e_i.

The position algebra is the paper's lattice algebra: one basis vector g_a per lattice point, with the unit
g_0 = sum_a g_a (not itself a basis vector).  Both are commutative, associative and unital, and both are
structured (`algebra.structured`): their rule is a shared index, so they cost nothing to build at any size.

>>> B = position(3)
>>> B.basis, B.unit()
(('g_1', 'g_2', 'g_3'), g_1 + g_2 + g_3)
>>> position(10**6).product_of_basis("g_7", "g_7")
{6: 1}
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import sympy

from .algebra import check_count
from .element import Element, check_element_size
from .exact import Entry
from .limits import check_size
from .structured import StructuredAlgebra


class Diagonal(StructuredAlgebra):
    """e_i e_j = delta_ij e_i on n basis vectors labelled ``prefix_{i + start}``: `diagonal` and `position`."""

    def __init__(self, n: int, prefix: str, start: int, name: str) -> None:
        super().__init__(n, name)
        self.prefix, self.start = prefix, start
        self._pattern = re.compile(re.escape(prefix) + r"_(-?\d+)")

    def sparsity(self) -> tuple[Any, ...]:
        return ("diagonal",)

    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        return {i: sympy.Integer(1)} if i == j else {}

    def _rule_entries(self) -> Iterator[Entry]:
        one = sympy.Integer(1)
        return ((i, i, i, one) for i in range(self._dim))

    def label(self, i: int) -> str:
        return f"{self.prefix}_{self.index(i, 'i') + self.start}"

    def _parse(self, label: Any) -> int | None:
        match = self._pattern.fullmatch(label) if isinstance(label, str) else None
        if match is None or match.group(1) != str(int(match.group(1))):
            return None
        i = int(match.group(1)) - self.start
        return i if 0 <= i < self._dim else None

    def _count(self) -> int:
        return self._dim

    def _spec(self) -> object:
        return (self._dim, self.prefix, self.start)

    def builder(self) -> tuple[str, dict[str, Any]]:
        return ("position" if self.prefix == "g" else "diagonal"), {"n": self._dim}

    def _multiply(self, x: Sequence[sympy.Expr], y: Sequence[sympy.Expr]) -> list[sympy.Expr]:
        return [a * b for a, b in zip(x, y)]

    # ------------------------------------------------------------------ queries known from the rule
    def is_commutative(self) -> bool:
        return True

    def is_anticommutative(self) -> bool:
        return False

    def is_associative(self) -> bool:
        return True

    def unit(self) -> Element:
        check_element_size(self, "unit")
        return Element(self, [1] * self._dim)

    def center(self) -> list[Element]:
        check_size(self._dim**2, "center", f"coefficients in the basis of the centre of {self.name}",
                   "the centre is the whole algebra")
        return [self.basis_element(i) for i in range(self._dim)]


def diagonal(n: int) -> Diagonal:
    """The diagonal algebra R^n with the elementwise product, basis e_0..e_{n-1} (gating's algebra)."""
    n = check_count(n, "n")
    return Diagonal(n, "e", 0, f"diagonal({n})")


def position(n: int) -> Diagonal:
    """The position algebra of n lattice points, basis g_1..g_n; its unit is g_0 = g_1 + ... + g_n."""
    n = check_count(n, "n")
    return Diagonal(n, "g", 1, f"position({n})")
