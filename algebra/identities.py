"""Exact checks of algebra identities on sparse structure constants.

`entries` is a list of ``(i, j, k, c)`` with c a nonzero sympy value: the coefficient of e_k in e_i e_j.
All checks are exact.  Rational tables are checked with integer sparse matrix products (common denominator
cleared, overflow ruled out beforehand); algebraic ones are screened in floating point, which answers "no" only
where an associator entry exceeds its rounding-error bound (a proof that it is nonzero), and are otherwise proved
in an exact sympy domain; symbolic ones go to the exact domain directly.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy

from .exact import Entry, common_integer_scaling, exact_domain, is_zero

if TYPE_CHECKING:
    from sympy.polys.domains import Domain

#: A sparse tensor over an exact domain: ``{(i, j, k, m): nonzero domain element}``.
DomainTensor = dict[tuple[int, int, int, int], Any]

_CHUNK_ENTRIES = 2**22  # bound on the associator entries held at once by the integer path

#: The most products of two structure constants an exact check of the associator over all basis triples may
#: compute (group_algebra of S_5: 3.5 million, 0.4 s; of S_6: 746 million, 30 s and 850 MB, refused).
MAX_ASSOCIATOR_TERMS = 2**26


def check_associator_cost(entries: Sequence[Entry], dim: int, query: str) -> None:
    """A ValueError, before any work, when the associator of all basis triples takes more than
    `MAX_ASSOCIATOR_TERMS` products: sum over the constants e_i e_j -> e_p of how many constants start (left
    side) or end (right side) at p, counted from the entries alone."""
    outputs: defaultdict[int, int] = defaultdict(int)
    firsts: defaultdict[int, int] = defaultdict(int)
    seconds: defaultdict[int, int] = defaultdict(int)
    for i, j, k, _ in entries:
        outputs[k] += 1
        firsts[i] += 1
        seconds[j] += 1
    terms = sum(count * (firsts[p] + seconds[p]) for p, count in outputs.items())
    if terms > MAX_ASSOCIATOR_TERMS:
        raise ValueError(f"{query}: the associator (e_i e_j) e_k - e_i (e_j e_k) over all basis triples of this "
                         f"{dim}-dimensional algebra takes {terms:,} products of structure constants, more than "
                         f"algebra.identities.MAX_ASSOCIATOR_TERMS = {MAX_ASSOCIATOR_TERMS:,} (about "
                         f"{terms / 2.5e7:,.0f} s); ask on a smaller algebra")


def _in_domain(entries: Sequence[Entry]) -> tuple[Domain, list[tuple[int, int, int, Any]]]:
    domain, values = exact_domain(c for *_, c in entries)
    return domain, [(i, j, k, v) for (i, j, k, _), v in zip(entries, values)]


def _numeric(entries: Sequence[Entry]) -> np.ndarray | None:
    """Float values of the entries, or None when some coefficient has symbols."""
    if any(c.free_symbols for *_, c in entries):
        return None
    return np.array([float(c) for *_, c in entries])


def is_symmetric(entries: Iterable[Entry], sign: int) -> bool:
    """True when lam[i, j, k] == sign * lam[j, i, k] for all i, j, k (sign +1: commutative, -1: anticommutative).

    Canonical sympy forms that agree settle most pairs; the rest are proved zero or nonzero by `is_zero`.
    """
    table = {(i, j, k): c for i, j, k, c in entries}
    return all(is_zero(v - sign * table.get((j, i, k), 0)) for (i, j, k), v in table.items()
               if v != sign * table.get((j, i, k), 0))


def associator_tensors(entries: Sequence[Entry], query: str = "associator_tensors"
                       ) -> tuple[DomainTensor, DomainTensor, Domain]:
    """The two sides of associativity as sparse tensors over one exact domain.

    Returns ``(left, right, domain)`` with left[(i, j, k, m)] the e_m coefficient of (e_i e_j) e_k and
    right[(i, j, k, m)] that of e_i (e_j e_k); zero entries are dropped.
    """
    check_associator_cost(entries, 1 + max((max(e[:3]) for e in entries), default=-1), query)
    domain, converted = _in_domain(entries)
    by_first = defaultdict(list)   # p -> [(k, m, c)] from entries e_p e_k = c e_m
    by_second = defaultdict(list)  # p -> [(i, m, c)] from entries e_i e_p = c e_m
    for i, j, k, c in converted:
        by_first[i].append((j, k, c))
        by_second[j].append((i, k, c))
    left: defaultdict[tuple[int, int, int, int], Any]
    right: defaultdict[tuple[int, int, int, int], Any]
    left, right = defaultdict(lambda: domain.zero), defaultdict(lambda: domain.zero)
    for i, j, p, c1 in converted:            # (e_i e_j) e_k = sum_p c1 e_p e_k
        for k, m, c2 in by_first[p]:
            left[i, j, k, m] += c1 * c2
    for j, k, p, c1 in converted:            # e_i (e_j e_k) = sum_p c1 e_i e_p
        for i, m, c2 in by_second[p]:
            right[i, j, k, m] += c1 * c2
    nonzero = lambda t: {key: v for key, v in t.items() if v}  # noqa: E731
    return nonzero(left), nonzero(right), domain


def _associator_parts(i: np.ndarray, j: np.ndarray, k: np.ndarray, values: np.ndarray, dim: int,
                      sign: int) -> Iterator[Any]:
    """(e_i e_j) e_k + sign * e_i (e_j e_k) over all basis triples, by sparse matrix products (ints or floats), as
    scipy sparse matrices [(i, j), (k, m)], one per chunk of i."""
    import scipy.sparse as sp                # 0.2 s to import: only when associativity is asked for

    d = dim
    pair_rows = sp.csr_matrix((values, (i * d + j, k)), shape=(d * d, d))      # [(i, j), p]
    first = sp.csr_matrix((values, (i, j * d + k)), shape=(d, d * d))          # [p, (k, m)]
    second = sp.csc_matrix((values, (j, i * d + k)), shape=(d, d * d))         # [p, (i, m)]
    fan_out = int(np.diff(first.indptr).max())   # entries sharing a first index bound the associator size
    chunk = max(1, d * _CHUNK_ENTRIES // max(1, len(values) * fan_out))
    for start in range(0, d, chunk):
        stop = min(d, start + chunk)
        left = pair_rows[start * d:stop * d] @ first                           # [(i, j), (k, m)], i in chunk
        right = (pair_rows @ second[:, start * d:stop * d]).tocoo()            # [(j, k), (i, m)], i in chunk
        rj, rk = np.divmod(right.row.astype(np.int64), d)
        ri, rm = np.divmod(right.col.astype(np.int64), d)
        yield left + sign * sp.csr_matrix((right.data, (ri * d + rj, rk * d + rm)), shape=left.shape)


def _associator_gap(i: np.ndarray, j: np.ndarray, k: np.ndarray, values: np.ndarray, dim: int) -> int | np.number:
    """max |(e_i e_j) e_k - e_i (e_j e_k)| over all basis triples."""
    return max((abs(part).max() for part in _associator_parts(i, j, k, values, dim, -1)), default=0)


def _surely_not_associative(i: np.ndarray, j: np.ndarray, k: np.ndarray, values: np.ndarray, dim: int) -> bool:
    """True when some float associator entry exceeds its rounding-error bound, so that the exact entry is
    nonzero.  Each entry is a difference of two sums of at most dim products of constants that each carry a
    relative error up to 2 eps; its error is then below (2 dim + 8) eps times the same sums over absolute values,
    plus 2 dim times the smallest subnormal for products that underflow, bounded here with a factor 2 to spare.
    False proves nothing."""
    relative, absolute = 2 * (2 * dim + 8) * float(np.finfo(float).eps), 4 * dim * 2.0**-1074
    return any((abs(part) - relative * size).max() > absolute for part, size in zip(
        _associator_parts(i, j, k, values, dim, -1), _associator_parts(i, j, k, np.abs(values), dim, +1)))


def is_associative(entries: Sequence[Entry], dim: int) -> bool:
    """True when (e_i e_j) e_k == e_i (e_j e_k) for all basis triples, decided exactly.

    Rational tables: integer arithmetic after clearing denominators.  Other numbers: a float check settles
    "not associative"; "associative" is then proved in an exact domain.  Symbols: the exact domain directly.
    """
    if not entries:
        return True
    check_associator_cost(entries, dim, "is_associative")
    i, j, k = (np.array(column, dtype=np.int64) for column in zip(*[e[:3] for e in entries]))
    scaled = common_integer_scaling([c for *_, c in entries])
    if scaled is not None:
        integers, _ = scaled
        bound = max(abs(v) for v in integers)
        if bound * bound * dim < 2**62:
            return bool(_associator_gap(i, j, k, np.array(integers, dtype=np.int64), dim) == 0)
    numeric = _numeric(entries)
    if numeric is not None and _surely_not_associative(i, j, k, numeric, dim):
        return False
    left, right, _ = associator_tensors(entries, "is_associative")
    return left == right


def _associator(entries: Sequence[Entry], query: str) -> DomainTensor:
    """(e_i e_j) e_k - e_i (e_j e_k) at e_m, as ``{(i, j, k, m): value}`` over one exact domain, zeros dropped."""
    left, right, domain = associator_tensors(entries, query)
    total = dict(left)
    for key, value in right.items():
        total[key] = total.get(key, domain.zero) - value
    return {key: value for key, value in total.items() if value}


def _cancels(tensor: DomainTensor, *orders: tuple[int, int, int]) -> bool:
    """True when the sum over `orders` (a group of permutations) of tensor[(i, j, k) permuted, m] is 0 for every
    (i, j, k, m), exactly; only the (i, j, k, m) whose permutations meet a nonzero entry need a look."""
    def moved(key: tuple[int, int, int, int], order: tuple[int, int, int]) -> tuple[int, int, int, int]:
        return key[order[0]], key[order[1]], key[order[2]], key[3]

    for key in {moved(key, order) for key in tensor for order in orders}:
        present = [v for v in (tensor.get(moved(key, order)) for order in orders) if v is not None]
        if present and sum(present[1:], present[0]):
            return False
    return True


def is_alternative(entries: Sequence[Entry]) -> bool:
    """True when (x x) y = x (x y) and (y x) x = y (x x) for all x, y: the associator changes sign under a swap
    of its first two and of its last two arguments (the linear form, exact in characteristic 0)."""
    associator = _associator(entries, "is_alternative")
    return _cancels(associator, (0, 1, 2), (1, 0, 2)) and _cancels(associator, (0, 1, 2), (0, 2, 1))


def is_flexible(entries: Sequence[Entry]) -> bool:
    """True when (x y) x = x (y x) for all x, y: the associator changes sign when its outer arguments swap."""
    return _cancels(_associator(entries, "is_flexible"), (0, 1, 2), (2, 1, 0))


def satisfies_jacobi(entries: Sequence[Entry]) -> bool:
    """True when (x y) z + (y z) x + (z x) y = 0 for all x, y, z (on basis triples, exactly)."""
    left, _, _ = associator_tensors(entries, "is_lie")
    return _cancels(left, (0, 1, 2), (1, 2, 0), (2, 0, 1))


def proportionality(left: Mapping[tuple[int, int, int, int], Any], right: Mapping[tuple[int, int, int, int], Any],
                    domain: Domain) -> sympy.Expr | None:
    """The scalar c with left == c * right (both nonzero sparse tensors over `domain`), or None."""
    if left.keys() != right.keys() or not left:
        return None
    key = next(iter(left))
    field = domain.get_field()
    ratio = field.convert_from(left[key], domain) / field.convert_from(right[key], domain)
    if all(field.convert_from(v, domain) == ratio * field.convert_from(right[k], domain) for k, v in left.items()):
        return field.to_sympy(ratio)
    return None
