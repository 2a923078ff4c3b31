"""`Rates`: what an array library's operations cost on one machine, the numbers `kernels.products.cost` turns a
lowering's `Cost` into seconds with.  Each engine carries its own (`Engine.rates`).

>>> NUMPY_RATES.coefficients(8)[0] == NUMPY_RATES.call
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Rates:
    """What an array library's operations cost: ``call`` seconds per call on small arrays (dispatch and the
    Python around it); ``bandwidth`` bytes per second of elementwise work on cache-sized chunks (read and
    written); ``gemm64``/``gemm32`` FLOPs per second of matrix products with an inner dimension of 4 to 64 in
    float64/float32; ``loop`` FLOPs per second of per-row loops (short FFTs, batched products of small matrices);
    ``row`` seconds of overhead per row and per row loop; ``compiled64``/``compiled32`` FLOPs per second of the
    compiled loop (`kernels.clib`), 0 where the library's arrays cannot enter it; ``compiled_call`` seconds of the
    loop's fixed cost per entry (the call, and the addresses, shapes and strides it is given)."""
    call: float
    bandwidth: float
    gemm64: float
    gemm32: float
    loop: float
    row: float
    compiled64: float = 0.0
    compiled32: float = 0.0
    compiled_call: float = 0.0

    def coefficients(self, itemsize: int) -> tuple[float, float, float, float, float, float, float]:
        """What the model multiplies `Cost.terms` by: seconds per call, per byte moved, per GEMM FLOP, per loop
        FLOP, per row loop, per compiled FLOP and per entry into the compiled loop, for `itemsize`-byte numbers."""
        gemm, compiled = (self.gemm32, self.compiled32) if itemsize == 4 else (self.gemm64, self.compiled64)
        return (self.call, 1 / self.bandwidth, 1 / gemm, 1 / self.loop, self.row,
                1 / compiled if compiled else math.inf, self.compiled_call)


#: numpy's rates (the default engine's, and the model's when no engine is named).  The compiled loop's, at 3 FLOPs a
#: term on two threads: ``benchmarks/strategies.py --fit`` gave 41 and 81 GFLOP/s (float64, float32), but those
#: made auto take the loop for translation(512) at 64 rows, 3.9x slower than fft; these lower ones err the other
#: way only at 65,536 rows of translation(512) (1.8x and 3.3x).  The loop's fixed cost: a product of 64 rows of a
#: 4-dimensional algebra took about 20 microseconds more than its FLOPs (ctypes and the arguments prepared for it).
NUMPY_RATES = Rates(call=1.2e-6, bandwidth=22e9, gemm64=35e9, gemm32=70e9, loop=1.5e9, row=25e-9,
                    compiled64=25e9, compiled32=30e9, compiled_call=18e-6)
