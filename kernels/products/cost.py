"""`Cost`: what one lowering does per batch row, and the time model ``strategy="auto"`` ranks strategies by.

Strategies declare their cost from the cost of the level they call (``inner``): sizes of x, y and z, FLOPs,
words moved, words of temporaries and of constants (per batch row, in array elements), plus the number of
array-library calls one evaluation makes, which a small batch pays for more than its arithmetic.  The model

    seconds = (calls * rates.call + compiled_calls * rates.compiled_call) * chunks
              + rows * ((moved - indexed) * itemsize / rates.bandwidth + indexed * itemsize / rates.indexed
                        + gemm / rates.gemm + loop / rates.loop
                        + transform / rates.transform + row_calls * rates.row + compiled / rates.compiled)

prices the calls, the memory traffic (elementwise arithmetic is bandwidth-bound; ``indexed`` the words of it read
or written through an index array, a gather or a scatter, which some libraries run slower), the FLOPs done inside large
matrix products (``gemm``), inside per-row loops (``loop``: einsum steps, batched small matrix products), inside
FFTs (``transform``) and inside the
compiled loop of `kernels.native.clib` (``compiled``), the overhead the per-row loops pay per row (``row_calls``), and
the compiled loop's own fixed cost per entry (``compiled_calls``: a C call, which costs the same whatever the
library's calls cost).
A library that cannot run compiled loops has a ``compiled`` rate of 0: their time is infinite there.  The
`Rates` are the array library's: each engine carries its own, measured on this project's 2-core machine
(``benchmarks/strategies.py --engine NAME`` prints auto's choice beside every forced strategy, timed in one run).

>>> inner = Cost.elementwise(1)
>>> inner.flops, inner.temporary, inner.calls
(1, 0, 1)
>>> Cost.elementwise(1000).seconds(rows=1, itemsize=8) > Cost.elementwise(1000).seconds(rows=1, itemsize=4)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..arrays.rates import NUMPY_RATES, Rates



@dataclass(frozen=True)
class Cost:
    """Per batch row: sizes of x, y, z, floating-point operations, words read and written, words of temporaries
    alive at once; ``fixed`` words held whatever the batch (structure-constant arrays); ``calls`` array-library
    calls per evaluation (per chunk); ``gemm`` and ``loop`` the parts of ``flops`` done by large matrix products
    and by per-row loops, ``row_calls`` those loops per row, ``compiled`` the part done by the compiled loop (see
    the module docstring), ``compiled_calls`` entries into the compiled loop per evaluation (per chunk),
    ``transform`` the part done by FFTs, ``indexed`` the part of ``moved`` read or written through index arrays."""
    x: int
    y: int
    z: int
    flops: float
    moved: float
    temporary: float
    fixed: float = 0
    calls: float = 0
    gemm: float = 0
    loop: float = 0
    row_calls: float = 0
    compiled: float = 0
    compiled_calls: float = 0
    transform: float = 0
    indexed: float = 0

    @classmethod
    def elementwise(cls, size: int) -> Cost:
        """x * y on arrays of `size` elements per batch row: one call."""
        return cls(size, size, size, size, 3 * size, 0, calls=1)

    def is_elementwise(self) -> bool:
        """Whether this is the cost of ``x * y`` alone (`elementwise`): the leaf when nothing else is inside.

        >>> Cost.elementwise(3).is_elementwise(), Cost.elementwise(3).plus(temporary=1).is_elementwise()
        (True, False)
        """
        return self == Cost.elementwise(self.z)

    def working(self) -> float:
        """Words touched per batch row: operands, result and temporaries."""
        return self.x + self.y + self.z + self.temporary

    def seconds(self, rows: int, itemsize: int, chunk_bytes: float | None = None,
                rates: Rates = NUMPY_RATES, least_chunks: int = 1) -> float:
        """The model's estimate for `rows` batch rows of `itemsize`-byte numbers, cut in chunks of `chunk_bytes`
        (and in at least `least_chunks`), on an array library with these `rates` (an engine's ``rates``)."""
        return sum(t * c for t, c in zip(self.terms(rows, itemsize, chunk_bytes, least_chunks),
                                         rates.coefficients(itemsize)) if t)

    def terms(self, rows: int, itemsize: int, chunk_bytes: float | None = None, least_chunks: int = 1
              ) -> tuple[float, float, float, float, float, float, float, float, float]:
        """Calls, bytes moved other than through index arrays, GEMM FLOPs, loop FLOPs, row loops, compiled FLOPs,
        entries into the compiled loop, FFT FLOPs and bytes moved through index arrays of `rows` rows cut in chunks
        of `chunk_bytes`, and in at least `least_chunks` (the model's seconds are their dot product with
        `Rates.coefficients`)."""
        chunks = 1 if not chunk_bytes else max(1, math.ceil(rows * self.working() * itemsize / chunk_bytes))
        chunks = max(chunks, least_chunks)
        return (self.calls * chunks, rows * (self.moved - self.indexed) * itemsize, rows * self.gemm,
                rows * self.loop, rows * self.row_calls, rows * self.compiled, self.compiled_calls * chunks,
                rows * self.transform, rows * self.indexed * itemsize)

    def plus(self, **extra: float) -> Cost:
        """This cost with `extra` added to the named fields."""
        return replace(self, **{name: getattr(self, name) + value for name, value in extra.items()})
