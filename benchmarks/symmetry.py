"""Deriving the Clebsch-Gordan paths from SO(3) equivariance: the exact and the numeric path, timed cold.

For every (l1, l2, l) the bilinear maps V_l1 x V_l2 -> V_l commuting with rotations are solved for; each time
includes building the generators and the constraints.  Targets: exact for all degrees <= 2 in under 30 s,
numeric for all degrees <= 4 in under 30 s.

The dense problems are small (at most 2187 x 729), so the script runs BLAS on one thread unless
OPENBLAS_NUM_THREADS is given: on a shared 2-core machine under load, OpenBLAS threads made the same numeric run
10-30 times slower (34 s instead of 4 s, measured).

    python benchmarks/symmetry.py        (or python -m benchmarks.symmetry)
"""
from __future__ import annotations

import itertools
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from product_interactions.algebra.symmetry import bilinear_map, equivariant_constraints, rotations_so3, solve  # noqa: E402


def derive_all(lmax: int, method: str) -> float:
    """Seconds to solve every path with degrees <= lmax by `method`; checks the dimensions (1 on the triangle)."""
    start = time.perf_counter()
    for l1, l2, l in itertools.product(range(lmax + 1), repeat=3):
        actions = tuple(rotations_so3([degree]) for degree in (l1, l2, l))
        target = bilinear_map(2 * l1 + 1, 2 * l2 + 1, 2 * l + 1)
        solution = solve(equivariant_constraints(actions, target), method=method)
        assert solution.method == method
        assert solution.dim == (1 if abs(l1 - l2) <= l <= l1 + l2 else 0), (l1, l2, l, solution.dim)
    return time.perf_counter() - start


def main():
    rows = ["| case | seconds | target | |", "| --- | --- | --- | --- |"]
    for lmax, method in ((2, "exact"), (4, "numeric")):
        seconds = derive_all(lmax, method)
        verdict = "ok" if seconds < 30 else "MISSED"
        rows.append(f"| SO(3) {method}, all (l1, l2, l) <= {lmax} ({(lmax + 1) ** 3} paths) | {seconds:.2f} "
                    f"| < 30 | {verdict} |")
    print("\n".join(rows))
    print(f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")


if __name__ == "__main__":
    main()
