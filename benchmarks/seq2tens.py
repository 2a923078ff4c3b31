"""Seq2Tens speed as ratios of medians measured in one run (interleaved), plus the three scan methods' times.

    python benchmarks/seq2tens.py [--repeats 7]      (or python -m benchmarks.seq2tens)

One BLAS thread unless OPENBLAS_NUM_THREADS is given (the GEMM peak too, so ratios compare like with like): on
this shared 2-core machine, OpenBLAS threads swung the same timings by up to 10x under load.
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported; see the docstring
import numpy as np

# This file's name is a package's module name: import the library from the repository root, not this folder.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here)] + [p for p in sys.path if os.path.abspath(p or ".") != _here]

from benchmarks.timing import TABLE_HEADER, median_time, optional, parse_arguments, ratio_row  # noqa: E402
from product_interactions.interactions.architectures.seq2tens import ls2t  # noqa: E402
from product_interactions.interactions.feature_map import signature  # noqa: E402


def numpy_signature(x, depth):
    """The reference: a loop over time multiplying the running signature by exp(increment), level by level."""
    batch, length, d = x.shape
    levels = [np.ones((batch, 1))] + [np.zeros((batch, d ** m)) for m in range(1, depth + 1)]
    for t in range(1, length):
        step = x[:, t] - x[:, t - 1]
        exp = [np.ones((batch, 1)), step]
        for m in range(2, depth + 1):
            exp.append(np.einsum("bi,bj->bij", exp[-1], step).reshape(batch, -1) / m)
        levels = [sum(np.einsum("bi,bj->bij", levels[i], exp[m - i]).reshape(batch, -1) for i in range(m + 1))
                  for m in range(depth + 1)]
    return np.concatenate(levels[1:], axis=1)


def anchor_rows(paths, repeats) -> list:
    """Signatures against iisignature and pysiglib (compiled libraries; each row skipped when it is not installed):
    depth 4 at most 0.5x iisignature and 3x pysiglib, depth 2 at most 1.0x iisignature."""
    rows = []
    for name, target_by_depth, call in (
            ("iisignature", {2: 1.0, 4: 0.5}, lambda module, depth: module.sig(paths, depth)),
            ("pysiglib", {4: 3.0}, lambda module, depth: module.signature(paths, depth))):
        module = optional(name)
        if module is None:
            rows.append(f"| {name} rows skipped: {name} is not installed | | | |")
            continue
        for depth, target in target_by_depth.items():
            expected = np.asarray(call(module, depth))
            error = np.max(np.abs(signature(paths, depth) - expected[..., -signature(paths, depth).shape[-1]:]))
            assert error < 1e-8 * (1 + np.abs(expected).max()), f"{name} disagrees by {error} at depth {depth}"
            rows.append(ratio_row(f"signature depth {depth}, 256 paths, length 128, d = 4, float64 (vs {name})",
                                  lambda: signature(paths, depth), lambda: call(module, depth), target, repeats))
    return rows


def method_times(rows, case, x, depth, repeats):
    times = {method: median_time(lambda: signature(x, depth, method=method), repeats=repeats)
             for method in ("sequential", "levelwise", "parallel")}
    rows.append(f"| {case} | " + " | ".join(f"{1e3 * t:.1f}" for t in times.values()) + " |")


def main(argv=None):
    args = parse_arguments(__doc__, argv)
    rng = np.random.default_rng(0)
    rows = list(TABLE_HEADER)

    paths = rng.standard_normal((256, 128, 4)).cumsum(axis=1)
    error = np.max(np.abs(signature(paths, 4) - numpy_signature(paths, 4)) / (1 + np.abs(numpy_signature(paths, 4))))
    assert error < 1e-10, error
    rows.append(ratio_row("signature depth 4, 256 paths, length 128, d = 4, float64 (vs a numpy time loop)",
                          lambda: signature(paths, 4), lambda: numpy_signature(paths, 4), 0.5, args.repeats))
    rows += anchor_rows(paths, args.repeats)

    layer = ls2t(d_in=8, width=64, order=4)
    params = layer.init(seed=0)
    short, long = rng.standard_normal((16, 256, 8)), rng.standard_normal((16, 2048, 8))
    for return_sequences in (False, True):
        layer.return_sequences = return_sequences
        rows.append(ratio_row(f"LS2T N = 64, M = 4, batch 16, d = 8, return_sequences={return_sequences}: "
                              f"length 2048 / length 256", lambda: layer.apply(params, long),
                              lambda: layer.apply(params, short), 9, args.repeats))

    rows += ["", "| signature case | sequential ms | levelwise ms | parallel ms |", "| --- | --- | --- | --- |"]
    method_times(rows, "depth 4, 256 paths, length 128, d = 4", paths, 4, args.repeats)
    method_times(rows, "depth 3, 1 path, length 4096, d = 2", rng.standard_normal((1, 4096, 2)), 3, args.repeats)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
