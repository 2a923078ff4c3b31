"""`Level`: what the level strategies (gather, fft, codegen, graded, compiled) share: one factor's axis around the
product of the rest.

A level is called on x and y whose trailing axes are the factors it and its inner levels handle; its own axis
is `axis` (negative, counted among those trailing axes), and `inner` multiplies the pieces it cuts out.  Its cost
comes from its module's ``cost(factor, inner.cost)``: one declaration serves ``auto`` and the memory guard.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..cost import Cost

if TYPE_CHECKING:
    from ..factor import Factor


class Program(Protocol):
    """What a lowering builds (a level or a leaf): called on x and y, with its cost per batch row."""

    cost: Cost

    @property
    def chunk_bytes(self) -> int | None: ...

    def __call__(self, x: Any, y: Any) -> Any: ...

    def describe(self) -> list[str]: ...


#: A level's fixed cost in calls: moving its axis, allocating and placing the output (measured about 15
#: microseconds a call on this project's machine).
OVERHEAD_CALLS = 12


def around(factor: Factor, inner: Cost, flops: float, moved: float, temporary: float, calls: float, repeats: float,
           entries: float, row_calls: float = 0, compiled: float = 0, compiled_calls: float = 0,
           transform: float = 0, indexed: float = 0) -> Cost:
    """A level's cost: sizes from the factor's dimensions times the inner level's, constants inherited; the inner
    program's GEMM, loop, row-loop, compiled, FFT and indexed work `repeats` times per batch row and its entries into the
    compiled loop `entries` times per call, on top of the level's own work (the keyword arguments), so that no
    kind of the inner's work is left out."""
    d1, d2, d3 = factor.shape
    return Cost(d1 * inner.x, d2 * inner.y, d3 * inner.z, flops, moved, temporary, inner.fixed,
                calls + OVERHEAD_CALLS, repeats * inner.gemm, repeats * inner.loop,
                repeats * inner.row_calls + row_calls, repeats * inner.compiled + compiled,
                entries * inner.compiled_calls + compiled_calls, repeats * inner.transform + transform,
                repeats * inner.indexed + indexed)


class Level:
    """Base of the levels; subclasses set ``strategy`` and define ``__call__`` and ``describe``."""

    #: Bytes one chunk of the batch should touch: small enough for the L3 cache (measured best at 4 to 8 MiB).
    chunk_bytes: int | None = 8 * 2**20

    def __init__(self, factor: Factor, axis: int, inner: Program, cost: Cost) -> None:
        self.factor, self.axis, self.inner, self.cost = factor, axis, inner, cost
