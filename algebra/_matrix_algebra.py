"""The matrix algebra M_n on the matrix units E_ij: E_ij E_kl = delta_jk E_il (associative, not commutative).

Basis order is row-major: E_11, E_12, ..., E_nn (1-based labels).  Structured (`algebra.structured`): the rule is
index arithmetic, so the n^3 structure constants are built only when asked for.

>>> M = matrix_algebra(2)
>>> M.basis_element("E12") * M.basis_element("E21")
E11
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import sympy

from .algebra import check_count
from .element import Element, check_element_size
from .exact import Entry
from .labels import word_label
from .structured import StructuredAlgebra


class MatrixAlgebra(StructuredAlgebra):
    """M_n over the reals; element coefficients of E_ij are the matrix entries in row-major order."""

    def __init__(self, n: int) -> None:
        super().__init__(n * n, f"matrix_algebra({n})")
        self.n = n

    def sparsity(self) -> tuple[Any, ...]:
        return ("one per pair",)

    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        (a, b), (c, d) = divmod(i, self.n), divmod(j, self.n)
        return {a * self.n + d: sympy.Integer(1)} if b == c else {}

    def _rule_entries(self) -> Iterator[Entry]:
        one, n = sympy.Integer(1), self.n
        for a in range(n):
            for b in range(n):
                for d in range(n):
                    yield a * n + b, b * n + d, a * n + d, one

    def label(self, i: int) -> str:
        a, b = divmod(self.index(i, "i"), self.n)
        return word_label("E", (a + 1, b + 1), largest=self.n)

    def _parse(self, label: Any) -> int | None:
        pattern = r"E(\d+),(\d+)" if self.n >= 10 else r"E(\d)(\d)"
        match = re.fullmatch(pattern, label) if isinstance(label, str) else None
        if match is None:
            return None
        a, b = (int(g) for g in match.groups())
        if not (1 <= a <= self.n and 1 <= b <= self.n) or match.group(0) != word_label("E", (a, b), self.n):
            return None
        return (a - 1) * self.n + b - 1

    def _count(self) -> int:
        return self.n**3

    def _spec(self) -> object:
        return self.n

    def builder(self) -> tuple[str, dict[str, Any]]:
        return "matrix_algebra", {"n": self.n}

    def is_associative(self) -> bool:
        return True

    def unit(self) -> Element:
        """The identity matrix (without solving for it: M_n has n^3 structure constants)."""
        check_element_size(self, "unit")
        return Element(self, [int(a == b) for a in range(self.n) for b in range(self.n)])


def matrix_algebra(n: int) -> MatrixAlgebra:
    """M_n over the reals; element coefficients of E_ij are the matrix entries in row-major order."""
    return MatrixAlgebra(check_count(n, "n"))
