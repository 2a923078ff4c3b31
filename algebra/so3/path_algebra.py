"""`PathAlgebra`: an SO(3) algebra whose structure constants come in blocks, one per path (l1, l2, l).

The Clebsch-Gordan and Gaunt algebras are both of this form: e^{l1}_{m1} e^{l2}_{m2} = sum_{l <= lmax, m}
c_{l1 l2 l}[m1, m2, m] e^l_m with a small coefficient table per path.  The algebra is structured
(`algebra.structured`): the product of two basis elements reads the paths' tables, and `blocks` hands the
kernels one dense (2 l1 + 1, 2 l2 + 1, 2 l + 1) block per path with its basis offsets, so the zeros between the
blocks are never stored.

>>> from product_interactions.algebra import clebsch_gordan
>>> C = clebsch_gordan(1)
>>> [(b.l1, b.l2, b.l, b.values.shape) for b in C.blocks()][:3]
[(0, 0, 0, (1, 1, 1)), (0, 1, 1, (1, 3, 3)), (1, 0, 1, (3, 1, 3))]
"""
from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import sympy

from ..exact import Entry
from ..structured import StructuredAlgebra
from .basis import basis_labels, block_offsets, irreps
from .surds import PathTable


class Block(NamedTuple):
    """One path's block: ``values[m1 + l1, m2 + l2, m + l]`` couples the basis rows starting at the offsets."""
    l1: int
    l2: int
    l: int
    offsets: tuple[int, int, int]  # (x offset, y offset, z offset) of the blocks' e^l_{-l}
    values: np.ndarray       # float64 (2 l1 + 1, 2 l2 + 1, 2 l + 1)


class PathAlgebra(StructuredAlgebra):
    """Structure constants ``scale * table[(l1, l2, l)]`` (entries ``((m1, m2, m), Surd)``) placed in the basis
    ``basis_labels(lmax, parity)``; with parity, (l1, p1) (l2, p2) -> (l, p1 p2).  `kind` names the builder
    (``"clebsch_gordan"`` or ``"gaunt"``)."""

    _labels: tuple[str, ...]

    def __init__(self, kind: str, lmax: int, parity: bool, table: PathTable, scale: int | sympy.Expr) -> None:
        self.kind, self.lmax, self.parity, self._paths, self._scale = kind, lmax, parity, table, sympy.sympify(scale)
        labels = basis_labels(lmax, parity)
        super().__init__(len(labels), f"{kind}({lmax}{', parity=True' if parity else ''})")
        self._labels = labels
        self._index_of = {label: i for i, label in enumerate(labels)}
        self._offsets = block_offsets(lmax, parity)
        self._irrep = [(l, p, m) for l, p in irreps(lmax, parity) for m in range(-l, l + 1)]

    @functools.cached_property
    def _by_pair(self) -> dict[tuple[int, int, int], dict[tuple[int, int], list[tuple[int, sympy.Expr]]]]:
        """{path: {(m1, m2): [(m, exact value)]}}."""
        lookup: dict[tuple[int, int, int], dict[tuple[int, int], list[tuple[int, sympy.Expr]]]] = {}
        for path, entries in self._paths.items():
            pairs = lookup.setdefault(path, {})
            for (m1, m2, m), value in entries:
                pairs.setdefault((m1, m2), []).append((m, value.to_sympy() * self._scale))
        return lookup

    def _couplings(self) -> Iterator[tuple[int, int | None, int, int | None, int, int | None]]:
        """(l1, p1, l2, p2, l, p) for every pair of blocks and every l they couple to."""
        for (l1, p1), (l2, p2) in ((a, b) for a in irreps(self.lmax, self.parity)
                                   for b in irreps(self.lmax, self.parity)):
            for l in range(abs(l1 - l2), min(l1 + l2, self.lmax) + 1):
                yield l1, p1, l2, p2, l, None if p1 is None else p1 * p2  # type: ignore[operator]  # p2 too

    def sparsity(self) -> tuple[Any, ...]:
        return ("blocks",)

    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        (l1, p1, m1), (l2, p2, m2) = self._irrep[i], self._irrep[j]
        result = {}
        for l in range(abs(l1 - l2), min(l1 + l2, self.lmax) + 1):
            start = self._offsets[l, None if p1 is None else p1 * p2] + l  # type: ignore[operator]  # p2 too
            for m, value in self._by_pair.get((l1, l2, l), {}).get((m1, m2), ()):
                result[start + m] = value
        return result

    def _rule_entries(self) -> Iterator[Entry]:
        for l1, p1, l2, p2, l, p in self._couplings():
            o1, o2, o = self._offsets[l1, p1] + l1, self._offsets[l2, p2] + l2, self._offsets[l, p] + l
            for (m1, m2, m), value in self._paths.get((l1, l2, l), ()):
                yield o1 + m1, o2 + m2, o + m, value.to_sympy() * self._scale

    def label(self, i: int) -> str:
        return self._labels[self.index(i, "i")]

    def _parse(self, label: Any) -> int | None:
        return self._index_of.get(label)

    def _count(self) -> int:
        return sum(len(self._paths.get((l1, l2, l), ())) for l1, _, l2, _, l, _ in self._couplings())

    def _spec(self) -> object:
        return self.builder()

    def builder(self) -> tuple[str, dict[str, Any]]:
        return self.kind, ({"lmax": self.lmax, "parity": self.parity} if self.parity else {"lmax": self.lmax})

    def blocks(self) -> list[Block]:
        """One `Block` per coupling of basis blocks with a nonzero path, in float64."""
        scale = float(self._scale)
        result: list[Block] = []
        for l1, p1, l2, p2, l, p in self._couplings():
            entries = self._paths.get((l1, l2, l), ())
            if not entries:
                continue
            values = np.zeros((2 * l1 + 1, 2 * l2 + 1, 2 * l + 1))
            for (m1, m2, m), value in entries:
                values[m1 + l1, m2 + l2, m + l] = float(value) * scale
            result.append(Block(l1, l2, l, (self._offsets[l1, p1], self._offsets[l2, p2], self._offsets[l, p]),
                                values))
        return result
