"""`translations(n, cyclic)`: shifts on a position or translation factor of n lattice points.

Cyclic (Z_n): the generator is the shift T e_i = e_{(i + 1) mod n}, a permutation; the group is
{T^a : a = 0..n-1}, with T^a e_i = e_{i + a}, i.e. (T^a x)_i = x_{i - a} as in the paper.

Truncated (``cyclic=False``, the window 0..n-1 of Z): the generator is the forward shift S e_i = e_{i + 1}
for i < n - 1 and S e_{n - 1} = 0.  It moves a signal one step forward, drops what leaves the window at the end
and lets a zero in at the start.  S is not invertible: it generates the monoid of partial shifts
{S^a : a = 0..n} (S^n = 0), not a group, and the constraint S O = O S means equivariance under forward shifts
of a zero-padded window.  Its solutions are the causal (lower-triangular Toeplitz) convolutions, exactly the
products of the truncated translation algebra.  Backward shifts are left out on purpose: an operator commuting
with both S and S^T commutes with every matrix, so it is a multiple of the identity.

>>> from product_interactions.algebra import translation
>>> from product_interactions.algebra.symmetry import equivariant_constraints, filter_of, solve
>>> translations(4, cyclic=False).matrices()[0]
array([[0., 0., 0., 0.],
       [1., 0., 0., 0.],
       [0., 1., 0., 0.],
       [0., 0., 1., 0.]])
>>> solve(equivariant_constraints(translations(4, cyclic=False), filter_of(translation(4, cyclic=False)))).dim
4
"""
from __future__ import annotations

from ..algebra import check_count, check_flag
from ..limits import check_size
from .action import DISCRETE, Action
from .sparse import Sparse


def translations(n: int, cyclic: bool = True) -> Action:
    """The shift of n lattice points: cyclic (Z_n) or truncated (forward shifts of a window, see the module)."""
    n = check_count(n, "n")
    check_size(n, "n", "lattice points", "translation symmetry of a smaller lattice")
    cyclic = check_flag(cyclic, "cyclic")
    shift = {((i + 1) % n, i): 1 for i in range(n) if cyclic or i + 1 < n}
    name = f"translations({n})" if cyclic else f"translations({n}, cyclic=False)"
    return Action([(DISCRETE, [Sparse((n, n), shift)])], name)
