"""The truncated tensor (free) algebra T(R^d) of degree M with the convolution tensor product.

An element is t = (t_0, t_1, ..., t_M), t_m in (R^d)^{(x)m}; (s . t)_m = sum_{i<=m} s_i (x) t_{m-i}.  The basis
is the words in the letters 1..d of length <= M, graded (level 0, then 1, ...), row-major inside a level:
"1", "e1", "e2", ..., "e11", "e12", ...  Seq2Tens maps a sequence to the product of its lifts (1, x, 0, ...).

>>> T = tensor_algebra(2, 2)
>>> T.basis
('1', 'e1', 'e2', 'e11', 'e12', 'e21', 'e22')
>>> x = T.lift([1, 2]); y = T.lift([3, 0])
>>> (x * y).coefficients[T.level(2)]
array([3, 0, 6, 0], dtype=object)
"""
from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

import sympy

from .algebra import check_count
from .element import Element
from .exact import Entry, ExactLike, to_exact
from .labels import word_label
from .structured import StructuredAlgebra

#: The largest dimension built (exact elements hold one sympy coefficient per word).
MAX_DIM = 4096


class TensorAlgebra(StructuredAlgebra):
    """T(R^width) truncated at `degree`; `level(m)` slices a level, `lift` and `exp` embed vectors.

    Structured (`algebra.structured`): a word of length m with letters a_1..a_m (0-based) has index
    offset(m) + sum_i a_i width^(m-i), and the product of two words is their concatenation when it is no longer
    than `degree` (coefficient 1), else 0.
    """

    def __init__(self, width: int, degree: int) -> None:
        self.width, self.degree = width, degree
        self._offsets = list(itertools.accumulate((width**k for k in range(degree + 1)), initial=0))
        super().__init__(self._offsets[-1], f"tensor_algebra({width}, {degree})")

    def _word(self, i: int) -> tuple[int, int]:
        """(length m, number a of the word within its level)."""
        m = bisect.bisect_right(self._offsets, i) - 1
        return m, i - self._offsets[m]

    def sparsity(self) -> tuple[Any, ...]:
        return ("graded", self.width, self.degree)

    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        (m1, a1), (m2, a2) = self._word(i), self._word(j)
        if m1 + m2 > self.degree:
            return {}
        return {self._offsets[m1 + m2] + a1 * self.width**m2 + a2: sympy.Integer(1)}

    def _rule_entries(self) -> Iterator[Entry]:
        one, d, offsets = sympy.Integer(1), self.width, self._offsets
        for m1 in range(self.degree + 1):
            for m2 in range(self.degree + 1 - m1):
                for a1 in range(d**m1):
                    for a2 in range(d**m2):
                        yield offsets[m1] + a1, offsets[m2] + a2, offsets[m1 + m2] + a1 * d**m2 + a2, one

    def label(self, i: int) -> str:
        m, a = self._word(self.index(i, "i"))
        if self.width == 1:
            return "e" + "1" * m if m else "1"
        letters = []
        for _ in range(m):
            a, letter = divmod(a, self.width)
            letters.append(letter + 1)
        return word_label("e", letters[::-1], largest=self.width)

    def _parse(self, label: Any) -> int | None:
        if label == "1":
            return 0
        if not isinstance(label, str) or not re.fullmatch(r"e[0-9,]+", label):
            return None
        parts = label[1:].split(",") if self.width >= 10 else list(label[1:])
        if not all(p.isdigit() and p == str(int(p)) and 1 <= int(p) <= self.width for p in parts) or \
                len(parts) > self.degree:
            return None
        number = 0
        for p in parts:
            number = number * self.width + int(p) - 1
        return self._offsets[len(parts)] + number

    def _count(self) -> int:
        return sum((k + 1) * self.width**k for k in range(self.degree + 1))

    def _spec(self) -> object:
        return (self.width, self.degree)

    def builder(self) -> tuple[str, dict[str, Any]]:
        return "tensor_algebra", {"dim": self.width, "degree": self.degree}

    # ------------------------------------------------------------------ queries known from the rule
    def is_associative(self) -> bool:
        return True

    def unit(self) -> Element:
        return self.basis_element(0)

    def level(self, m: int) -> slice:
        """The slice of the flat coefficients holding level m (d^m entries, row-major)."""
        m = check_count(m, "m", minimum=0)
        if m > self.degree:
            raise ValueError(f"m: expected a level in 0..{self.degree}, got {m!r}")
        return slice(self._offsets[m], self._offsets[m + 1])

    def _vector(self, x: Iterable[ExactLike], argument: str) -> list[sympy.Expr]:
        values = list(x) if not isinstance(x, (str, bytes)) and hasattr(x, "__iter__") and getattr(
            x, "ndim", 1) != 0 else None
        if values is None or len(values) != self.width:
            raise ValueError(f"{argument}: expected a vector of {self.width} numbers, got {x!r}")
        return [to_exact(v, f"{argument}[{i}]") for i, v in enumerate(values)]

    def embed(self, x: Iterable[ExactLike], order: int) -> Element:
        """The lift sum_{k <= order} x^{(x)k} / k!: order 1 is (1, x, 0, ...), order = degree is exp(x)."""
        order = check_count(order, "order")
        x = self._vector(x, "x")
        coefficients, power = [sympy.Integer(1)], [sympy.Integer(1)]
        for m in range(1, self.degree + 1):
            power = [a * b for a in power for b in x]            # x^{(x)m}, row-major
            scale = sympy.Rational(1, math.factorial(m)) if m <= order else 0
            coefficients += [scale * value for value in power]
        return Element(self, coefficients)

    def lift(self, x: Iterable[ExactLike]) -> Element:
        """phi(x) = (1, x, 0, ..., 0), the Seq2Tens lift."""
        return self.embed(x, 1)

    def exp(self, x: Iterable[ExactLike]) -> Element:
        """The truncated tensor exponential (1, x, x^{(x)2}/2!, ...): the signature of a straight segment."""
        return self.embed(x, self.degree)


def tensor_algebra(dim: int, degree: int) -> TensorAlgebra:
    """T(R^dim) truncated at `degree` (dimension 1 + dim + ... + dim^degree, at most `MAX_DIM`)."""
    dim, degree = check_count(dim, "dim"), check_count(degree, "degree", minimum=0)
    # bounded first: past these the dimension 1 + dim + ... + dim^degree exceeds MAX_DIM anyway
    if degree >= MAX_DIM or degree >= 1 and dim >= MAX_DIM or dim >= 2 and degree > MAX_DIM.bit_length():
        size = None
    else:
        size = degree + 1 if dim == 1 else (dim ** (degree + 1) - 1) // (dim - 1)
    if size is None or size > MAX_DIM:
        dimension = f"dimension {size}" if size is not None else f"a dimension of more than {MAX_DIM}"
        raise ValueError(f"dim, degree: T(R^{dim}) truncated at degree {degree} has {dimension}; at most "
                         f"MAX_DIM = {MAX_DIM} is supported exactly (use the Seq2Tens kernels for larger ones)")
    return TensorAlgebra(dim, degree)
