"""Every strategy on every built-in algebra, timed in one run, beside what ``strategy="auto"`` picks.

    python benchmarks/strategies.py [--repeats 5] [--batches 64,4096,65536] [--dtype float64] [--engine numpy]
                                    [--jit] [--fit]

For each algebra and batch: the median time of each strategy that applies (forced; those the model puts 30 times
beyond the best are skipped), the model's estimate, auto's choice and auto's time over the best forced time
(target: at most 1.1), on the chosen engine's arrays and by its rates (`kernels.products.cost.Rates`).  The first line
records the machine's load.  Each kernel is checked against the dense reference before it is timed.  ``--fit``
then prints the `Rates` that fit every timing best (non-negative least squares on relative error): how an
engine's rates are calibrated.  ``--jit`` (JAX) times each kernel under ``jax.jit`` and prices by the engine's
staged rates (`JaxEngine.staged_rates`): how ``JAX_STAGED_RATES`` were fitted.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np
import scipy.optimize

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.timing import median_time  # noqa: E402
from product_interactions import kernels  # noqa: E402
from product_interactions.algebra import (clebsch_gordan, clifford, complex_numbers, diagonal, gaunt,  # noqa: E402
                                          matrix_algebra, position, quaternions, tensor_algebra, tensor_product,
                                          translation)
from product_interactions.kernels.products import select  # noqa: E402
from product_interactions.kernels.arrays import ENGINES, NUMPY  # noqa: E402

TARGET = 1.1


def algebras() -> list:
    """Every built-in family at a small and a large size, and tensor products."""
    return [diagonal(16), position(256), translation(8), translation(64), translation(512),
            translation(16, cyclic=False), translation(128, cyclic=False), tensor_algebra(2, 4), tensor_algebra(4, 3),
            tensor_algebra(4, 5), clifford(2), clifford(3), clifford(3, 0, 1), clifford(4, 1), complex_numbers(),
            quaternions(), matrix_algebra(2), matrix_algebra(4), matrix_algebra(8), clebsch_gordan(1),
            clebsch_gordan(2), clebsch_gordan(4), clebsch_gordan(2, parity=True), gaunt(2),
            tensor_product(position(16), quaternions()), tensor_product(translation(16), diagonal(8))]


def forced(A, dtype, batches, engine=NUMPY, rates=None) -> dict:
    """{strategy tuple: kernel} for every single strategy that applies to all factors, and auto's (by `rates`)."""
    found = {}
    for name in kernels.STRATEGIES:
        factors = [kernels.Factor.from_algebra(f) for f in A.factors]
        if name == "dense" and sum(np.prod(f.shape) for f in factors) * dtype.itemsize > 2**26:
            continue                                  # constants over 64 MB: not a contender
        try:
            kernel = kernels.product(A, strategy=name, dtype=dtype)
        except ValueError:
            continue
        found[kernel.strategies] = kernel
    auto = kernels.product(A, dtype=dtype)
    for names in {auto.strategies_for(rows, engine, rates=rates) for rows in batches}:
        if names not in found:
            found[names] = kernels.product(A, strategy=names, dtype=dtype)
    return found


