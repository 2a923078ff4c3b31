"""The translation algebra: the group algebra of Z_n, e_i e_j = e_{(i + j) mod n}.

Multiplying by a filter is a circular convolution; ``cyclic=False`` truncates Z instead (terms with
i + j >= n are dropped: the causal, zero-padded convolution).  2-D lattices are tensor products of two.  The
algebra is structured (`algebra.structured`): its rule is index arithmetic, so it costs nothing to build.

>>> T = translation(4)
>>> T.basis_element(3) * T.basis_element(2)
e_1
>>> translation(4, cyclic=False).basis_element(3) * translation(4, cyclic=False).basis_element(2)
0
>>> translation(10**6).product_of_basis(999_999, 2)
{1: 1}
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import sympy

from .algebra import check_count, check_flag
from .element import Element
from .exact import Entry
from .structured import StructuredAlgebra

_LABEL = re.compile(r"e_(\d+)")


class Translation(StructuredAlgebra):
    """The group algebra of Z_n (`cyclic`), or of Z truncated to 0..n-1."""

    def __init__(self, n: int, cyclic: bool) -> None:
        super().__init__(n, f"translation({n})" if cyclic else f"translation({n}, cyclic=False)")
        self.cyclic = cyclic

    def sparsity(self) -> tuple[Any, ...]:
        return ("cyclic", 1, 1) if self.cyclic else ("truncated",)

    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        k = i + j
        if k >= self._dim:
            if not self.cyclic:
                return {}
            k -= self._dim
        return {k: sympy.Integer(1)}

    def _rule_entries(self) -> Iterator[Entry]:
        one, n = sympy.Integer(1), self._dim
        for i in range(n):
            for j in range(n if self.cyclic else n - i):
                yield i, j, (i + j) % n, one

    def label(self, i: int) -> str:
        return f"e_{self.index(i, 'i')}"

    def _parse(self, label: Any) -> int | None:
        match = _LABEL.fullmatch(label) if isinstance(label, str) else None
        if match is None or match.group(1) != str(int(match.group(1))) or int(match.group(1)) >= self._dim:
            return None
        return int(match.group(1))

    def _count(self) -> int:
        n = self._dim
        return n * n if self.cyclic else n * (n + 1) // 2

    def _spec(self) -> object:
        return (self._dim, self.cyclic)

    def builder(self) -> tuple[str, dict[str, Any]]:
        return "translation", {"n": self._dim, "cyclic": self.cyclic}

    # ------------------------------------------------------------------ queries known from the rule
    def is_commutative(self) -> bool:
        return True

    def is_anticommutative(self) -> bool:
        return False                                   # e_0 e_0 = e_0

    def is_associative(self) -> bool:
        return True

    def unit(self) -> Element:
        return self.basis_element(0)


def translation(n: int, cyclic: bool = True) -> Translation:
    """The group algebra of Z_n (``cyclic=True``) or of Z truncated to 0..n-1 (``cyclic=False``)."""
    n = check_count(n, "n")
    return Translation(n, check_flag(cyclic, "cyclic"))
