"""Clifford algebras Cl(p, q, r) on the blade basis, and the complex numbers and quaternions.

Generators e1..en (n = p + q + r) in this order: the first p square to +1, the next q to -1, the last r to 0.
So 3-D projective geometric algebra is ``clifford(3, 0, 1)`` with the null generator e4.  Blades are ordered by
grade, then lexicographically: 1, e1, e2, ..., e12, e13, ..., e12...n.

>>> Cl = clifford(2)
>>> e1, e2 = Cl.basis_element("e1"), Cl.basis_element("e2")
>>> e1 * e1, e1 * e2, e2 * e1
(1, e12, -e12)
>>> H = quaternions()
>>> i, j, k = (H.basis_element(x) for x in "ijk")
>>> i * j * k
-1
"""
from __future__ import annotations

from itertools import combinations
from typing import Any

import sympy

from .algebra import check_basis, check_count
from .labels import BasisLike, Label, word_label
from .structured import StructuredAlgebra


def _reordering_sign(a: int, b: int) -> int:
    """Sign of sorting the generators of blade a followed by those of blade b (bitmasks)."""
    swaps, a = 0, a >> 1
    while a:
        swaps += bin(a & b).count("1")
        a >>= 1
    return -1 if swaps % 2 else 1


class Clifford(StructuredAlgebra):
    """Cl(p, q, r) on the blade basis (see the module docstring).

    Structured (`algebra.structured`): blade i is a bitmask of generators, e_a e_b = sign(a, b) (product of the
    squares of the shared generators) e_{a xor b}.
    """

    _labels: tuple[Label, ...]

    def __init__(self, p: int, q: int, r: int, basis: BasisLike | None, name: str) -> None:
        n = p + q + r
        self.signature = (p, q, r)
        self._squares = [1] * p + [-1] * q + [0] * r
        self._blades = [sum(1 << g for g in gens) for grade in range(n + 1) for gens in combinations(range(n), grade)]
        self._position = {blade: index for index, blade in enumerate(self._blades)}
        super().__init__(2**n, name)
        if basis is None:
            basis = [word_label("e", [g + 1 for g in range(n) if blade >> g & 1], largest=n) for blade in self._blades]
        self._labels = check_basis(basis, 2**n)
        self._index_of = {label: i for i, label in enumerate(self._labels)}

    def sparsity(self) -> tuple[Any, ...]:
        return ("one per pair",)

    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        a, b = self._blades[i], self._blades[j]
        coefficient = _reordering_sign(a, b)
        shared = a & b
        for g, square in enumerate(self._squares):
            if shared >> g & 1:
                coefficient *= square
        return {self._position[a ^ b]: sympy.Integer(coefficient)} if coefficient else {}

    def label(self, i: int) -> Label:
        return self._labels[self.index(i, "i")]

    def _parse(self, label: Any) -> int | None:
        return self._index_of.get(label)

    def _count(self) -> int:
        p, q, r = self.signature
        return 4 ** (p + q) * 3**r

    def _spec(self) -> object:
        return (self.signature, self._labels)

    def builder(self) -> tuple[str, dict[str, Any]]:
        p, q, r = self.signature
        return "clifford", {"p": p, "q": q, "r": r, "basis": list(self._labels)}


def clifford(p: int, q: int = 0, r: int = 0, basis: BasisLike | None = None, name: str | None = None) -> Clifford:
    """Cl(p, q, r), dimension 2^(p+q+r); see the module docstring for the generator order."""
    p, q, r = (check_count(v, argument, minimum=0) for v, argument in ((p, "p"), (q, "q"), (r, "r")))
    if p + q + r > 10:
        raise ValueError(f"p + q + r: at most 10 generators (dimension 1024) are supported, got {p + q + r}")
    return Clifford(p, q, r, basis, f"clifford({p}, {q}, {r})" if name is None else name)


def complex_numbers() -> Clifford:
    """The complex numbers as the real algebra Cl(0, 1) on the basis 1, i."""
    return clifford(0, 1, basis=["1", "i"], name="complex_numbers")


def quaternions() -> Clifford:
    """The quaternions as Cl(0, 2) on the basis 1, i, j, k (i = e1, j = e2, k = e12)."""
    return clifford(0, 2, basis=["1", "i", "j", "k"], name="quaternions")


def dual_numbers() -> Clifford:
    """The dual numbers R[eps] / (eps^2): Cl(0, 0, 1) on the basis 1, eps (forward-mode derivatives: (a + b eps)
    (c + d eps) = a c + (a d + b c) eps)."""
    return clifford(0, 0, 1, basis=["1", "eps"], name="dual_numbers")


def exterior_algebra(n: int) -> Clifford:
    """The exterior algebra of R^n: Cl(0, 0, n), whose n generators square to zero and anticommute, so the
    product of blades is the wedge product (e1 e2 = e1 ^ e2 = -e2 e1)."""
    n = check_count(n, "n", minimum=0)
    if n > 10:
        raise ValueError(f"n: at most 10 generators (dimension 1024) are supported, got {n}")
    return clifford(0, 0, n, name=f"exterior_algebra({n})")
