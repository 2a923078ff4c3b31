"""Structured algebras: builders whose product is a rule keep the rule and build tables only when asked.

A `StructuredAlgebra` answers its dimension, its number of nonzero structure constants, a basis label, the index
of a label and the product of two basis elements by index arithmetic, in time independent of its size.  The
table of structure constants (``entries()``, ``structure_constants()`` and the queries that need it) is built on
first use, after checking that it stays within ``MAX_ENTRIES``; so is the tuple of all labels (``basis``).  The
kernels read the rule itself (see `kernels.products.factor`), so lowering a product never materialises a table either.

>>> from product_interactions.algebra import position
>>> B = position(10**9)                       # instant: nothing is stored
>>> B.dim, B.nnz, B.label(41), B.index("g_42"), B.product_of_basis(5, 5)
(1000000000, 1000000000, 'g_42', 41, {5: 1})
>>> B.entries()
Traceback (most recent call last):
...
ValueError: entries: position(1000000000) has 1,000,000,000 nonzero structure constants, more than algebra.limits.MAX_ENTRIES = 1,048,576; its rule is used without them (kernels, products of elements)
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import sympy

from .algebra import Algebra, Table, check_index
from .exact import Entry
from .labels import Key, Label
from .limits import MAX_ENTRIES, check_size


def _refuse(what: str, name: str, count: int, unit: str) -> None:
    if count > MAX_ENTRIES:
        raise ValueError(f"{what}: {name} has {count:,} {unit}, more than algebra.limits.MAX_ENTRIES = "
                         f"{MAX_ENTRIES:,}; its rule is used without them (kernels, products of elements)")


class StructuredAlgebra(Algebra):
    """Base of the rule-based builders (see the module docstring).

    Subclasses define ``_rule(i, j) -> {k: c}`` (the product of basis elements e_i e_j, exact coefficients),
    ``label(i)``, ``_parse(label) -> index or None``, ``_count()`` (nnz by formula) and ``_spec()`` (a hashable
    description: two algebras of one class with equal specs are equal) and ``builder() -> (name, params)`` (the
    public builder call that rebuilds it, for `algebra.serialization`); ``_rule_entries()`` may yield the nonzero
    ``(i, j, k, c)`` faster than asking `_rule` for every pair.
    """

    _labels: tuple[Label, ...] | None
    _materialised: Table | None

    def __init__(self, dim: int, name: str) -> None:
        self._dim, self.name = dim, name
        self._labels = self._materialised = None

    # ------------------------------------------------------------------ the rule (subclasses)
    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        raise NotImplementedError

    def label(self, i: int) -> Label:
        raise NotImplementedError

    def _parse(self, label: Any) -> int | None:
        return None

    def _count(self) -> int:
        raise NotImplementedError

    def _spec(self) -> object:
        raise NotImplementedError

    def builder(self) -> tuple[str, dict[str, Any]]:
        """``(builder name, keyword arguments)``: the call of `algebra` that builds this algebra again."""
        raise NotImplementedError

    def _rule_entries(self) -> Iterator[Entry]:
        for i, j in itertools.product(range(self._dim), repeat=2):
            for k, c in sorted(self._rule(i, j).items()):
                yield i, j, k, c

    # ------------------------------------------------------------------ Algebra, answered from the rule
    @property
    def dim(self) -> int:
        return self._dim

    @property
    def nnz(self) -> int:
        return self._count()

    @property
    def basis(self) -> tuple[Label, ...]:
        if self._labels is None:
            _refuse("basis", self.name, self._dim, "basis labels")
            self._labels = tuple(self.label(i) for i in range(self._dim))
        return self._labels

    def index(self, label: Key, argument: str = "label") -> int:
        if isinstance(label, (int, np.integer)) and not isinstance(label, bool):
            return check_index(label, self._dim, argument)
        found = self._parse(label) if isinstance(label, (str, tuple)) else None
        if found is None:
            raise ValueError(f"{argument}: {label!r} is not a basis label of {self.name} (labels: "
                           f"{', '.join(str(self.label(i)) for i in range(min(self._dim, 8)))}"
                           f"{', ...' if self._dim > 8 else ''})")
        return found

    def product_of_basis(self, i: Key, j: Key) -> dict[int, sympy.Expr]:
        return dict(self._rule(self.index(i, "i"), self.index(j, "j")))

    def entries(self) -> list[Entry]:
        _refuse("entries", self.name, self.nnz, "nonzero structure constants")
        return sorted(self._rule_entries())

    @property
    def _table(self) -> Table:  # type: ignore[override]  # Algebra stores its table; this builds it on first use
        if self._materialised is None:
            table: Table = {}
            for i, j, k, c in self.entries():
                table.setdefault((i, j), {})[k] = c
            self._materialised = table
        return self._materialised

    def _multiply(self, x: Sequence[sympy.Expr], y: Sequence[sympy.Expr]) -> list[sympy.Expr]:
        result = [self.scalars.zero] * self._dim
        xs = [i for i, v in enumerate(x) if v != 0]
        ys = [j for j, v in enumerate(y) if v != 0]
        check_size(len(xs) * len(ys), "*", f"pairs of nonzero coefficients in a product in {self.name}",
                   "use the kernels")
        for i in xs:
            for j in ys:
                xy = x[i] * y[j]
                for k, c in self._rule(i, j).items():
                    result[k] += c * xy
        return result

    def _same_structure(self, other: Algebra) -> bool:
        if type(other) is type(self):
            return self._spec() == other._spec()
        return super()._same_structure(other)
