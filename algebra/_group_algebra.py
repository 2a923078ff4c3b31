"""The group algebra R[G] of a finite group of permutations: one basis element per group element,
e_g e_h = e_(g h), with (g h)(i) = g(h(i)).  Its centre has one dimension per conjugacy class; it is semisimple
(Maschke), and commutative exactly when G is abelian.

The group is the closure of the given generators (permutations of 0..n-1 as sequences of images);
`symmetric_generators`, `dihedral_generators` and `cyclic_generators` give the usual ones.  Bounded before any
work: the generators' degree n (`MAX_DEGREE`), a cyclic group's order (the lcm of its generator's cycles) and the
images the closure stores (at most `algebra.limits.MAX_ENTRIES`); the closure stops at `MAX_ORDER` elements.

>>> S3 = group_algebra(symmetric_generators(3))
>>> S3.dim, len(S3.center()), S3.is_commutative()
(6, 3, False)
>>> S3.basis[:2]                                      # permutations in cycle notation, () the identity
('()', '(1 2)')
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import sympy

from .algebra import Algebra, check_count
from .limits import MAX_ENTRIES, check_size

#: The largest group built: its multiplication table has MAX_ORDER^2 products.
MAX_ORDER = 1024
#: The most points a permutation may move (its images are stored once per group element): MAX_ENTRIES.
MAX_DEGREE = MAX_ENTRIES

Permutation = tuple[int, ...]


def _check_degree(n: int, argument: str) -> int:
    if n > MAX_DEGREE:
        raise ValueError(f"{argument}: permutations of {n:,} points, more than "
                         f"algebra.group_algebra.MAX_DEGREE = {MAX_DEGREE:,}")
    return n


def _check_permutations(generators: object) -> list[Permutation]:
    if isinstance(generators, (str, bytes)) or not isinstance(generators, Sequence) or not generators:
        raise TypeError(f"generators: expected a non-empty list of permutations (sequences of images of 0..n-1), "
                        f"got {type(generators).__name__}")
    checked = []
    for k, g in enumerate(generators):
        if isinstance(g, Sequence) and not isinstance(g, (str, bytes)):
            _check_degree(len(g), f"generators[{k}]")
        if isinstance(g, (str, bytes)) or not isinstance(g, Sequence) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in g):
            raise TypeError(f"generators[{k}]: expected a sequence of ints, got {g!r:.60}")
        if sorted(g) != list(range(len(g))):
            raise ValueError(f"generators[{k}]: expected a permutation of 0..{len(g) - 1}, got {g!r:.60}")
        checked.append(tuple(g))
    if len({len(g) for g in checked}) != 1:
        raise ValueError(f"generators: expected permutations of one set, got lengths {sorted({len(g) for g in checked})}")
    return checked


def _compose(g: Permutation, h: Permutation) -> Permutation:
    return tuple(g[i] for i in h)


def _order(g: Permutation) -> int:
    """The order of one permutation: the lcm of its cycle lengths."""
    seen, order = bytearray(len(g)), 1
    for start in range(len(g)):
        length, i = 0, start
        while not seen[i]:
            seen[i], i, length = 1, g[i], length + 1
        order = math.lcm(order, max(length, 1))
    return order


def _closure(generators: list[Permutation]) -> list[Permutation]:
    """The group generated, identity first, in order of discovery (breadth first), refused past MAX_ORDER
    elements or MAX_ENTRIES stored images (before building, where one generator's order tells)."""
    degree = len(generators[0])
    known = _order(generators[0]) if len(generators) == 1 else None
    most = min(MAX_ORDER, MAX_ENTRIES // max(degree, 1))
    if known is not None and known > most:
        raise ValueError(f"generators: the cyclic group they generate has {known:,} elements of degree {degree:,}, "
                         f"more than {_limit(most, degree)}")
    identity = tuple(range(degree))
    elements, frontier, seen = [identity], [identity], {identity}
    while frontier:
        found = []
        for g in frontier:
            for s in generators:
                h = _compose(s, g)
                if h not in seen:
                    if len(elements) >= most:
                        raise ValueError(f"generators: the group they generate has more than "
                                         f"{_limit(most, degree)}")
                    seen.add(h)
                    elements.append(h)
                    found.append(h)
        frontier = found
    return elements


def _limit(most: int, degree: int) -> str:
    if most == MAX_ORDER:
        return f"algebra.group_algebra.MAX_ORDER = {MAX_ORDER:,} elements"
    return (f"{most:,} elements, the most whose {degree:,} images each fit in algebra.limits.MAX_ENTRIES = "
            f"{MAX_ENTRIES:,}")


def _cycles(g: Permutation) -> str:
    """Cycle notation on 1..n, fixed points left out: '()' for the identity."""
    seen, parts = set(), []
    for start in range(len(g)):
        if start in seen or g[start] == start:
            continue
        cycle, i = [], start
        while i not in seen:
            seen.add(i)
            cycle.append(str(i + 1))
            i = g[i]
        parts.append("(" + " ".join(cycle) + ")")
    return "".join(parts) or "()"


def group_algebra(generators: Sequence[Sequence[int]], name: str | None = None) -> Algebra:
    """R[G] for the group G generated by `generators` (permutations of 0..n-1 given by their images)."""
    elements = _closure(_check_permutations(generators))
    check_size(len(elements) ** 2, "generators", "products in the group's multiplication table", "use a smaller group")
    index = {g: k for k, g in enumerate(elements)}
    one = sympy.Integer(1)
    table = {(i, j): {index[_compose(g, h)]: one} for i, g in enumerate(elements) for j, h in enumerate(elements)}
    # a table valid by construction (indices of the closure, coefficients 1): built directly, without the
    # per-entry checks of Algebra.from_function, which took 4x as long (8 s for S_6's 518,400 products)
    return Algebra(table, [_cycles(g) for g in elements], name or f"group_algebra(order {len(elements)})")


def symmetric_generators(n: int) -> list[list[int]]:
    """A transposition and an n-cycle, which generate S_n."""
    n = _check_degree(check_count(n, "n", minimum=2), "n")
    return [[1, 0] + list(range(2, n)), list(range(1, n)) + [0]]


def dihedral_generators(n: int) -> list[list[int]]:
    """A rotation and a reflection of the n-gon, which generate the dihedral group of order 2n."""
    n = _check_degree(check_count(n, "n", minimum=3), "n")
    return [list(range(1, n)) + [0], [(-i) % n for i in range(n)]]


def cyclic_generators(n: int) -> list[list[int]]:
    """An n-cycle, which generates the cyclic group of order n."""
    n = _check_degree(check_count(n, "n", minimum=1), "n")
    return [[(i + 1) % n for i in range(n)]]
