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

import math
from itertools import product

import sympy

from .algebra import Algebra, check_count
from .element import Element
from .exact import to_exact
from .labels import word_label


class TensorAlgebra(Algebra):
    """T(R^width) truncated at `degree`; `level(m)` slices a level, `lift` and `exp` embed vectors."""

    def __init__(self, width: int, degree: int):
        self.width, self.degree = width, degree
        words = [w for m in range(degree + 1) for w in product(range(width), repeat=m)]
        index = {w: i for i, w in enumerate(words)}
        table = {(index[u], index[v]): {index[u + v]: sympy.Integer(1)}
                 for u in words for v in words if len(u) + len(v) <= degree}
        basis = [word_label("e", [letter + 1 for letter in w], largest=width) for w in words]
        super().__init__(table, basis, f"tensor_algebra({width}, {degree})")

    def level(self, m: int) -> slice:
        """The slice of the flat coefficients holding level m (d^m entries, row-major)."""
        m = check_count(m, "m", minimum=0)
        if m > self.degree:
            raise ValueError(f"m: expected a level in 0..{self.degree}, got {m!r}")
        start = sum(self.width**k for k in range(m))
        return slice(start, start + self.width**m)

    def _vector(self, x, argument: str):
        values = list(x) if not isinstance(x, (str, bytes)) and hasattr(x, "__iter__") else None
        if values is None or len(values) != self.width:
            raise ValueError(f"{argument}: expected a vector of {self.width} numbers, got {x!r}")
        return [to_exact(v, f"{argument}[{i}]") for i, v in enumerate(values)]

    def embed(self, x, order: int) -> Element:
        """The lift sum_{k <= order} x^{(x)k} / k!: order 1 is (1, x, 0, ...), order = degree is exp(x)."""
        order = check_count(order, "order")
        x = self._vector(x, "x")
        coefficients, power = [sympy.Integer(1)], [sympy.Integer(1)]
        for m in range(1, self.degree + 1):
            power = [a * b for a in power for b in x]            # x^{(x)m}, row-major
            scale = sympy.Rational(1, math.factorial(m)) if m <= order else 0
            coefficients += [scale * value for value in power]
        return Element(self, coefficients)

    def lift(self, x) -> Element:
        """phi(x) = (1, x, 0, ..., 0), the Seq2Tens lift."""
        return self.embed(x, 1)

    def exp(self, x) -> Element:
        """The truncated tensor exponential (1, x, x^{(x)2}/2!, ...): the signature of a straight segment."""
        return self.embed(x, self.degree)

    def _json_params(self):
        return {"width": self.width, "degree": self.degree}


def tensor_algebra(dim: int, degree: int) -> TensorAlgebra:
    """T(R^dim) truncated at `degree` (dimension 1 + dim + ... + dim^degree)."""
    dim, degree = check_count(dim, "dim"), check_count(degree, "degree", minimum=0)
    size = sum(dim**m for m in range(degree + 1))
    if size > 4096:
        raise ValueError(f"dim, degree: T(R^{dim}) truncated at degree {degree} has dimension {size}; at most "
                         f"4096 is supported exactly (use the Seq2Tens kernels for larger ones)")
    return TensorAlgebra(dim, degree)
