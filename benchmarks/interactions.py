"""Compiled architectures against hand-written numpy / scipy, as ratios of medians measured in one run.

    python benchmarks/interactions.py [--repeats 7]      (or python -m benchmarks.interactions)
"""
from __future__ import annotations

import os
import sys

import numpy as np
import scipy.signal

# This file's name is the package's: import the package from the repository root, not this folder.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here)] + [p for p in sys.path if os.path.abspath(p or ".") != _here]

from benchmarks.timing import TABLE_HEADER, parse_arguments, ratio_row  # noqa: E402
from product_interactions.interactions.architectures import attention, convolution  # noqa: E402


def numpy_attention(params, x, heads, d_head):
    """Causal multi-head attention written directly in numpy (the reference)."""
    b, n, _ = x.shape
    q = (x @ params["W_Q"].T).reshape(b, n, heads, d_head).transpose(0, 2, 1, 3)
    k = (x @ params["W_K"].T).reshape(b, n, heads, d_head).transpose(0, 2, 1, 3)
    v = (x @ params["W_V"].T).reshape(b, n, heads, d_head).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_head)
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return (a @ v).transpose(0, 2, 1, 3).reshape(b, n, heads * d_head) @ params["W_O"].T


def scipy_convolution(K, x):
    """Zero-padded causal 2-D convolution per (batch, out, in) channel with scipy.signal.correlate."""
    n, m = x.shape[1:3]
    flipped = K[::-1, ::-1]
    out = np.zeros(x.shape[:3] + (K.shape[2],), dtype=x.dtype)
    for b in range(x.shape[0]):
        for o in range(K.shape[2]):
            for i in range(K.shape[3]):
                padded = np.pad(x[b, :, :, i], ((K.shape[0] - 1, 0), (K.shape[1] - 1, 0)))
                out[b, :, :, o] += scipy.signal.correlate(padded, flipped[:, :, o, i], mode="valid")[:n, :m]
    return out


def main(argv=None):
    args = parse_arguments(__doc__, argv)
    rng = np.random.default_rng(0)
    rows = list(TABLE_HEADER)
    model = attention(d_model=64, heads=4, causal=True)
    for dtype in (np.float64, np.float32):
        params = model.init(seed=0, dtype=dtype)
        x = rng.standard_normal((32, 192, 64)).astype(dtype)
        error = np.max(np.abs(model.apply(params, x) - numpy_attention(params, x, 4, 16)))
        assert error < (1e-10 if dtype == np.float64 else 1e-3), error
        rows.append(ratio_row(f"causal attention L=192 d=64 h=4 b=32 {np.dtype(dtype).name}",
                              lambda: model.apply(params, x), lambda: numpy_attention(params, x, 4, 16),
                              1.2, args.repeats))
    conv = convolution(channels_in=16, channels_out=16, size=3, dims=2, cyclic=False)
    params = conv.init(seed=0)
    x = rng.standard_normal((32, 64, 64, 16))
    error = np.max(np.abs(conv.apply(params, x[:2]) - scipy_convolution(params["K"], x[:2])))
    assert error < 1e-10, error
    rows.append(ratio_row("2-D convolution 64x64, 3x3, 16->16, b=32 float64 (vs scipy.signal.correlate)",
                          lambda: conv.apply(params, x), lambda: scipy_convolution(params["K"], x), 1.5,
                          max(1, args.repeats // 3)))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
