"""identify: lam[i, j, k] = c_i [i == j == k] (diagonal and position algebras).

The factor's axis is a shared index of x, y and z, so it costs nothing of its own: with every c_i = 1 the
product over such axes is ``x * y``; otherwise the coefficients join the leaf's contraction as a vector.

>>> from product_interactions.algebra import diagonal, quaternions
>>> from product_interactions.kernels.products.factor import Factor
>>> unsupported(Factor.from_algebra(diagonal(3))) is None
True
>>> unsupported(Factor.from_algebra(quaternions()))
'lam[0, 1, 1] = 1 in quaternions; identify needs lam[i, j, k] = 0 unless i == j == k'
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from ..cost import Cost
from ..factor import TABLE_LIMIT
from .operand import Shared

if TYPE_CHECKING:
    from ..factor import Factor

NAME = "identify"
ROLE = "leaf"


def unsupported(factor: Factor) -> str | None:
    """Why identify cannot represent `factor`, or None."""
    d1, d2, d3 = factor.shape
    if not d1 == d2 == d3:
        return f"{factor.name} maps {d1} x {d2} -> {d3}; identify needs one shared dimension"
    if factor.diagonal() is None:
        if factor.nnz > TABLE_LIMIT:                     # said without reading a table that large
            return (f"{factor.name} has {factor.nnz:,} nonzero coefficients, more than its {d1:,} diagonal "
                    f"entries; identify needs lam[i, j, k] = 0 unless i == j == k")
        witness: tuple[int, ...] = factor.off_diagonal()  # type: ignore[assignment]  # not diagonal: there is one
        value = factor.values[(factor.indices == witness).all(axis=1)][0]
        return (f"lam[{', '.join(map(str, witness))}] = {value:g} in {factor.name}; identify needs "
                f"lam[i, j, k] = 0 unless i == j == k")
    return None


def cost(factor: Factor, inner: Cost) -> Cost:
    """A shared axis: the inner cost times the dimension (plus the coefficients when they are not all 1)."""
    d = factor.shape[0]
    scaled = not factor.is_unit_diagonal()
    return Cost(d * inner.x, d * inner.y, d * inner.z, d * inner.flops + scaled * d * inner.z,
                d * inner.moved + scaled * 2 * d * inner.z, d * inner.temporary, inner.fixed + scaled * d,
                inner.calls + scaled, d * inner.gemm, d * inner.loop, d * inner.row_calls, d * inner.compiled)


def term(factor: Factor, fresh: Callable[[], str]) -> tuple[str, str, str, str | None]:
    """The leaf term: one shared label for x, y and z, and the coefficients when they are not all 1."""
    shared = fresh()
    return shared, shared, shared, None if factor.is_unit_diagonal() else shared


def constant(factor: Factor, dtype: DTypeLike) -> np.ndarray:
    """The constant operand of `term` (the coefficients)."""
    return factor.diagonal().astype(dtype)  # type: ignore[union-attr]  # identify applies: the factor is diagonal


def operand_unsupported(factor: Factor) -> str | None:
    """In a plan's contraction: wherever identify represents the factor."""
    return unsupported(factor)


def operand_cost(factor: Factor) -> Cost:
    """The shared index: what the elementwise product costs (no constants unless scaled)."""
    return cost(factor, Cost.elementwise(1))


def operand(factor: Factor) -> Shared:
    """The shared index, with the coefficients where they are not all 1."""
    return Shared(None if factor.is_unit_diagonal() else factor.diagonal())


class Elementwise:
    """The leaf when every remaining factor is an unscaled identify: ``x * y`` (any array type)."""

    chunk_bytes: int | None = None          # no gain from chunks
    positional = False          # broadcasting treats every axis alike: callers need not move theirs

    def __init__(self, size: int) -> None:
        self.cost = Cost.elementwise(size)

    def __call__(self, x: Any, y: Any) -> Any:
        return operator.mul(x, y)

    def describe(self) -> list[str]:
        return ["leaf: x * y elementwise (identify axes are shared indices)"]
