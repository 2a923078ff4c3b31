"""The translation algebra: the group algebra of Z_n, e_i e_j = e_{(i + j) mod n}.

Multiplying by a filter is a circular convolution; ``cyclic=False`` truncates Z instead (terms with
i + j >= n are dropped: the causal, zero-padded convolution).  2-D lattices are tensor products of two.

>>> T = translation(4)
>>> T.basis_element(3) * T.basis_element(2)
e_1
>>> translation(4, cyclic=False).basis_element(3) * translation(4, cyclic=False).basis_element(2)
0
"""
from __future__ import annotations

from .algebra import Algebra, check_count, check_entries


def translation(n: int, cyclic: bool = True) -> Algebra:
    """The group algebra of Z_n (``cyclic=True``) or of Z truncated to 0..n-1 (``cyclic=False``)."""
    n = check_count(n, "n")
    check_entries(n**2, "n", f"translation({n})")
    if not isinstance(cyclic, bool):
        raise TypeError(f"cyclic: expected a bool, got {type(cyclic).__name__} {cyclic!r}")
    table = {(i, j): {(i + j) % n: 1} for i in range(n) for j in range(n) if cyclic or i + j < n}
    name = f"translation({n})" if cyclic else f"translation({n}, cyclic=False)"
    return Algebra.from_structure_constants(table, basis=[f"e_{i}" for i in range(n)], name=name)
