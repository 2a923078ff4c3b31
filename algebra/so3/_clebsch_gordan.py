"""Real-basis Clebsch-Gordan coefficients, exact, and the Clebsch-Gordan algebra `clebsch_gordan(lmax)`.

**Definition.**  With <l1 m1 l2 m2 | l m> the standard (Condon-Shortley) coefficients of
``sympy.physics.wigner`` and U_l the unitary change of basis from the complex harmonics (with Condon-Shortley
phase) to the real ones of `spherical_harmonics` (Y_real = U_l Y_complex),

    C^{l m}_{l1 m1, l2 m2} = (-i)^(l1 + l2 - l) sum conj(U_l1[m1, mu1]) conj(U_l2[m2, mu2]) U_l[m, mu]
                                                  <l1 mu1 l2 mu2 | l mu>.

The sum is real up to the factor i^(l1 + l2 - l); the prefactor (-i)^(l1 + l2 - l) is the pinned global phase of
each path (l1, l2, l), chosen so that the tensor is real, e^0_0 is the unit of the algebra
(C^{l m}_{0 0, l m} = C^{l m}_{l m, 0 0} = 1), and the vector paths read

    (x y)_0 = (x . y) / sqrt(3),   (x y)_1 = (x cross y) / sqrt(2)      (1 x 1 -> 0 and 1 x 1 -> 1),

for l = 1 features in the order (y, z, x) of the basis.  For even l1 + l2 + l the prefactor is the sign of
<l1 0 l2 0 | l 0>, so the Gaunt coefficients are *positive* multiples of these (see `gaunt`).

**Properties** (tested): for each path, sum_{m1, m2} C^{l m} C^{l m'} = delta_{m m'} (orthonormal columns);
C_{l2 l1}[m2, m1, m] = (-1)^(l1 + l2 - l) C_{l1 l2}[m1, m2, m]; the selection rule of the real basis: nonzero
only where |m| = |m1| + |m2| or ||m1| - |m2||, with m >= 0 exactly when m1 and m2 have the same sign type
(both >= 0 or both < 0) on even paths (l1 + l2 + l even) and different types on odd ones (cos x cos and
sin x sin give cosines, cos x sin gives sines; odd paths swap the two).  The entries are exact real sympy
numbers (each a rational multiple of one square root here, but nothing relies on that); every product is
equivariant, D(R) x * D(R) y = D(R) (x * y).

The coefficients are computed once per path from ``sympy.physics.wigner.wigner_3j`` (one call per class of the
3j symbol under its 12 column permutation and sign symmetries), cached in memory and, per lmax, on disk (see
`cache`).

>>> C = clebsch_gordan(1)
>>> C.basis
('e^0_0', 'e^1_-1', 'e^1_0', 'e^1_1')
>>> y, z = C.basis_element("e^1_-1"), C.basis_element("e^1_0")
>>> y * z, z * y, y * y
(sqrt(2)/2*e^1_1, -sqrt(2)/2*e^1_1, sqrt(3)/3*e^0_0)
>>> C.unit()
e^0_0
"""
from __future__ import annotations

import functools
import itertools
import random
import warnings
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import sympy
from numpy.typing import DTypeLike

from ..exact import check_dtype
from ..limits import MAX_ENTRIES
from .basis import block_offsets, check_lmax, check_parity, feature_dim, irreps
from .cache import load_table, store_table
from .path_algebra import PathAlgebra
from .rotations import rotation_from_euler
from .surds import PathEntries, PathTable, Surd
from .wigner import wigner_D


#: The most (m1, m2) pairs of one path computed exactly (each needs sympy's wigner_3j; 2^14 take seconds).
MAX_PATH_PAIRS = 2**14

#: Entries of each path that `verify_table` recomputes exactly (about a tenth of computing the table afresh).
CHECKED_ENTRIES = 3


# ---------------------------------------------------------------------- complex coefficients, from sympy
@functools.lru_cache(maxsize=None)
def _wigner_3j_class(columns: tuple[tuple[int, int], ...]) -> Surd:
    from sympy.physics.wigner import wigner_3j    # imports sympy.physics.units (0.2 s): only when first computed

    (l1, m1), (l2, m2), (l3, m3) = columns
    return Surd.from_sympy(wigner_3j(l1, l2, l3, m1, m2, m3))


