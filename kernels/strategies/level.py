"""`Level`: what the gather, FFT and codegen lowerings share: one factor's axis around the product of the rest.

A level is called on x and y whose trailing axes are the factors it and its inner levels handle; its own axis
is `axis` (negative, counted among those trailing axes), and `inner` multiplies the pieces it cuts out.
"""
from __future__ import annotations

from ..cost import Cost


class Level:
    """Base of the levels; subclasses set ``strategy`` and ``cost`` and define ``__call__`` and ``describe``."""

    #: Bytes one chunk of the batch should touch: small enough for the L3 cache (measured best at 4 to 8 MiB).
    chunk_bytes = 8 * 2**20

    def __init__(self, factor, axis: int, inner):
        self.factor, self.axis, self.inner = factor, axis, inner

    def around(self, flops, moved, temporary) -> Cost:
        """This level's cost: sizes from the factor's dimensions times the inner level's, constants inherited."""
        c = self.inner.cost
        d1, d2, d3 = self.factor.shape
        return Cost(d1 * c.x, d2 * c.y, d3 * c.z, flops, moved, temporary, c.fixed)
