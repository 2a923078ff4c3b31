"""`Cost`: what one call of a lowering level does per batch element, in array elements (words).

Strategies build their cost from the cost of the level they call (``inner``); `Kernel.explain` reports the
top level's, and the memory guard multiplies ``temporary`` by the batch and the itemsize.

>>> inner = Cost.elementwise(1)
>>> inner.flops, inner.temporary
(1, 0)
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cost:
    """Per batch element: sizes of x, y, z, floating-point operations, words read and written, words of
    temporaries alive at once; plus ``fixed`` words held whatever the batch (structure-constant arrays)."""
    x: int
    y: int
    z: int
    flops: float
    moved: float
    temporary: float
    fixed: float = 0

    @classmethod
    def elementwise(cls, size: int) -> "Cost":
        """x * y on arrays of `size` elements per batch element."""
        return cls(size, size, size, size, 3 * size, 0)

    def working(self) -> float:
        """Words touched per batch element: operands, result and temporaries."""
        return self.x + self.y + self.z + self.temporary