def _wigner_3j(l1: int, m1: int, l2: int, m2: int, l3: int, m3: int) -> Surd:
    """The 3j symbol (m1 + m2 + m3 = 0, triangle holds), one sympy call per symmetry class: a column
    permutation or flipping all m's multiplies it by (-1)^(l1 + l2 + l3) when odd, by 1 when even."""
    columns = ((l1, m1), (l2, m2), (l3, m3))
    variants = []
    for flip, variant in enumerate((columns, tuple((l, -m) for l, m in columns))):
        inversions = (variant[0] > variant[1]) + (variant[0] > variant[2]) + (variant[1] > variant[2])
        variants.append((tuple(sorted(variant)), (inversions + flip) % 2))
    canonical, odd_move = min(variants)             # equal columns with an odd sum make the symbol 0 anyway
    value = _wigner_3j_class(canonical)
    return -value if odd_move and (l1 + l2 + l3) % 2 else value


@functools.lru_cache(maxsize=None)
def _sqrt_int(n: int) -> Surd:
    return Surd.from_sympy(sympy.sqrt(n))


@functools.lru_cache(maxsize=None)
def complex_clebsch_gordan(l1: int, m1: int, l2: int, m2: int, l: int, m: int) -> Surd:
    """<l1 m1 l2 m2 | l m> (Condon-Shortley) as a `Surd`, via sympy's wigner_3j; zero off the selection rules."""
    if m != m1 + m2 or not abs(l1 - l2) <= l <= l1 + l2 or max(abs(m1) - l1, abs(m2) - l2, abs(m) - l) > 0:
        return Surd()
    value = _sqrt_int(2 * l + 1) * _wigner_3j(l1, m1, l2, m2, l, -m)
    return -value if (l1 - l2 + m) % 2 else value


# ---------------------------------------------------------------------- the real basis
def _phase(m: int, mu: int) -> int | None:
    """k with U[m, mu] = i^k / sqrt(2)^(m != 0), or None where U[m, mu] = 0.

    Y_real^m = ((-1)^m Y^m + Y^-m) / sqrt(2) and Y_real^-m = i (Y^-m - (-1)^m Y^m) / sqrt(2) for m > 0."""
    if abs(mu) != abs(m):
        return None
    if m == 0:
        return 0
    odd = abs(m) % 2
    if m > 0:
        return 2 * odd if mu == m else 0
    return 1 if mu == m else (3 + 2 * odd) % 4


