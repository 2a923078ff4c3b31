"""Seq2Tens speed as ratios of medians measured in one run (interleaved), plus the scan methods' times.

    python benchmarks/seq2tens.py [--repeats 7]      (or python -m benchmarks.seq2tens)

Signatures against a numpy time loop, iisignature and pysiglib (forward; and forward plus gradient against
iisignature's sigbackprop and pysiglib's sig_backprop), and on torch, forward plus backward against the same time
loop written in torch; the LS2T layer's growth with the length, and its functionals through the compiled loop against
the engine's operations and against the signature of the same paths.  One BLAS thread, and one thread for the compiled
loop, unless OPENBLAS_NUM_THREADS is given (iisignature and pysiglib run on one): on this shared 2-core machine,
OpenBLAS threads swung the same timings by up to 10x under load.
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported; see the docstring
import autograd
import autograd.numpy as anp
import numpy as np

# This file's name is a package's module name: import the library from the repository root, not this folder.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.dirname(_here)] + [p for p in sys.path if os.path.abspath(p or ".") != _here]

from benchmarks.timing import (TABLE_HEADER, loop_threads_like_blas, median_time, optional,  # noqa: E402
                               parse_arguments, ratio_row)
from product_interactions.interactions.architectures.seq2tens import ls2t  # noqa: E402
from product_interactions.interactions.feature_map import signature  # noqa: E402
from product_interactions.kernels.native import build, clib  # noqa: E402


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


def signature_gradient(paths, depth, gradient):
    """Ours, forward and backward with autograd: d<gradient, signature>/d paths."""
    return autograd.grad(lambda a: anp.sum(signature(a, depth) * gradient))(paths)


def anchor_rows(paths, repeats) -> list:
    """Signatures against iisignature and pysiglib (compiled libraries; each row skipped when it is not installed):
    depth 4 at most 0.5x iisignature and 3x pysiglib, depth 2 at most 1.0x iisignature; forward plus gradient at
    depth 4, at most 0.5x iisignature and 3x pysiglib."""
    rows = []
    gradient = np.random.default_rng(1).standard_normal(signature(paths, 4).shape)
    padded = np.concatenate([np.zeros((len(paths), 1)), gradient], axis=1)           # pysiglib's level 0 too
    expected_gradient = signature_gradient(paths, 4, gradient)
    for name, target_by_depth, call, backward in (
            ("iisignature", {2: 1.0, 4: 0.5}, lambda module, depth: module.sig(paths, depth),
             lambda module, forward: module.sigbackprop(gradient, paths, 4)),
            ("pysiglib", {2: 3.0, 4: 3.0}, lambda module, depth: module.signature(paths, depth),
             lambda module, forward: module.sig_backprop(paths, np.ascontiguousarray(forward), padded, 4))):
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
        error = np.max(np.abs(np.asarray(backward(module, call(module, 4))) - expected_gradient))  # iisignature: 1e-7
        assert error < 1e-6 * (1 + np.abs(expected_gradient).max()), f"{name}'s gradient disagrees by {error}"
        rows.append(ratio_row(f"signature depth 4 forward + gradient, 256 paths, length 128, d = 4, float64 (vs "
                              f"{name}'s signature + backprop)", lambda: signature_gradient(paths, 4, gradient),
                              lambda: backward(module, call(module, 4)), 0.5 if name == "iisignature" else 3.0,
                              repeats))
    return rows


def torch_rows(paths, repeats) -> list:
    """On torch, forward plus backward against the time loop of `numpy_signature` written in torch (target 0.5, as
    against the numpy loop) and against pysiglib's torch functions when installed (target 3, as against its numpy
    ones), float64 and float32."""
    torch = optional("torch")
    if torch is None:
        return ["| torch rows skipped: torch is not installed | | | |"]

    def hand(x, depth):
        batch, d = x.shape[0], x.shape[2]
        levels = [x.new_ones((batch, 1))] + [x.new_zeros((batch, d ** m)) for m in range(1, depth + 1)]
        for t in range(1, x.shape[1]):
            step = x[:, t] - x[:, t - 1]
            exp = [x.new_ones((batch, 1)), step]
            for m in range(2, depth + 1):
                exp.append((exp[-1][:, :, None] * step[:, None, :]).reshape(batch, -1) / m)
            levels = [sum((levels[i][:, :, None] * exp[m - i][:, None, :]).reshape(batch, -1) for i in range(m + 1))
                      for m in range(depth + 1)]
        return torch.cat(levels[1:], dim=1)

    references = {"the time loop in torch": hand}
    pysiglib = optional("pysiglib.torch_api")
    if pysiglib is not None:
        references["pysiglib's torch functions"] = pysiglib.sig
    rows = []
    for dtype in (torch.float64, torch.float32):
        x = torch.tensor(paths, dtype=dtype, requires_grad=True)
        gradient = torch.ones(signature(x, 4).shape, dtype=dtype)

        def backward(function):
            x.grad = None
            function(x, 4).backward(gradient)
            return x.grad
        expected = backward(signature)
        for name, reference in references.items():
            error = float((backward(reference) - expected).abs().max() / expected.abs().max())
            assert error < 1e-5, f"{name} disagrees by {error}"
            rows.append(ratio_row(f"torch signature depth 4 fwd+bwd, 256 paths, length 128, d = 4, {str(dtype)[6:]} "
                                  f"(vs {name})", lambda: backward(signature), lambda: backward(reference),
                                  0.5 if reference is hand else 3.0, repeats))
    if pysiglib is None:
        rows.append("| pysiglib torch rows skipped: pysiglib is not installed | | | |")
    return rows


def ls2t_rows(repeats) -> list:
    """LS2T (width 64, order 4, no static map) on 64 paths of length 1,024 in R^4, float64: forward and forward plus
    gradient (x and V) through the compiled loop against the same functionals by the engine's operations in blocks
    of time (target 0.5), and against the depth-4 signature of the same paths (target 2, the GPU issue's); on torch
    too where it is installed."""
    from product_interactions.kernels.scans.low_rank import low_rank
    rng = np.random.default_rng(2)
    x, V = rng.standard_normal((64, 1024, 4)), rng.standard_normal((4, 4, 64)) / 8
    gradient = rng.standard_normal((64, 4, 64))

    def forward(method, x=x, V=V):
        return low_rank(x, V, 4, False, method=method)

    def both(method, x=x, V=V):
        return autograd.grad(lambda x, V: anp.sum(low_rank(x, V, 4, False, method=method) * gradient), (0, 1))(x, V)
    assert np.allclose(forward("compiled"), forward("blocks"), rtol=1e-10)
    assert all(np.allclose(a, b, rtol=1e-8) for a, b in zip(both("compiled"), both("blocks")))
    sig_gradient = rng.standard_normal(signature(x, 4).shape)
    rows = [ratio_row(f"LS2T functionals N = 64, M = 4, 64 paths, length 1024, h = 4, float64, {name} (compiled loop "
                      f"vs the engine's blocks)", lambda: call("compiled"), lambda: call("blocks"), 0.5, repeats)
            for name, call in (("forward", forward), ("forward + gradient", both))]
    rows.append(ratio_row("LS2T functionals forward + gradient, same paths (vs the depth-4 signature's)",
                          lambda: both("compiled"), lambda: signature_gradient(x, 4, sig_gradient), 2.0, repeats))
    torch = optional("torch")
    if torch is None:
        return rows + ["| torch LS2T rows skipped: torch is not installed | | | |"]
    for dtype in (torch.float64, torch.float32):
        tx, tV = (torch.tensor(a, dtype=dtype, requires_grad=True) for a in (x, V))
        rows.append(ratio_row(f"torch LS2T functionals fwd+bwd, same paths, {str(dtype)[6:]} (vs the depth-4 "
                              f"signature's)", lambda: low_rank(tx, tV, 4, False).sum().backward(),
                              lambda: signature(tx, 4).sum().backward(), 2.0, repeats))
    return rows


def method_times(rows, case, x, depth, repeats):
    """One row of every method's time; "compiled" is shown as unavailable where no C compiler works."""
    times = {method: median_time(lambda: signature(x, depth, method=method), repeats=repeats)
             for method in ("sequential", "levelwise", "parallel", "compiled")
             if method != "compiled" or build.unavailable() is None}
    cells = [f"{1e3 * t:.1f}" for t in times.values()] + ([] if "compiled" in times else ["unavailable"])
    rows.append(f"| {case} | " + " | ".join(cells) + " |")


def main(argv=None):
    args = parse_arguments(__doc__, argv)
    loop_threads_like_blas()
    rng = np.random.default_rng(0)
    rows = list(TABLE_HEADER)

    paths = rng.standard_normal((256, 128, 4)).cumsum(axis=1)
    error = np.max(np.abs(signature(paths, 4) - numpy_signature(paths, 4)) / (1 + np.abs(numpy_signature(paths, 4))))
    assert error < 1e-10, error
    rows.append(ratio_row("signature depth 4, 256 paths, length 128, d = 4, float64 (vs a numpy time loop)",
                          lambda: signature(paths, 4), lambda: numpy_signature(paths, 4), 0.5, args.repeats))
    rows += anchor_rows(paths, args.repeats)
    rows += torch_rows(paths, args.repeats)

    layer = ls2t(d_in=8, width=64, order=4)
    params = layer.init(seed=0)
    short, long = rng.standard_normal((16, 256, 8)), rng.standard_normal((16, 2048, 8))
    for return_sequences in (False, True):
        layer.return_sequences = return_sequences
        rows.append(ratio_row(f"LS2T N = 64, M = 4, batch 16, d = 8, return_sequences={return_sequences}: "
                              f"length 2048 / length 256", lambda: layer.apply(params, long),
                              lambda: layer.apply(params, short), 9, args.repeats))
    rows += ls2t_rows(args.repeats)

    rows += ["", "| signature case | sequential ms | levelwise ms | parallel ms | compiled ms |",
             "| --- | --- | --- | --- | --- |"]
    method_times(rows, "depth 4, 256 paths, length 128, d = 4", paths, 4, args.repeats)
    method_times(rows, "depth 3, 1 path, length 4096, d = 2", rng.standard_normal((1, 4096, 2)), 3, args.repeats)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
