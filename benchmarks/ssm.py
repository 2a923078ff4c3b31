"""Mamba against its numpy loop, and the dynamical layer against Mamba, as ratios of medians measured in one run.

    python benchmarks/ssm.py [--repeats 7]      (or python -m benchmarks.ssm)

Rows: the Mamba block forward (batch 32, length 192, d_model 64, d_state 16) over the numpy loop of its formulas
(target <= 1), with exp(Delta A) on mamba.THREADS threads and on one; the dynamical layer (I=3, H=2) at the same
width and length over Mamba, forward and forward + backward, as a time ratio (target <= 0.5: twice the throughput).
"""
from __future__ import annotations

import os
import sys

import autograd
import autograd.numpy as anp
import numpy as np

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here)] + [p for p in sys.path if os.path.abspath(p or ".") != _here]

from benchmarks.timing import TABLE_HEADER, parse_arguments, ratio_row  # noqa: E402
from product_interactions.interactions.architectures._dynamical import dynamical  # noqa: E402
import product_interactions.kernels.scans.selective_ssm as mamba_module  # noqa: E402
from product_interactions.interactions.architectures._mamba import mamba  # noqa: E402
from tests.ssm.ssm_support import mamba_loop  # noqa: E402

BATCH, LENGTH, D_MODEL, D_STATE = 32, 192, 64, 16


def one_thread(function):
    """`function` with Mamba's exp(Delta A) in the calling thread only."""
    def run():
        threads, mamba_module.THREADS = mamba_module.THREADS, 1
        try:
            return function()
        finally:
            mamba_module.THREADS = threads
    return run


def main(argv=None):
    args = parse_arguments(__doc__, argv)
    rng = np.random.default_rng(0)
    rows = list(TABLE_HEADER)
    block = mamba(d_model=D_MODEL, d_state=D_STATE)
    size = f"b={BATCH} L={LENGTH} d_model={D_MODEL}"
    for dtype in (np.float64, np.float32):
        params = block.init(seed=0, dtype=dtype)
        x = rng.standard_normal((BATCH, LENGTH, D_MODEL)).astype(dtype)
        error = np.max(np.abs(block.apply(params, x) - mamba_loop(params, x)))
        assert error < (1e-10 if dtype == np.float64 else 1e-3), error
        for threads, forward in ((mamba_module.THREADS, lambda: block.apply(params, x)),
                                 (1, one_thread(lambda: block.apply(params, x)))):
            rows.append(ratio_row(f"Mamba forward {size} d_state={D_STATE} {np.dtype(dtype).name}, exp on {threads} "
                                  f"thread(s) / numpy loop", forward, lambda: mamba_loop(params, x), 1.0,
                                  args.repeats))
    layer = dynamical(d_model=D_MODEL, input_order=3, hidden_order=2)
    x = rng.standard_normal((BATCH, LENGTH, D_MODEL))
    models = {"dynamical": (layer, layer.init(seed=0)), "Mamba": (block, block.init(seed=0))}
    forward = {name: (lambda m=m, p=p: m.apply(p, x)) for name, (m, p) in models.items()}
    training = {name: (lambda m=m, p=p: autograd.grad(lambda q: anp.sum(m.apply(q, x) ** 2))(p))
                for name, (m, p) in models.items()}
    for case, functions in (("forward", forward), ("forward + backward", training)):
        rows.append(ratio_row(f"dynamical (I=3, H=2) / Mamba, {case}, {size} float64 (time; throughput = 1 / this)",
                              functions["dynamical"], functions["Mamba"], 0.5, args.repeats))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
