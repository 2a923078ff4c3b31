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

from .algebra import Algebra, check_count
from .labels import word_label


def _reordering_sign(a: int, b: int) -> int:
    """Sign of sorting the generators of blade a followed by those of blade b (bitmasks)."""
    swaps, a = 0, a >> 1
    while a:
        swaps += bin(a & b).count("1")
        a >>= 1
    return -1 if swaps % 2 else 1


def clifford(p: int, q: int = 0, r: int = 0, basis=None, name=None) -> Algebra:
    """Cl(p, q, r), dimension 2^(p+q+r); see the module docstring for the generator order."""
    p, q, r = (check_count(v, name, minimum=0) for v, name in ((p, "p"), (q, "q"), (r, "r")))
    n = p + q + r
    if n > 10:
        raise ValueError(f"p + q + r: at most 10 generators (dimension 1024) are supported, got {n}")
    squares = [1] * p + [-1] * q + [0] * r
    blades = [sum(1 << g for g in gens) for grade in range(n + 1) for gens in combinations(range(n), grade)]
    position = {blade: index for index, blade in enumerate(blades)}
    table = {}
    for a in blades:
        for b in blades:
            coefficient = _reordering_sign(a, b)
            for g in range(n):
                if a & b & (1 << g):
                    coefficient *= squares[g]
            if coefficient:
                table[position[a], position[b]] = {position[a ^ b]: coefficient}
    if basis is None:
        basis = [word_label("e", [g + 1 for g in range(n) if blade >> g & 1], largest=n) for blade in blades]
    return Algebra.from_structure_constants(table, basis=basis, name=name or f"clifford({p}, {q}, {r})", dim=2**n)


def complex_numbers() -> Algebra:
    """The complex numbers as the real algebra Cl(0, 1) on the basis 1, i."""
    return clifford(0, 1, basis=["1", "i"], name="complex_numbers")


def quaternions() -> Algebra:
    """The quaternions as Cl(0, 2) on the basis 1, i, j, k (i = e1, j = e2, k = e12)."""
    return clifford(0, 2, basis=["1", "i", "j", "k"], name="quaternions")
