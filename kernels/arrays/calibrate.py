"""`calibrate`: measure what an engine's operations cost on one device, and keep the rates for `auto` to price by.

A handful of micro-kernels, each timed after a warm-up as the median of a few fenced runs (`Engine.synchronize`):
the cost of a call on tiny arrays, elementwise bandwidth, matrix products of inner dimension 64 in float32 and
float64, batched 4 x 4 products (the per-row loops) and FFTs of length 256; off the CPU, a read of one number back
to the host (`host_read`), and where the engine runs the compiled loop there (torch's Triton kernel), its rate in
float32 and float64 and its cost per entry, on the table of a cyclic group of order 16 (16 terms per output).  The
CPU's loop rates stay the shipped ones: they were fitted to the strategies' end-to-end timings
(`benchmarks/strategies.py --fit`), which one micro-kernel would undo.  Sizes
grow with the device (a GPU's arrays are larger), so a calibration takes about a second.  The rates are kept in the
cache folder (`rates.keep_rates`, under the cache's trust rule) and `Engine.rates_for` returns them from then on, in
this process and later ones.

>>> import numpy as np
>>> from product_interactions.kernels.arrays import NUMPY
>>> measured = calibrate(np.zeros(1), keep=False)
>>> measured.origin.startswith("calibrated"), measured.loop_scan_width == NUMPY.rates.loop_scan_width
(True, True)
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..native import clib
from .rates import FLOAT32_RATES, LOOP_RATES, READ_RATES, Rates, keep_rates

if TYPE_CHECKING:
    from .engine import Engine

#: Fenced runs per measurement (after one warm-up), and calls per run of the tiny-array timing.
REPEATS, CALLS = 5, 200


def _seconds(engine: Engine, run: Callable[[], Any], repeats: int = REPEATS) -> float:
    """The median seconds of `run()`, each run fenced by the engine's `synchronize`."""
    engine.synchronize(run())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        engine.synchronize(run())
        times.append(time.perf_counter() - start)
    return max(statistics.median(times), 1e-9)