def interleaved(kernel_table, x, y, repeats, engine=NUMPY) -> dict:
    """Median seconds per kernel, timed round-robin (a BLAS thread left spinning by one strategy, or a burst of
    load, then falls on all of them alike), each call waited for (JAX dispatches asynchronously)."""
    times = {names: [] for names in kernel_table}
    for kernel in kernel_table.values():
        engine.synchronize(kernel(x, y))
    for _ in range(repeats):
        for names, kernel in kernel_table.items():
            times[names].append(median_time(lambda: engine.synchronize(kernel(x, y)), repeats=1, warmup=0))
    return {names: float(np.median(values)) for names, values in times.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches", default="64,4096,65536")
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--only", default="", help="only the algebras whose name contains this text")
    parser.add_argument("--engine", default="numpy", choices=sorted(ENGINES))
    parser.add_argument("--fit", action="store_true", help="print the rates that fit the timings best")
    parser.add_argument("--jit", action="store_true", help="JAX: time each kernel under jax.jit")
    arguments = parser.parse_args(argv)
    dtype, batches = np.dtype(arguments.dtype), [int(b) for b in arguments.batches.split(",")]
    engine = ENGINES[arguments.engine]
    if importlib.util.find_spec(engine.name) is None:
        print(f"{engine.name} is not installed: skipped")
        return 0
    if arguments.jit and engine.name != "jax":
        parser.error("--jit: only with --engine jax")
    if engine.name == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)                 # else float64 would be float32
    like = engine.xp.zeros((), dtype=engine.native_dtype(dtype))
    rates = engine.staged_rates(like) if arguments.jit else engine.rates
    rng = np.random.default_rng(0)
    print(f"{engine.name} ({rates}), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"{dtype.name}")
    print(f"{'algebra':32} {'batch':>6} {'auto picks':24} {'auto/best':>9}  strategies: ms (model ms)", flush=True)
    worst, measured = 0.0, []
    for A in (A for A in algebras() if arguments.only in A.name):
        kernel_table = forced(A, dtype, batches, engine, rates)
        if arguments.jit:
            kernel_table = {names: jax.jit(kernel) for names, kernel in kernel_table.items()}
        auto = kernels.product(A, dtype=dtype)
        for batch in batches:
            if batch * A.dim * dtype.itemsize > 2**29:
                continue
            x, y = (rng.standard_normal((batch, *A.shape)).astype(dtype) for _ in range(2))
            if len(A.shape) == 1 and A.dim <= 128:
                expected = np.einsum("bi,bj,ijk->bk", x[:8].astype(float), y[:8].astype(float),
                                     A.structure_constants())
                for names, kernel in kernel_table.items():
                    got = engine.value(kernel(engine.convert(x[:8], like), engine.convert(y[:8], like)))
                    assert np.allclose(got, expected, rtol=1e-4, atol=1e-4), (A.name, names)
            x, y = engine.convert(x, like), engine.convert(y, like)
            chosen = auto.strategies_for(batch, engine, dtype.itemsize, rates=rates)
            models = {names: model(A, names, batch, dtype, rates) for names in kernel_table}
            contenders = {names: kernel for names, kernel in kernel_table.items()
                          if models[names] <= 30 * min(models.values()) or names == chosen}
            if arguments.jit:                     # XLA allocates a program's temporaries whole: no chunks
                contenders = {names: kernel for names, kernel in contenders.items()
                              if names == chosen or held(A, names, batch, dtype) <= kernels.MEMORY_LIMIT}
            timings = interleaved(contenders, x, y, arguments.repeats, engine)
            measured += [(A, names, batch, t) for names, t in timings.items()]
            best = min(timings.values())
            ratio = timings[chosen] / best
            worst = max(worst, ratio)
            rest = " ".join(f"{'+'.join(n)}: {t * 1e3:.3g} ({models[n] * 1e3:.3g})"
                            for n, t in sorted(timings.items(), key=lambda item: item[1]))
            print(f"{A.name[:32]:32} {batch:>6} {'+'.join(chosen):24} {ratio:9.2f}  {rest}", flush=True)
    print(f"worst auto/best: {worst:.2f} (target <= {TARGET})")
    if arguments.fit:
        print(f"fitted: {fit(measured, dtype.itemsize)}")
    return 0 if worst <= TARGET else 1


def fit(measured, itemsize: int) -> str:
    """The rates whose model best fits `measured` (algebra, strategies, batch, seconds), by non-negative least
    squares on relative error."""
    rows, targets = [], []
    for A, names, batch, seconds in measured:
        cost, chunk = select.priced([kernels.Factor.from_algebra(f) for f in A.factors], names)
        rows.append(np.array(cost.terms(batch, itemsize, chunk)) / seconds)
        targets.append(1.0)
    scale = np.abs(np.array(rows)).max(axis=0) + 1e-300
    solution, _ = scipy.optimize.nnls(np.array(rows) / scale, np.array(targets))
    call, per_byte, per_gemm, per_loop, row, per_compiled, compiled_call, per_transform, per_indexed = solution / scale
    inverse = lambda c: f"{1 / c:.3g}" if c > 0 else "inf"      # noqa: E731
    single = "32" if itemsize == 4 else ""
    return (f"call={call:.3g}, bandwidth={inverse(per_byte)}, gemm{8 * itemsize}={inverse(per_gemm)}, "
            f"loop={inverse(per_loop)}, row={row:.3g}, transform{single}={inverse(per_transform)}, "
            f"compiled{8 * itemsize}={inverse(per_compiled)}, compiled_call={compiled_call:.3g}, "
            f"indexed={inverse(per_indexed)}")


def held(A, names, batch, dtype) -> float:
    """Bytes of operands, result and temporaries of the strategy tuple on `batch` rows, unchunked."""
    cost, _ = select.priced([kernels.Factor.from_algebra(f) for f in A.factors], names)
    return batch * cost.working() * dtype.itemsize


def model(A, names, batch, dtype, rates=NUMPY.rates) -> float:
    """The cost model's seconds for the strategy tuple (factor by factor, as auto ranks them)."""
    factors = [kernels.Factor.from_algebra(f) for f in A.factors]
    total = 0.0
    for position_, (factor, name) in enumerate(zip(factors, names)):
        rest = int(np.prod([f.shape[2] for n, f in enumerate(factors) if n != position_]))
        total = max(total, select.estimate(factor, name, batch, dtype.itemsize, rest, rates))
    return total


if __name__ == "__main__":
    sys.exit(main())
