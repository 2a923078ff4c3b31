"""`Space`: the vector space an action acts on, or one slot of a target lives in.

A space has a shape, one axis per tensor factor, and remembers per factor the algebra it belongs to (None for
a bare R^d).  Wherever a space is expected, an int d, a shape tuple or an `Algebra` is accepted.

>>> from product_interactions.algebra import position, tensor_product, translation
>>> as_space(tensor_product(position(3), translation(4)), "x")
Space(position(3) ⊗ translation(4), shape (3, 4))
>>> as_space(5, "x")
Space(R^5, shape (5,))
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeAlias

import numpy as np

from ..algebra import Algebra, check_count

#: What the functions that take a space accept: a dimension, a shape, or an algebra (one factor per tensor factor).
SpaceLike: TypeAlias = "int | tuple[int, ...] | Algebra"


class Space:
    """A shape with, per factor, an `Algebra` or None."""

    __slots__ = ("shape", "algebras")

    def __init__(self, shape: Iterable[int], algebras: Iterable[Algebra | None] | None = None) -> None:
        self.shape = tuple(shape)
        self.algebras = tuple(algebras) if algebras is not None else (None,) * len(self.shape)

    @property
    def dim(self) -> int:
        return math.prod(self.shape)

    @property
    def name(self) -> str:
        return " ⊗ ".join(a.name if a is not None else f"R^{n}" for a, n in zip(self.algebras, self.shape))

    def __repr__(self) -> str:
        return f"Space({self.name}, shape {self.shape})"


def as_space(value: object, argument: str) -> Space:
    """An int, a shape tuple or an `Algebra` as a `Space`; raises naming `argument`."""
    if isinstance(value, Algebra):
        return Space(value.shape, value.factors)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Space((check_count(value, argument),))
    if isinstance(value, tuple) and value:
        return Space(tuple(check_count(n, f"{argument}[{i}]") for i, n in enumerate(value)))
    raise TypeError(f"{argument}: expected an Algebra, a dimension (int) or a shape (tuple of ints), "
                    f"got {type(value).__name__} {value!r}")
