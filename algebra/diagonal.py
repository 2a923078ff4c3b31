"""The diagonal algebra and the position algebra: e_i e_j = delta_ij e_i.

The position algebra is the paper's lattice algebra: one basis vector g_a per lattice point, with the unit
g_0 = sum_a g_a (not itself a basis vector).  Both are commutative, associative and unital.

>>> B = position(3)
>>> B.basis, B.unit()
(('g_1', 'g_2', 'g_3'), g_1 + g_2 + g_3)
"""
from __future__ import annotations

from .algebra import Algebra, check_count, check_entries


def _idempotents(n: int, prefix: str, start: int, name: str) -> Algebra:
    n = check_count(n, "n")
    check_entries(n, "n", name)
    table = {(i, i): {i: 1} for i in range(n)}
    return Algebra.from_structure_constants(table, basis=[f"{prefix}_{i + start}" for i in range(n)], name=name)


def diagonal(n: int) -> Algebra:
    """The diagonal algebra R^n with the elementwise product, basis e_0..e_{n-1} (gating's algebra)."""
    return _idempotents(n, "e", 0, f"diagonal({n})")


def position(n: int) -> Algebra:
    """The position algebra of n lattice points, basis g_1..g_n; its unit is g_0 = g_1 + ... + g_n."""
    return _idempotents(n, "g", 1, f"position({n})")
