"""Shared timing helper for the benchmark scripts: medians of repeated runs, compared in one process."""
from __future__ import annotations

import argparse
import time

import numpy as np

#: The first two lines of every ratio table.
TABLE_HEADER = ["| case | ours / reference | target | |", "| --- | --- | --- | --- |"]


def parse_arguments(description: str, argv=None) -> argparse.Namespace:
    """The options every benchmark takes: ``--repeats`` (timed runs per side, default 7) and ``--retain-memory``
    (`memory_option`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each side")
    return memory_option(parser, argv)


def memory_option(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Parse with ``--retain-memory`` added: `kernels.native.allocator.retain_freed_memory` before timing, for both sides
    (a note says whether glibc took it)."""
    parser.add_argument("--retain-memory", action="store_true",
                        help="keep freed memory for reuse (glibc), as kernels.native.allocator.retain_freed_memory()")
    args = parser.parse_args(argv)
    if args.retain_memory:
        from product_interactions.kernels.native.allocator import retain_freed_memory
        print(f"retain_freed_memory(): {'applied' if retain_freed_memory() else 'not glibc, nothing changed'}")
    return args


def loop_threads_like_blas() -> int:
    """Give the compiled loop (`kernels.native.clib.THREADS`) as many threads as ``OPENBLAS_NUM_THREADS`` gives the
    references (benchmarks that pin BLAS threads compare like with like); returns that number."""
    import os
    from product_interactions.kernels.native import clib
    clib.THREADS = max(1, int(os.environ.get("OPENBLAS_NUM_THREADS", "1")))
    return clib.THREADS


def median_time(function, repeats: int = 7, warmup: int = 1) -> float:
    """Median wall time of `function()` over `repeats` runs after `warmup` runs."""
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def fenced(torch, function):
    """`function` followed by the device's synchronisation: what a timer must wait for on a GPU."""
    def run():
        result = function()
        torch.cuda.synchronize() if torch.cuda.is_available() else None
        return result
    return run


def interleaved(ours, reference, repeats: int = 7) -> tuple[float, float]:
    """Median seconds of ours() and reference(), timed alternately after one warm-up call each, so that drifts in
    the machine's load hit both alike."""
    ours(), reference()
    mine, theirs = [], []
    for _ in range(repeats):
        mine.append(median_time(ours, repeats=1, warmup=0))
        theirs.append(median_time(reference, repeats=1, warmup=0))
    return float(np.median(mine)), float(np.median(theirs))


def table_row(case: str, ratio: float, target: float) -> str:
    """One table row: the ratio ours / reference against its target."""
    return f"| {case} | {ratio:.3f} | <= {target:.3g} | {'ok' if ratio <= target else 'MISSED'} |"


def ratio_row(case: str, ours, reference, target: float, repeats: int = 7) -> str:
    """One table row: our median / the reference's median, timed by `interleaved`."""
    mine, theirs = interleaved(ours, reference, repeats)
    return table_row(case, mine / theirs, target)


def gemm_peak(dtype=np.float64, size: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of one large square matrix product in `dtype`, measured now: the ceiling a dense kernel is held to."""
    a = np.random.default_rng(0).standard_normal((size, size)).astype(dtype)
    return 2 * size**3 / median_time(lambda: a @ a, repeats=repeats)


def precompiled_dense(lam: np.ndarray, x_shape, y_shape):
    """The strongest generic reference a user would write: opt_einsum's ``contract_expression`` for
    ``bi,bj,ijk->bk`` with lam as a constant (path chosen and constants prepared once)."""
    import opt_einsum
    return opt_einsum.contract_expression("bi,bj,ijk->bk", x_shape, y_shape, lam, constants=[2])


def optional(name: str):
    """The module `name` when it is installed, else None (the anchor libraries are not dependencies)."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
