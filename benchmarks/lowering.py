"""The lowering at scale: build cost, memory, plan reuse and linear-time layers, as ratios and bounds measured in
one run (see the lowering issue's figures).

    python benchmarks/lowering.py [--repeats 5] [--quick]

1. attention(d_model=64, heads=4), build plus first call at length 1024 (batch 8), in a fresh process: seconds
   and peak memory beyond the arrays themselves (input, scores, output).  Targets: <= 2 s, <= 1 GB.
2. Its forward pass at lengths 192 and 1024 (batch 32) against the numpy attention of benchmarks/interactions.py
   (batched matmul, masked softmax), timed alternately.  Target: <= 1.0.
3. 100 distinct lengths in one fresh process (attention, d_model 16, lengths 64..163): peak memory after the
   first call and after the last.  Target: growth <= 500 MB.
4. gating and a causal convolution at 1,000 / 10,000 / 100,000 steps: seconds per call (after the first), and
   the ratio of the 100,000-step time to 100 times the 1,000-step time (linear: about 1).  Target: <= 1 s.
5. The product of T(R^4) at degree 5 (batch 2048) against plain numpy that adds, for each degree k, the outer
   products x_i (x) y_j over i + j = k.  Target: <= 1.0.

The strategies' own ratios (auto against the best forced strategy on every built-in algebra) are in
``benchmarks/strategies.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.interactions import numpy_attention  # noqa: E402
from benchmarks.timing import TABLE_HEADER, median_time, ratio_row  # noqa: E402
from product_interactions import kernels  # noqa: E402
from product_interactions.algebra import tensor_algebra  # noqa: E402
from product_interactions.interactions.architectures import attention, convolution, gating  # noqa: E402

FIRST_CALL = r"""
import json, resource, sys, time
import numpy as np
from product_interactions.interactions.architectures import attention
x = np.random.default_rng(0).standard_normal((8, 1024, 64))
model = attention(d_model=64, heads=4)
params = model.init(seed=0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
start = time.perf_counter()
y = model.apply(params, x)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
arrays = y.nbytes + 8 * 4 * 1024 * 1024 * 8          # output and the (8, 4, 1024, 1024) scores (x is in `before`)
print(json.dumps({"seconds": seconds, "beyond": peak - before - arrays}))
"""

MANY_LENGTHS = r"""
import json, resource
import numpy as np
from product_interactions.interactions.architectures import attention
model = attention(d_model=16, heads=2)
params = model.init(seed=0)
peaks = []
for n in range(64, 164):
    model.apply(params, np.random.default_rng(n).standard_normal((4, n, 16)))
    peaks.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
print(json.dumps({"first": peaks[0], "last": peaks[-1], "plans": len(set(map(id, model._plans.values())))}))
"""


def fresh(code: str) -> dict:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def levelwise_numpy(width: int, degree: int):
    """The reference: for each degree k, the sum of the outer products x_i (x) y_{k-i}, written with numpy."""
    offsets = [sum(width**m for m in range(k)) for k in range(degree + 2)]

    def product(x, y):
        levels = []
        for k in range(degree + 1):
            total = 0
            for i in range(k + 1):
                xi, yj = x[:, offsets[i]:offsets[i + 1]], y[:, offsets[k - i]:offsets[k - i + 1]]
                total = total + (xi[:, :, None] * yj[:, None, :]).reshape(len(x), -1)
            levels.append(total)
        return np.concatenate(levels, axis=1)
    return product


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="skip the length-1024 forward ratio (slow)")
    arguments = parser.parse_args(argv)
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    rows = list(TABLE_HEADER)

    first = fresh(FIRST_CALL)
    rows.append(f"| attention d=64 h=4 L=1024 b=8: build + first call (s) | {first['seconds']:.2f} | <= 2 | "
                f"{'ok' if first['seconds'] <= 2 else 'MISSED'} |")
    rows.append(f"| same: peak memory beyond input, scores, output (GB) | {first['beyond'] / 2**30:.2f} | <= 1 | "
                f"{'ok' if first['beyond'] <= 2**30 else 'MISSED'} |")

    model = attention(d_model=64, heads=4)
    params = model.init(seed=0)
    for n in (192,) if arguments.quick else (192, 1024):
        x = np.random.default_rng(n).standard_normal((32, n, 64))
        error = np.max(np.abs(model.apply(params, x) - numpy_attention(params, x, 4, 16)))
        assert error < 1e-10, error
        rows.append(ratio_row(f"attention forward L={n} b=32 d=64 h=4, vs numpy (batched matmul, masked softmax)",
                              lambda: model.apply(params, x), lambda: numpy_attention(params, x, 4, 16), 1.0,
                              arguments.repeats))

    many = fresh(MANY_LENGTHS)
    growth = (many["last"] - many["first"]) / 2**20
    rows.append(f"| 100 lengths (64..163), attention d=16: peak memory growth after the first (MB); "
                f"{many['plans']} plan(s) | {growth:.0f} | <= 500 | {'ok' if growth <= 500 else 'MISSED'} |")

    for name, layer in (("gating", gating(channels=8)),
                        ("causal convolution, 3 taps", convolution(channels_in=8, channels_out=8, size=3,
                                                                   cyclic=False))):
        p = layer.init(seed=0)
        times = {}
        for n in (1_000, 10_000, 100_000):
            x = np.random.default_rng(n).standard_normal((1, n, 8))
            times[n] = median_time(lambda: layer.apply(p, x), repeats=arguments.repeats)
        linear = times[100_000] / (100 * times[1_000])
        rows.append(f"| {name}, 8 channels: s per call at 1k / 10k / 100k steps "
                    f"({times[1_000]:.4f} / {times[10_000]:.4f} / {times[100_000]:.3f}); 100k / (100 x 1k) = "
                    f"{linear:.2f} | {times[100_000]:.3f} | <= 1 | {'ok' if times[100_000] <= 1 else 'MISSED'} |")

    T = tensor_algebra(4, 5)
    kernel = kernels.product(T)
    reference = levelwise_numpy(4, 5)
    x, y = (np.random.default_rng(seed).standard_normal((2048, T.dim)) for seed in (1, 2))
    assert np.allclose(kernel(x, y), reference(x, y))
    rows.append(ratio_row(f"T(R^4) degree 5 product, batch 2048 ({'+'.join(kernel.strategies)}), vs numpy "
                          f"levelwise outer products", lambda: kernel(x, y), lambda: reference(x, y), 1.0,
                          arguments.repeats))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    status = main()
    print(f"({time.perf_counter() - start:.0f} s)")
    sys.exit(status)
