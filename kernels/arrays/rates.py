"""`Rates`: what an array library's operations cost on one device, the numbers `kernels.products.cost` turns a
lowering's `Cost` into seconds with, and the lengths the scans change method at (`kernels.scans.recurrence`).

Rates belong to an (engine, device) pair: `Engine.rates_for(a)` gives those of the device `a` lives on.  The
project ships the CPU's (measured on its 2-core machine) and CUDA's (`CUDA_RATES`, estimated from an H200);
`kernels.arrays.calibrate` measures a device's own and keeps them in the cache folder, where `rates_for` finds them.

>>> NUMPY_RATES.coefficients(8)[0] == NUMPY_RATES.call
True
>>> CUDA_RATES.compiled32 > 0, CUDA_RATES.chunked_scan_length     # the loop as a Triton kernel; long scans in chunks
(True, 64)
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Collection

from ... import cache


@dataclass(frozen=True)
class Rates:
    """What an array library's operations cost: ``call`` seconds per call on small arrays (dispatch and the
    Python around it); ``bandwidth`` bytes per second of elementwise work on cache-sized chunks (read and
    written); ``gemm64``/``gemm32`` FLOPs per second of matrix products with an inner dimension of 4 to 64 in
    float64/float32; ``loop`` FLOPs per second of per-row loops (einsum steps, batched products of small
    matrices); ``transform`` FLOPs per second of batched FFTs; ``row`` seconds of overhead per row and per row
    loop; ``compiled64``/``compiled32`` FLOPs per second of the compiled loop (`kernels.clib`), 0 where the
    library's arrays cannot enter it; ``compiled_call`` seconds of the loop's fixed cost per entry (the call, and
    the addresses, shapes and strides it is given).

    The scans: ``loop_scan_width`` elements per step from which a linear recurrence runs faster as a loop over
    time than as a log-depth scan (None: never); ``chunked_scan_length`` steps from which the chunked form
    (`kernels.scans.chunked`) beats both (None: never); ``block_numbers`` how many numbers a pass that runs
    through time in blocks holds at once (LS2T's `kernels.scans.low_rank`: cache-sized on a CPU, where a
    GPU takes whole sequences in a few launches).  ``host_read`` seconds a read of an array's number back to the
    host costs beyond its call: 0 where the arrays are the host's; on a GPU the wait for every kernel queued
    before it, after which the host no longer runs ahead of the device.  ``indexed`` bytes per second of the traffic
    through index arrays (gathers and scatters: `Cost.indexed`), where it runs slower than ``bandwidth`` (None:
    as fast).  ``transform32`` FLOPs per second of FFTs in float32, where they run faster than ``transform``'s
    float64 (None: as fast).  ``origin`` says where the numbers come from."""
    call: float
    bandwidth: float
    gemm64: float
    gemm32: float
    loop: float
    row: float
    transform: float
    compiled64: float = 0.0
    compiled32: float = 0.0
    compiled_call: float = 0.0
    loop_scan_width: int | None = 128
    chunked_scan_length: int | None = None
    block_numbers: int = 2 ** 19
    host_read: float = 0.0
    indexed: float | None = None
    transform32: float | None = None
    origin: str = "shipped"

    def coefficients(self, itemsize: int) -> tuple[float, float, float, float, float, float, float, float, float]:
        """What the model multiplies `Cost.terms` by: seconds per call, per byte moved, per GEMM FLOP, per loop
        FLOP, per row loop, per compiled FLOP, per entry into the compiled loop, per FFT FLOP and per byte moved
        through index arrays, for `itemsize`-byte numbers."""
        gemm, compiled = (self.gemm32, self.compiled32) if itemsize == 4 else (self.gemm64, self.compiled64)
        transform = self.transform32 if itemsize == 4 and self.transform32 else self.transform
        return (self.call, 1 / self.bandwidth, 1 / gemm, 1 / self.loop, self.row,
                1 / compiled if compiled else math.inf, self.compiled_call, 1 / transform,
                1 / (self.indexed or self.bandwidth))


#: numpy's rates (the default engine's, and the model's when no engine is named).  The compiled loop's, at 3 FLOPs a
#: term on two threads: ``benchmarks/strategies.py --fit`` gave 41 and 81 GFLOP/s (float64, float32), but those
#: made auto take the loop for translation(512) at 64 rows, 3.9x slower than fft; these lower ones err the other
#: way only at 65,536 rows of translation(512) (1.8x and 3.3x).  The loop's fixed cost: a product of 64 rows of a
#: 4-dimensional algebra took about 20 microseconds more than its FLOPs (ctypes and the arguments prepared for it);
#: on an AVX2 machine (once its vectors were the CPU's own, `kernels.native.csource.VECTOR_BYTES`) ``--fit`` gave
#: 24 GFLOP/s.  The FFTs of translation(8-512) ran at about 6 GFLOP/s, where the per-row loops' 1.5 (which einsum's
#: steps run at) priced fft at up to 4-5x its time (translation(256): 1.4x the loop's speed by the model, 3-4x
#: measured).
#: The scans, float64: below 128 elements a step costs more in call overhead than in arithmetic; from there the
#: sequential scan is as fast or faster at any length.
NUMPY_RATES = Rates(call=1.2e-6, bandwidth=22e9, gemm64=35e9, gemm32=70e9, loop=1.5e9, row=25e-9, transform=6e9,
                    compiled64=25e9, compiled32=30e9, compiled_call=18e-6,
                    origin="shipped, fitted on the project's 2-core machine")


#: JAX's rates where its operations are staged into one program that XLA compiles (under ``jax.jit``, ``jax.export``),
#: fitted by ``benchmarks/strategies.py --engine jax --jit --fit`` on the project's 2-core machine (float64; float32's
#: matrix products taken at twice float64's, as numpy's): an operation costs about 0.13 us, not eager dispatch's
#: 25 us, and XLA fuses elementwise ones, so a term's traffic runs at 110 GB/s.  Eager rates under jit had taken
#: dense for every Clifford and Clebsch-Gordan algebra at any batch, 2-40 times the best strategy's time at 4,096 and
#: 65,536 rows (geometric mean 2.05 over 19 algebras at 64-65,536 rows); these take codegen there (1.07).  A
#: recurrence loops over time, in one ``lax.scan``, at any width, as eagerly (`JaxEngine.rates`).  XLA's gathers and
#: scatters on the CPU move about 12 GB/s, a ninth of its elementwise traffic (an index computed per element: 9 GB/s
#: in float32, 15 in float64, over scatter and gather of ten algebras at 256-4,096 rows); priced at 110 GB/s, auto
#: had taken scatter for CG lmax 4 at 1,024 rows in float32, 4.4 times the generated code's time.  XLA's float32
#: FFTs run at about twice its float64 ones (translation(64), 4,096 rows: 1.42 against 2.73 ms); priced alike, auto
#: had taken the generated code for translation(64) in float32 at 1,024 and 4,096 rows, 3.7 and 10 times fft's time.
JAX_STAGED_RATES = Rates(call=1.3e-7, bandwidth=110e9, gemm64=17.5e9, gemm32=35e9, loop=4.6e9, row=24e-9,
                         transform=3.1e9, transform32=6.2e9, loop_scan_width=1, indexed=12e9,
                         origin="shipped, staged by jax.jit, fitted on the project's 2-core machine")


#: CUDA's rates, estimated from the measurements of one H200 (shared/notes/gpu-measurements.md; torch 2.11, CUDA 13):
#: a call is torch's dispatch and a kernel launch (no arithmetic waits for the host); elementwise work streams at
#: about 3 TB/s; matrix products of inner dimension 4-64 reach a fraction of the 50 TFLOP/s float32 peak; there
#: is no per-row loop overhead; LS2T runs through time in blocks of 2^28 numbers (1 GiB in float32),
#: where the CPU's 4 MB blocks had made 128 blocks of a few launches each (192 ms against the signature's 3.6 ms).
#: A sequential scan pays about three launches a step, so from 64 steps
#: the chunked form's 2 sqrt(T) steps win (the measured 16-step chunks: 67 against 244 ms forward at 4,096 steps).
#: The compiled loop is a Triton kernel there (`kernels.native.triton_loop`), not measured on a GPU yet: each term
#: reads one component of a block of rows from the L1 or L2 cache (4 or 8 bytes a row) for its 3 FLOPs, so at a
#: third of the L2 cache's ~10 TB/s about 3 TFLOP/s in float32, half that in float64; an entry is its launch and the
#: operands' transposes before it (three launches).  A read back to the host (estimated, not measured): the queue
#: drains, and the launches the host then makes are the device's idle time, a few of them before it is ahead again.
#: `kernels.arrays.calibrate` replaces the measured ones with the device's own.
CUDA_RATES = Rates(call=8e-6, bandwidth=3e12, gemm64=15e12, gemm32=20e12, loop=5e12, row=1e-12, transform=5e12,
                   compiled64=1.5e12, compiled32=3e12, compiled_call=30e-6,
                   loop_scan_width=None, chunked_scan_length=64, block_numbers=2 ** 28, host_read=30e-6,
                   origin="shipped CUDA estimate (H200)")


#: Calibrations kept in the cache folder ``rates`` (one per engine and kind of device), and the largest file read.
RATES_KEPT, RATES_BYTES = 16, 4096
_MEASURED = ("call", "bandwidth", "gemm64", "gemm32", "loop", "transform")
#: The compiled loop's rates, measured (and kept) only off the CPU where the engine runs the loop there, a read's
#: cost, measured off the CPU, and float32's FFTs (`kernels.arrays.calibrate`; files kept before it measured them
#: lack them): a kept file holds each group whole or not at all.
LOOP_RATES, READ_RATES, FLOAT32_RATES = ("compiled32", "compiled64", "compiled_call"), ("host_read",), ("transform32",)
_GROUPS = (LOOP_RATES, READ_RATES, FLOAT32_RATES)


def _file(engine: str, place: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{engine}-{place}")[:120] + ".json"


def keep_rates(engine: str, place: str, rates: Rates, measured: Collection[str] = ()) -> bool:
    """Store measured `rates` for `engine` on devices of `place` in the cache (`product_interactions.cache`'s trust
    rule; the least recently used beyond `RATES_KEPT` go), with the groups of optional fields (`LOOP_RATES`,
    `READ_RATES`, `FLOAT32_RATES`) that `measured` names; False where the cache is off or cannot be written."""
    names = _MEASURED + tuple(name for group in _GROUPS if set(group) <= set(measured) for name in group)
    data = {"engine": engine, "place": place, **{name: getattr(rates, name) for name in names},
            "origin": rates.origin}
    written = cache.write("rates", _file(engine, place), json.dumps(data).encode())
    cache.prune("rates", "", RATES_KEPT)
    return written


def stored_rates(engine: str, place: str, shipped: Rates | None = None) -> Rates | None:
    """The rates `keep_rates` stored for `engine` on `place`, over `shipped`'s other fields (the scans' lengths,
    the compiled loop's), or None: no file, an untrusted one, or one that is not exactly what `keep_rates` writes
    (other keys, part of a group, another engine or place, a number that is not finite and positive)."""
    data = cache.read("rates", _file(engine, place), RATES_BYTES)
    if data is None:
        return None
    try:
        found = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    keys = {"engine", "place", "origin", *_MEASURED}
    if not isinstance(found, dict) or not keys <= set(found) or set(found) - keys != {
            name for group in _GROUPS if set(group) & set(found) for name in group} or \
            found["engine"] != engine or found["place"] != place or not isinstance(found["origin"], str):
        return None
    numbers = {name: found[name] for name in found if name not in ("engine", "place", "origin")}
    if not all(type(v) in (int, float) and math.isfinite(v) and 0 < v < 1e18 for v in numbers.values()):
        return None
    base = shipped if shipped is not None else NUMPY_RATES
    fields: dict[str, Any] = {name: float(v) for name, v in numbers.items()}
    return dataclasses.replace(base, **fields, origin=found["origin"][:200])
