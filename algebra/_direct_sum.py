"""Direct sums A (+) B (+) ...: block-diagonal products, summands multiply to zero across blocks.

The direct sum is a plain algebra of dimension sum of the summands' (one array axis; multi-head features are
concatenated), which remembers its `summands` and their `offsets`.  Labels are prefixed with the summand's
position: "0:e_1", "1:e_1", ...

>>> from product_interactions.algebra import complex_numbers, diagonal
>>> A = direct_sum(complex_numbers(), diagonal(2))
>>> A.dim, A.basis, A.offsets
(4, ('0:1', '0:i', '1:e_0', '1:e_1'), (0, 2, 4))
>>> A.unit()
0:1 + 1:e_0 + 1:e_1
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable

from .algebra import Algebra, Table, check_algebras
from .scalars import Exact, Floats, common


class DirectSum(Algebra):
    """The direct sum of `summands`; block b occupies flat indices offsets[b]:offsets[b + 1].  Its scalars
    are `scalars`, by default numeric when a summand is (`algebra.scalars.common`)."""

    def __init__(self, summands: Iterable[Algebra], name: str | None = None,
                 scalars: Exact | Floats | None = None) -> None:
        self.summands = check_algebras(summands, plain=True)
        self.offsets = tuple(itertools.accumulate((s.dim for s in self.summands), initial=0))
        scalars = common(s.scalars for s in self.summands) if scalars is None else scalars
        table: Table = {}
        basis: list[str] = []
        for position, (summand, offset) in enumerate(zip(self.summands, self.offsets)):
            for i, j, k, c in summand.entries():
                value = scalars.convert(c, f"algebras[{position}]: lam[{i}, {j}, {k}]")
                if scalars.nonzero(value):
                    table.setdefault((i + offset, j + offset), {})[k + offset] = value
            basis += [f"{position}:{label}" for label in summand.basis]
        super().__init__(table, basis, " ⊕ ".join(s.name for s in self.summands) if name is None else name,
                         scalars)


def direct_sum(*algebras: Algebra, name: str | None = None) -> DirectSum:
    """A (+) B (+) ... of plain algebras (tensor products must be flattened by the caller)."""
    return DirectSum(algebras, name=name)
