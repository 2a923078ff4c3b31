"""The C source of the compiled loops (`kernels.native.build` compiles it): the files beside this module, fixed
text that no user input ever enters, and the sizes they are compiled with.

* ``product_<dtype>_<rows>``: the sparse bilinear product z[r, k] = sum_t c_t x[r, i_t] y[r, j_t] of the
  ``compiled`` strategy, the terms grouped by output and then by x index, for blocks of `BLOCK` or `WIDE_BLOCK`
  rows.
* ``scan_<dtype>`` and ``scan_backward_<dtype>``: the Seq2Tens scan of `kernels.scans.seq2tens` (the product over time of
  the lifts of the steps in the truncated tensor algebra) and its gradient, for `LANES` paths at a time.
* ``low_rank_<dtype>`` and ``low_rank_backward_<dtype>``: LS2T's rank-1 functionals (`kernels.scans.low_rank`) and
  their gradient, one path at a time.

The product and the scan are written with GCC/clang vector extensions (`VECTOR_BYTES`), so each operation is a vector
operation across rows or paths, whatever the algebra's dimensions; the functionals' loops run along the functionals
of a slot, which the compiler vectorises.  Their working buffers must start on a multiple of `ALIGNMENT`
bytes (`kernels.native.clib` allocates them so): a vector that straddles two cache lines is loaded twice.  Each runs its
blocks on a number of threads it is given: a pool of threads the library starts, which never waits for a thread
that starts late, or an OpenMP team (the pool torch's operations use) for calls from torch.
"""
from __future__ import annotations

import platform
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np


def cpu() -> str:
    """What the loops are compiled for with -march=native: the CPU's model and feature flags where the system tells
    them (/proc/cpuinfo), else the processor's name."""
    try:
        with open("/proc/cpuinfo") as info:
            lines = [line for line in info if line.startswith(("model name", "flags", "Features"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.processor()


def register_bytes(description: str, machine: str) -> int:
    """Bytes of the widest vector register of a CPU with this `description` (`cpu`) and `machine`: 64 with AVX-512,
    32 with AVX (and on an x86 CPU that does not list its flags), 16 otherwise (SSE, NEON).

    >>> register_bytes("flags : fpu sse2 avx avx2 fma avx512f", "x86_64"), register_bytes("flags : sse2 avx2", "x86_64")
    (64, 32)
    >>> register_bytes("Features : fp asimd", "aarch64")
    16
    """
    flags = set(description.split())
    if "avx512f" in flags:
        return 64
    listed = "flags" in flags or "Features" in flags
    return 32 if flags & {"avx", "avx2"} or not listed and machine.lower() in ("x86_64", "amd64", "i686") else 16


#: Bytes per vector, by loop: the product's are the CPU's widest register (`register_bytes`).  On an AVX-512
#: machine 64-byte vectors took 0.6-0.7x the time of 32-byte ones (Clebsch-Gordan lmax 4 and 6, both dtypes, one
#: thread); on an AVX2 one (an AMD EPYC, 2 vCPUs) 32-byte vectors took 0.11-0.5x the time of 64-byte ones
#: (translation(512) 0.11x, CG(4) 0.17x, float64), whose accumulators spilled out of its 16 registers.  32 for the
#: scan, which took 1.7x its time with 64.
VECTOR_BYTES: Mapping[str, int] = MappingProxyType({"product": register_bytes(cpu(), platform.machine()),
                                                    "scan": 32})
#: Bytes the working buffers' starts are a multiple of: a cache line, so that no vector straddles two.
ALIGNMENT = 64


def rows_per_block(vector_bytes: int) -> Mapping[np.dtype[Any], int]:
    """Rows per block of the product loop with vectors of `vector_bytes`, by dtype: four vectors per accumulated
    output, whose components sit in cache while every term is added.

    >>> [rows_per_block(64)[np.dtype(name)] for name in ("float64", "float32")]
    [32, 64]
    """
    dtypes = map(np.dtype, ("float64", "float32"))
    return MappingProxyType({dtype: 4 * vector_bytes // dtype.itemsize for dtype in dtypes})


#: Rows per block of the product loop on this CPU, by dtype (`rows_per_block`).
BLOCK: Mapping[np.dtype[Any], int] = rows_per_block(VECTOR_BYTES["product"])
#: Rows per wide block: twice `BLOCK`, eight vectors per output, so each term's index and coefficient serve twice the
#: multiply-adds.  For algebras whose block of x and y components stays in the L1 cache (`kernels.native.clib.block_rows`):
#: one thread took 0.83x the time for CG(4) float32, 0.9x for CG(6) and translation(40), and 1.3-1.5x for
#: translation(56) and translation(64), whose every output reads all of y.
WIDE_BLOCK: Mapping[np.dtype[Any], int] = MappingProxyType({dtype: 2 * rows for dtype, rows in BLOCK.items()})

#: Paths per block of the scan, by dtype: each word of a state is 64 bytes, one number per path.
LANES: Mapping[np.dtype[Any], int] = MappingProxyType({np.dtype(np.float64): 8, np.dtype(np.float32): 16})

#: The C files, beside this module: loops.c, the one translation unit, and the headers it includes.  The
#: templates (transpose.h, product.h, scan.h, low_rank.h) are written for a number type and included once per
#: instance: the C preprocessor is the one templating mechanism.
FILES = ("loops.c", "pool.h", "transpose.h", "product.h", "scan.h", "low_rank.h")
#: The folder that holds them (installed as package data).
FOLDER = Path(__file__).resolve().parent


def defines() -> tuple[str, ...]:
    """The -D flags that give loops.c its sizes: alignment, vector bytes, rows per block and lanes, by dtype.

    >>> defines()[0], defines()[1] == f"-DPRODUCT_BYTES={VECTOR_BYTES['product']}"
    ('-DALIGNMENT=64', True)
    """
    sizes = {"ALIGNMENT": ALIGNMENT, **{f"{loop.upper()}_BYTES": size for loop, size in VECTOR_BYTES.items()}}
    for dtype in BLOCK:
        name = dtype.name.upper()
        sizes.update({f"BLOCK_{name}": BLOCK[dtype], f"WIDE_{name}": WIDE_BLOCK[dtype], f"LANES_{name}": LANES[dtype]})
    return tuple(f"-D{key}={value}" for key, value in sizes.items())


def text() -> str:
    """The source files' contents, for the build key (`kernels.native.build`): any change in them is a new build."""
    return "".join(f"/* {name} */\n" + (FOLDER / name).read_text() for name in FILES)
