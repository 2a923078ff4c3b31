"""The feature basis of the real irreducible representations of SO(3) and O(3), and its checks.

A feature vector up to degree ``lmax`` has ``(lmax + 1)**2`` components: degree l = 0, 1, ..., lmax in
ascending order, and inside degree l the orders m = -l, ..., l, so component ``l*l + l + m`` is e^l_m.  With
parity (O(3)) every degree comes twice, even then odd: ``[l=0 even, l=0 odd, l=1 even, l=1 odd, ...]``, each
block again ordered m = -l..l, so the dimension doubles.

>>> feature_dim(2), basis_index(1, -1), basis_index(2, 2)
(9, 1, 8)
>>> block_offsets(1, parity=True)
{(0, 1): 0, (0, -1): 1, (1, 1): 2, (1, -1): 5}
>>> basis_labels(1)
('e^0_0', 'e^1_-1', 'e^1_0', 'e^1_1')
>>> basis_labels(1, parity=True)
('e^0e_0', 'e^0o_0', 'e^1e_-1', 'e^1e_0', 'e^1e_1', 'e^1o_-1', 'e^1o_0', 'e^1o_1')
>>> check_lmax(-1)
Traceback (most recent call last):
...
ValueError: lmax: expected a non-negative int, got -1
"""
from __future__ import annotations

import numpy as np

from ..algebra import check_count, check_flag
from ..limits import check_size


def check_lmax(value: object, argument: str = "lmax") -> int:
    """Return `value` as a non-negative int, or raise TypeError / ValueError naming `argument`."""
    return check_count(value, argument, minimum=0)


def check_order(l: int, m: object, argument: str = "m") -> int:
    """Return `m` as an int with -l <= m <= l, or raise naming `argument`."""
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"{argument}: expected an int in -{l}..{l}, got {type(m).__name__} {m!r}")
    if not -l <= m <= l:
        raise ValueError(f"{argument}: expected an int in -{l}..{l} for degree l = {l}, got {m}")
    return int(m)


def check_parity(value: object, argument: str = "parity") -> bool:
    """Return `value` if it is a bool, else raise TypeError naming `argument`."""
    return check_flag(value, argument)


def feature_dim(lmax: int, parity: bool = False) -> int:
    """``(lmax + 1)**2`` components, twice that with parity."""
    return (check_lmax(lmax) + 1) ** 2 * (2 if check_parity(parity) else 1)


def basis_index(l: int, m: int, p: int | None = None) -> int:
    """The position of e^l_m in the basis; with ``p`` (+1 even, -1 odd) the position in the O(3) basis."""
    l = check_lmax(l, "l")
    m = check_order(l, m)
    if p is None:
        return l * l + l + m
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)) or p not in (1, -1):
        raise ValueError(f"p: expected +1 (even) or -1 (odd), got {p!r:.80}")
    return 2 * l * l + (0 if p == 1 else 2 * l + 1) + l + m


def irreps(lmax: int, parity: bool = False) -> tuple[tuple[int, int | None], ...]:
    """The blocks of the basis in order: ``(l, p)`` pairs, p = +1 even, -1 odd, or None without parity."""
    lmax = check_lmax(lmax)
    check_size(lmax + 1, "lmax", f"degrees up to lmax = {lmax}", "use a smaller lmax")
    if check_parity(parity):
        return tuple((l, p) for l in range(lmax + 1) for p in (1, -1))
    return tuple((l, None) for l in range(lmax + 1))


def block_offsets(lmax: int, parity: bool = False) -> dict[tuple[int, int | None], int]:
    """``{(l, p): index of e^l_{-l} in that block}`` for the blocks of `irreps`."""
    offsets: dict[tuple[int, int | None], int] = {}
    start = 0
    for l, p in irreps(lmax, parity):
        offsets[l, p] = start
        start += 2 * l + 1
    return offsets


def basis_labels(lmax: int, parity: bool = False) -> tuple[str, ...]:
    """Labels ``e^l_m`` (``e^le_m`` / ``e^lo_m`` with parity) in basis order."""
    check_size(feature_dim(lmax, parity), "lmax", f"basis labels up to lmax = {lmax}", "use a smaller lmax")
    return tuple(f"e^{l}{'' if p is None else 'e' if p == 1 else 'o'}_{m}"
                 for l, p in irreps(lmax, parity) for m in range(-l, l + 1))