def measure(engine: Engine, like: Any) -> dict[str, float]:
    """The measured rates (`rates.Rates`' call, bandwidth, gemm64, gemm32, loop, transform and transform32; off the
    CPU, a read's cost and the compiled loop's where it runs there) of `engine` on the device of `like`, an array of
    the engine's library."""
    large = engine.place(like) != "cpu"
    single, double = engine.like(np.float32, engine.device(like)), engine.like(np.float64, engine.device(like))

    def array(shape: tuple[int, ...], kind: Any = single) -> Any:
        return engine.convert(np.random.default_rng(0).standard_normal(shape), kind)

    tiny = array((16,))
    call = _seconds(engine, lambda: [tiny + tiny for _ in range(CALLS)][-1]) / CALLS
    n = 1 << (26 if large else 20)
    a, b = array((n,)), array((n,))
    bandwidth = 3 * n * 4 / _seconds(engine, lambda: a * b)
    rows = 1 << (20 if large else 14)
    gemm = {}
    for name, kind in (("gemm32", single), ("gemm64", double)):
        if engine.dtype(kind) != np.dtype(name.replace("gemm", "float")):      # JAX without x64: float32 only
            continue
        x, w = array((rows, 64), kind), array((64, 64), kind)
        gemm[name] = 2 * rows * 64 * 64 / _seconds(engine, lambda: engine.matmul(x, w))
    p, q = array((rows, 4, 4)), array((rows, 4, 4))
    loop = 2 * rows * 64 / _seconds(engine, lambda: engine.matmul(p, q))
    transforms = {}
    for name, kind in (("transform32", single), ("transform", double)):
        if name == "transform" and engine.dtype(kind) != np.dtype(np.float64):     # JAX without x64: float32 only
            continue
        signals = array((rows // 4, 256), kind)           # the lengths where fft and the direct strategies meet
        transforms[name] = 2.5 * 256 * 8 * (rows // 4) / _seconds(engine, lambda: engine.rfft(signals))
    compiled = _compiled_rates(engine, single, double, rows, array) if large and engine.runs_compiled(single) else {}
    read = {"host_read": host_read(engine, tiny, call)} if large else {}
    transforms.setdefault("transform", transforms["transform32"])       # JAX without x64: float32 only
    return {"call": call, "bandwidth": bandwidth, "loop": loop, **transforms, **gemm, **compiled, **read}


#: The launches the host makes after a read while the device, its queue drained, idles (`Rates.host_read`).
IDLE_CALLS = 3


def host_read(engine: Engine, tiny: Any, call: float) -> float:
    """What a read of one number back to the host costs off the CPU (`Rates.host_read`): its round trip after a
    launch, beyond that launch, and the `IDLE_CALLS` calls the device then waits through.

    >>> import numpy as np
    >>> from product_interactions.kernels.arrays import NUMPY
    >>> host_read(NUMPY, np.zeros(4), 1e-6) >= IDLE_CALLS * 1e-6
    True
    """
    def read() -> Any:
        engine.value(engine.sum(tiny + tiny))
        return tiny
    return max(_seconds(engine, read) - 2 * call, 0.0) + IDLE_CALLS * call


#: The table the compiled loop is timed on: e_i e_j = e_(i + j mod 16), 16 terms per output.
ORDER = 16


def cyclic_level() -> Any:
    """What `Engine.compiled_loop` reads of a level (its terms and its factor's shape) for the cyclic group's table.

    >>> level = cyclic_level()
    >>> level.factor.shape, len(level.terms.i)
    ((16, 16, 16), 256)
    """
    i, j = (a.ravel() for a in np.indices((ORDER, ORDER)))
    terms = clib.Terms.from_table(np.stack([i, j, (i + j) % ORDER], axis=1), np.ones(len(i)), ORDER)
    return SimpleNamespace(terms=terms, factor=SimpleNamespace(shape=(ORDER,) * 3))


def _compiled_rates(engine: Engine, single: Any, double: Any, rows: int,
                    array: Callable[..., Any]) -> dict[str, float]:
    """The compiled loop's rates (`Rates.compiled32`, ``compiled64``: 3 FLOPs a term and row) and its cost per entry
    (``compiled_call``: a call on one row), on the cyclic group's table."""
    level, loop = cyclic_level(), engine.compiled_loop
    rates: dict[str, Any] = {}
    if loop is None:
        return rates
    for name, kind in (("compiled32", single), ("compiled64", double)):
        x, y = array((rows, ORDER), kind), array((rows, ORDER), kind)
        rates[name] = 3 * ORDER**2 * rows / _seconds(engine, lambda: loop(level, x, y))
    one = array((1, ORDER))
    rates["compiled_call"] = _seconds(engine, lambda: loop(level, one, one))
    return rates


def calibrate(like: Any = None, keep: bool = True) -> Rates:
    """Measure the rates of the engine and device `like` lives on (an array: numpy's, or a torch tensor on
    "cuda", a JAX array; None: numpy on the CPU), keep them for `Engine.rates_for` (in the cache folder too, unless
    `keep` is False), and return them: the shipped rates with the measured ones in their place."""
    from .registry import owner
    like = np.zeros(1) if like is None else like
    engine = owner(like)
    place = engine.place(like)
    measured = measure(engine, like)
    shipped = engine.shipped_rates(place)
    optional: dict[str, Any] = {name: measured[name] for name in LOOP_RATES + READ_RATES + FLOAT32_RATES
                                if name in measured}
    rates = dataclasses.replace(shipped, call=measured["call"], bandwidth=measured["bandwidth"], loop=measured["loop"],
                                transform=measured["transform"],
                                gemm32=measured.get("gemm32", shipped.gemm32),
                                gemm64=measured.get("gemm64", shipped.gemm64),       # JAX without x64: float32 only
                                **optional,
                                origin=f"calibrated {time.strftime('%Y-%m-%d')} on {place}")
    if keep:
        keep_rates(engine.name, place, rates, measured=tuple(optional))
        engine.forget_rates()
    return rates
