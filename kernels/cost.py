"""`Cost`: what one lowering does per batch row, and the time model ``strategy="auto"`` ranks strategies by.

Strategies declare their cost from the cost of the level they call (``inner``): sizes of x, y and z, FLOPs,
words moved, words of temporaries and of constants (per batch row, in array elements), plus the number of
array-library calls one evaluation makes, which a small batch pays for more than its arithmetic.  The model

    seconds = calls * chunks * CALL_SECONDS
              + rows * (moved * itemsize / BANDWIDTH + gemm / GEMM_RATE + loop / LOOP_RATE + row_calls * ROW_SECONDS)

prices the calls, the memory traffic (elementwise arithmetic is bandwidth-bound), the FLOPs done inside large
matrix products (``gemm``) and inside per-row loops (``loop``: FFTs, batched small matrix products), and the
overhead those loops pay per row (``row_calls``).  The constants were measured on this project's 2-core machine
(``benchmarks/strategies.py`` prints auto's choice beside every forced strategy, timed in one run).

>>> inner = Cost.elementwise(1)
>>> inner.flops, inner.temporary, inner.calls
(1, 0, 1)
>>> Cost.elementwise(1000).seconds(rows=1, itemsize=8) > Cost.elementwise(1000).seconds(rows=1, itemsize=4)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

#: Seconds of one numpy call on small arrays (ufunc dispatch and the Python around it).
CALL_SECONDS = 1.2e-6
#: Bytes per second of elementwise work on cache-sized chunks (read and written).
BANDWIDTH = 22e9
#: FLOPs per second of matrix products with an inner dimension of 4 to 64, by itemsize (float64, float32).
GEMM_RATE = {8: 35e9, 4: 70e9}
#: FLOPs per second of per-row loops (numpy's FFT on short rows, batched products of small matrices).
LOOP_RATE = 1.5e9
#: Seconds of overhead per row and per row loop (one short FFT, one small matrix product).
ROW_SECONDS = 25e-9


@dataclass(frozen=True)
class Cost:
    """Per batch row: sizes of x, y, z, floating-point operations, words read and written, words of temporaries
    alive at once; ``fixed`` words held whatever the batch (structure-constant arrays); ``calls`` array-library
    calls per evaluation (per chunk); ``gemm`` and ``loop`` the parts of ``flops`` done by large matrix products
    and by per-row loops, ``row_calls`` those loops per row (see the module docstring)."""
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

    @classmethod
    def elementwise(cls, size: int) -> "Cost":
        """x * y on arrays of `size` elements per batch row: one call."""
        return cls(size, size, size, size, 3 * size, 0, calls=1)

    def working(self) -> float:
        """Words touched per batch row: operands, result and temporaries."""
        return self.x + self.y + self.z + self.temporary

    def seconds(self, rows: int, itemsize: int, chunk_bytes: float | None = None,
                call_seconds: float = CALL_SECONDS) -> float:
        """The model's estimate for `rows` batch rows of `itemsize`-byte numbers, cut in chunks of `chunk_bytes`,
        on an array library whose calls take `call_seconds` (an engine's ``call_seconds``)."""
        chunks = 1 if not chunk_bytes else max(1, math.ceil(rows * self.working() * itemsize / chunk_bytes))
        rate = GEMM_RATE.get(itemsize, GEMM_RATE[8])
        per_row = (self.moved * itemsize / BANDWIDTH + self.gemm / rate + self.loop / LOOP_RATE
                   + self.row_calls * ROW_SECONDS)
        return self.calls * chunks * call_seconds + rows * per_row

    def plus(self, **extra) -> "Cost":
        """This cost with `extra` added to the named fields."""
        return replace(self, **{name: getattr(self, name) + value for name, value in extra.items()})