@functools.lru_cache(maxsize=None)
def _half_root_power(n: int) -> Surd:
    """2^(-n/2)."""
    return Surd.from_terms([(1 + n % 2, Fraction(1, 2 ** ((n + 1) // 2)))])


def _real_entry(l1: int, m1: int, l2: int, m2: int, l: int, m: int) -> Surd:
    parts: tuple[list[tuple[int, Fraction]], list[tuple[int, Fraction]]] = ([], [])   # real, imaginary (s, c)
    global_phase = 3 * (l1 + l2 - l)                              # (-i)^n = i^(3n)
    for mu1, mu2 in itertools.product({m1, -m1}, {m2, -m2}):
        k = _phase(m, mu1 + mu2)
        if k is None:
            continue
        power = (k - _phase(m1, mu1) - _phase(m2, mu2) + global_phase) % 4  # type: ignore[operator]  # |mu| = |m|
        sign = 1 if power < 2 else -1
        parts[power % 2].extend((s, sign * c) for s, c in complex_clebsch_gordan(l1, mu1, l2, mu2, l, mu1 + mu2).terms)
    if Surd.from_terms(parts[1]):
        raise ArithmeticError(f"the real Clebsch-Gordan coefficient ({l1} {m1} {l2} {m2} | {l} {m}) came out "
                              f"complex; the phase convention is broken")
    return Surd.from_terms(parts[0]) * _half_root_power((m1 != 0) + (m2 != 0) + (m != 0))


@functools.lru_cache(maxsize=None)
def _real_path(l1: int, l2: int, l: int) -> PathEntries:
    """The nonzero ``((m1, m2, m), Surd)`` of the path, m1 and m2 ascending."""
    if not abs(l1 - l2) <= l <= l1 + l2:
        return ()
    entries: list[tuple[tuple[int, int, int], Surd]] = []
    odd = (l1 + l2 + l) % 2
    for m1, m2 in itertools.product(range(-l1, l1 + 1), range(-l2, l2 + 1)):
        a, b = abs(m1), abs(m2)
        # m >= 0 (cosine type) exactly when m1, m2 have the same type, for even paths; the opposite for odd ones
        cosine = ((m1 >= 0) == (m2 >= 0)) != bool(odd)
        for size in sorted({a + b, abs(a - b)}):
            m = size if cosine else -size
            if size <= l and (size or cosine):
                value = _real_entry(l1, m1, l2, m2, l, m)
                if value:
                    entries.append(((m1, m2, m), value))
    return tuple(sorted(entries))


def _check_path(l1: int, l2: int, l: int) -> tuple[int, int, int]:
    l1, l2, l = check_lmax(l1, "l1"), check_lmax(l2, "l2"), check_lmax(l, "l")
    size = (2 * l1 + 1) * (2 * l2 + 1) * (2 * l + 1)
    if size > MAX_ENTRIES:
        raise ValueError(f"l1, l2, l: the path ({l1}, {l2}, {l}) has a ({2 * l1 + 1}, {2 * l2 + 1}, {2 * l + 1}) "
                         f"block of {size:,} entries, more than algebra.limits.MAX_ENTRIES = {MAX_ENTRIES:,}")
    pairs = (2 * l1 + 1) * (2 * l2 + 1)
    if pairs > MAX_PATH_PAIRS:
        raise ValueError(f"l1, l2: the path ({l1}, {l2}, {l}) needs exact 3j symbols for {pairs:,} pairs (m1, m2), "
                         f"more than MAX_PATH_PAIRS = {MAX_PATH_PAIRS:,}")
    return l1, l2, l


def clebsch_gordan_coefficients(l1: int, l2: int, l: int) -> dict[tuple[int, int, int], sympy.Expr]:
    """The nonzero real coefficients of the path, ``{(m1, m2, m): exact sympy number}`` (empty off the triangle).

    >>> clebsch_gordan_coefficients(1, 1, 0)
    {(-1, -1, 0): sqrt(3)/3, (0, 0, 0): sqrt(3)/3, (1, 1, 0): sqrt(3)/3}
    """
    return {key: value.to_sympy() for key, value in _real_path(*_check_path(l1, l2, l))}


def clebsch_gordan_path(l1: int, l2: int, l: int, dtype: DTypeLike = np.float64) -> np.ndarray:
    """The dense (2 l1 + 1, 2 l2 + 1, 2 l + 1) array C[m1 + l1, m2 + l2, m + l]; ``dtype=object`` is exact."""
    l1, l2, l = _check_path(l1, l2, l)
    out = np.zeros((2 * l1 + 1, 2 * l2 + 1, 2 * l + 1), dtype=check_dtype(dtype, allow_object=True))
    for (m1, m2, m), value in _real_path(l1, l2, l):
        out[m1 + l1, m2 + l2, m + l] = value.to_sympy() if out.dtype == object else float(value)
    return out


# ---------------------------------------------------------------------- all paths up to lmax, assembled
def check_table_lmax(lmax: object) -> int:
    """`lmax` (see `check_lmax`) when its table of paths stays within ``MAX_ENTRIES``, else ValueError.

    The bound counts at most two entries per (m1, m2) of a path (the real selection rule); it is summed with an
    early stop, so refusing a huge lmax is instant.
    """
    lmax = check_lmax(lmax)
    bound = 0
    for l1 in range(lmax + 1):
        for l2 in range(lmax + 1):
            for l in range(abs(l1 - l2), min(l1 + l2, lmax) + 1):
                bound += min(2 * (2 * l1 + 1) * (2 * l2 + 1), (2 * l1 + 1) * (2 * l2 + 1) * (2 * l + 1))
                if bound > MAX_ENTRIES:
                    raise ValueError(f"lmax: the coefficient tables up to lmax = {lmax} hold more than "
                                     f"algebra.limits.MAX_ENTRIES = {MAX_ENTRIES:,} entries; use a smaller lmax, "
                                     f"or clebsch_gordan_path for single paths")
    return lmax


def paths(lmax: int) -> tuple[tuple[int, int, int], ...]:
    """The paths (l1, l2, l) with l1, l2, l <= lmax and |l1 - l2| <= l <= l1 + l2, sorted."""
    lmax = check_table_lmax(lmax)
    return tuple((l1, l2, l) for l1 in range(lmax + 1) for l2 in range(lmax + 1)
                 for l in range(abs(l1 - l2), min(l1 + l2, lmax) + 1))


def verify_table(lmax: int, table: PathTable) -> None:
    """Raise ValueError naming the path unless `table` (read from the disk cache) is the exact one.

    Checked: the paths are exactly `paths(lmax)`; every entry has |m1| <= l1, |m2| <= l2, |m| <= l and obeys the
    real selection rule; the swap symmetry C_{l2 l1}[m2, m1, m] = (-1)^(l1 + l2 - l) C_{l1 l2}[m1, m2, m] holds
    exactly; each path's columns are orthonormal and the path is equivariant under two fixed generic rotations
    (in float64, to 1e-9), which generate a dense subgroup of SO(3).  The equivariant maps of a path form one line
    (l appears once in l1 x l2), so these leave a path to be +-C; `CHECKED_ENTRIES` of its entries (the first,
    the last and one drawn at random) recomputed exactly fix its sign and their values, and the paths with
    l1 + l2 <= 2 are compared whole.  A checksum recomputed after an edit forges none of this: a whole path
    negated with its mirror is caught by its exact entries.  What it leaves open is a change below 1e-9 to an
    entry not recomputed, by someone who can write the user's own cache (the trust rule of `cache`).
    """
    expected = paths(lmax)
    rotations = [{l: wigner_D(l, rotation_from_euler(*angles)) for l in range(lmax + 1)}
                 for angles in ((0.3, 1.1, 2.0), (1.7, 0.4, -0.9))]
    if set(table) != set(expected):
        raise ValueError(f"paths: expected the {len(expected)} paths up to lmax = {lmax}, got {len(table)} "
                         f"different ones")
    for (l1, l2, l), entries in table.items():
        where = f"path ({l1}, {l2}, {l})"
        if len({key for key, _ in entries}) != len(entries):
            raise ValueError(f"{where}: an (m1, m2, m) appears twice")
        columns = np.zeros(((2 * l1 + 1) * (2 * l2 + 1), 2 * l + 1))
        for (m1, m2, m), value in entries:
            if not (abs(m1) <= l1 and abs(m2) <= l2 and abs(m) <= l) or not _allowed(m1, m2, m, (l1 + l2 + l) % 2):
                raise ValueError(f"{where}: (m1, m2, m) = ({m1}, {m2}, {m}) is out of range or breaks the "
                                 f"selection rule")
            columns[(m1 + l1) * (2 * l2 + 1) + m2 + l2, m + l] = float(value)
        sign = -1 if (l1 + l2 - l) % 2 else 1
        mirrored = {(m2, m1, m): value if sign == 1 else -value for (m1, m2, m), value in table[l2, l1, l]}
        if dict(entries) != mirrored:
            raise ValueError(f"{where}: not (-1)^(l1 + l2 - l) times the path ({l2}, {l1}, {l}) swapped")
        if not np.allclose(columns.T @ columns, np.eye(2 * l + 1), rtol=0, atol=1e-9):
            raise ValueError(f"{where}: the columns are not orthonormal")
        block = columns.reshape(2 * l1 + 1, 2 * l2 + 1, 2 * l + 1)
        for D in rotations:
            if not np.allclose(np.einsum("abk,ai,bj->ijk", block, D[l1], D[l2]),
                               np.einsum("kq,ijq->ijk", D[l], block), rtol=0, atol=1e-9):
                raise ValueError(f"{where}: not equivariant: C(D x, D y) != D C(x, y) for a rotation D")
        if l1 + l2 <= 2:
            if entries != _real_path(l1, l2, l):
                raise ValueError(f"{where}: differs from the exact coefficients")
            continue
        for (m1, m2, m), value in _sampled(entries):
            exact = _real_entry(l1, m1, l2, m2, l, m)
            if value != exact:
                raise ValueError(f"{where}: the entry (m1, m2, m) = ({m1}, {m2}, {m}) is {value.to_sympy()}, the "
                                 f"exact coefficient is {exact.to_sympy()}")


def _sampled(entries: PathEntries) -> list[tuple[tuple[int, int, int], Surd]]:
    """The first and the last of `entries` and others drawn at random, `CHECKED_ENTRIES` in all (fewer where the
    path has fewer); drawn afresh on every load, so no edit can count on being left unchecked."""
    if len(entries) <= CHECKED_ENTRIES:
        return list(entries)
    drawn = random.SystemRandom().sample(range(1, len(entries) - 1), CHECKED_ENTRIES - 2)
    return [entries[0], *(entries[n] for n in drawn), entries[-1]]


def _allowed(m1: int, m2: int, m: int, odd: int) -> bool:
    """The real selection rule of the module docstring."""
    a, b = abs(m1), abs(m2)
    cosine = ((m1 >= 0) == (m2 >= 0)) != bool(odd)
    return abs(m) in (a + b, abs(a - b)) and (m >= 0) == cosine


@functools.lru_cache(maxsize=None)
def path_table(lmax: int) -> PathTable:
    """``{path: entries}`` for every path up to lmax, from the disk cache when it holds a valid table.

    A cached table that fails to load or `verify_table` is recomputed and rewritten, with a warning.
    """
    expected = paths(lmax)
    try:
        table = load_table("clebsch_gordan", lmax, max_entries=MAX_ENTRIES, largest_prime=3 * lmax + 1)
        if table is not None:
            verify_table(lmax, table)
    except ValueError as error:
        warnings.warn(f"clebsch_gordan: ignoring the invalid disk cache ({error}); recomputing and rewriting it",
                      RuntimeWarning, stacklevel=2)
        table = None
    if table is None:
        table = {path: _real_path(*path) for path in expected}
        store_table("clebsch_gordan", lmax, table)
    return table


def assemble(lmax: int, parity: bool, table: PathTable) -> Iterator[tuple[int, int, int, Surd]]:
    """Yield ``(i, j, k, value)``: every path entry of `table` placed in the basis ``basis_labels(lmax, parity)``.

    With parity, the path (l1, l2, l) couples (l1, p1) and (l2, p2) into (l, p1 p2) for all four p1, p2.
    """
    offsets = block_offsets(lmax, parity)
    for (l1, p1), (l2, p2) in itertools.product(irreps(lmax, parity), repeat=2):
        p = None if p1 is None else p1 * p2  # type: ignore[operator]  # p2 is None exactly when p1 is
        for l in range(abs(l1 - l2), min(l1 + l2, lmax) + 1):
            o1, o2, o = offsets[l1, p1] + l1, offsets[l2, p2] + l2, offsets[l, p] + l
            for (m1, m2, m), value in table.get((l1, l2, l), ()):
                yield o1 + m1, o2 + m2, o + m, value


def clebsch_gordan_tensor(lmax: int, parity: bool = False, dtype: DTypeLike = np.float64) -> np.ndarray:
    """The dense structure constants lam[i, j, k] of ``clebsch_gordan(lmax, parity)`` (fast, numeric)."""
    lmax, parity = check_table_lmax(lmax), check_parity(parity)
    out = np.zeros((feature_dim(lmax, parity),) * 3, dtype=check_dtype(dtype, allow_object=True))
    for i, j, k, value in assemble(lmax, parity, path_table(lmax)):
        out[i, j, k] = value.to_sympy() if out.dtype == object else float(value)
    return out


def clebsch_gordan(lmax: int, parity: bool = False) -> PathAlgebra:
    """The Clebsch-Gordan algebra on ``basis_labels(lmax, parity)``, truncated at lmax.

    e^{l1}_{m1} e^{l2}_{m2} = sum_{l <= lmax, m} C^{l m}_{l1 m1, l2 m2} e^l_m (see the module docstring);
    ``parity=True`` gives the O(3) version with even and odd copies of each degree, parities multiplying.
    What holds (tested): e^0_0 (e^0e_0 with parity) is the two-sided unit; the algebra is neither commutative
    nor anticommutative for lmax >= 1 (each path is symmetric or antisymmetric by (-1)^(l1 + l2 - l)); it is
    not associative for lmax >= 1 (not even untruncated, the Clebsch-Gordan product is not associative); it is
    equivariant under the rotations acting by `representation`.  Structured (`path_algebra`): the per-path
    tables are computed once per lmax (and cached on disk), the instance itself costs nothing.
    """
    lmax, parity = check_table_lmax(lmax), check_parity(parity)
    return PathAlgebra("clebsch_gordan", lmax, parity, path_table(lmax), 1)
