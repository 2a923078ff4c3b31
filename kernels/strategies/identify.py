"""identify: lam[i, j, k] = c_i [i == j == k] (diagonal and position algebras).

The factor's axis is a shared index of x, y and z, so it costs nothing of its own: with every c_i = 1 the
product over such axes is ``x * y``; otherwise the coefficients join the leaf's contraction (see `dense`).

>>> from product_interactions.algebra import diagonal, quaternions
>>> from product_interactions.kernels.factor import Factor
>>> unsupported(Factor.from_algebra(diagonal(3))) is None
True
>>> unsupported(Factor.from_algebra(quaternions()))
'lam[0, 1, 1] = 1 in quaternions; identify needs lam[i, j, k] = 0 unless i == j == k'
"""
from __future__ import annotations

import operator

from ..cost import Cost

NAME = "identify"


def unsupported(factor):
    """Why identify cannot represent `factor`, or None."""
    d1, d2, d3 = factor.shape
    if not d1 == d2 == d3:
        return f"{factor.name} maps {d1} x {d2} -> {d3}; identify needs one shared dimension"
    witness = factor.off_diagonal()
    if witness is not None:
        value = factor.values[(factor.indices == witness).all(axis=1)][0]
        return (f"lam[{', '.join(map(str, witness))}] = {value:g} in {factor.name}; identify needs "
                f"lam[i, j, k] = 0 unless i == j == k")
    return None


def scaled(factor) -> bool:
    """True when some c_i differs from 1 (then the coefficients must be multiplied in)."""
    return bool((factor.diagonal() != 1).any())


class Elementwise:
    """The leaf when every remaining factor is an unscaled identify: ``x * y`` (any array type)."""

    chunk_bytes = None          # no gain from chunks
    positional = False          # broadcasting treats every axis alike: callers need not move theirs

    def __init__(self, size: int):
        self.cost = Cost.elementwise(size)

    def __call__(self, x, y):
        return operator.mul(x, y)

    def describe(self) -> list:
        return ["leaf: x * y elementwise (identify axes are shared indices)"]
