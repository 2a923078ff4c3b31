"""The GPU issue's rows on one device: the library on torch against hand-written torch, ratios of medians timed in
one run, every timed call fenced by the device's synchronisation.

    python benchmarks/engines.py --device cuda [--repeats 5] [--scale 1.0]
    bash benchmarks/gpu.sh [OUT_DIR]          # the tests that need CUDA, then these rows with --calibrate

Rows (float32; at ``--scale 1`` the sizes of the issue's table, smaller ones on a CPU with ``--scale 0.01``):
products of PGA (batch 10^6), CG lmax 4 (10^5) and lmax 6 (5 x 10^4), forward and forward plus backward, against
the best of the hand forms (einsum over the dense constants, x @ lam then a batched matmul) and against the
dense form alone (the block-sparse targets 0.5 and 1/3); causal attention (d_model 64, 4 heads) at L 1024 B 32
and L 4096 B 8 against ``scaled_dot_product_attention``; the selective scan at Mamba's shapes (batch 8, d_inner
128, d_state 16, L 1024 and 4096) forward plus backward against a hand-written chunked scan in plain torch
(`chunked_reference`), and the Mamba block's against the same; a dense d = 64 product at batch 65,536 as a share of
the device's GEMM peak measured in the same run (TF32 off); the attention and Mamba modules under
``torch.compile(fullgraph=True)`` against the same eager modules, forward plus backward; the copy model's
training step through the library's Adam on the device against the same model in torch
(`benchmarks.engines.copy_torch_rows`).  Before the rows, the
rates auto prices by on the device (`Engine.rates_for`) and, with ``--calibrate``, the measured ones.
"""
from __future__ import annotations

import traceback
from collections.abc import Iterator

import numpy as np

from benchmarks.engines import copy_torch_rows
from benchmarks.timing import fenced, ratio_row
from product_interactions import kernels
from product_interactions.algebra import Algebra, clebsch_gordan, clifford
from product_interactions.interactions.architectures import attention, mamba
from product_interactions.kernels.arrays import TORCH


def chunked_reference(torch, u, delta, A, B, C, chunk: int = 16):
    """Mamba's selective scan by hand in plain torch, in chunks of `chunk` steps: within a chunk
    h_t = exp(S_t) h_0 + sum_{s <= t} exp(S_t - S_s) b_s (S the running sum of delta A, every exponent <= 0), the
    chunks in sequence.  u, delta (batch, L, d), A (d, n), B, C (batch, L, n); L a multiple of `chunk`."""
    batch, length, d = u.shape
    log_a = torch.einsum("bld,dn->bldn", delta, A)
    b = torch.einsum("bld,bln,bld->bldn", delta, B, u)
    keep = torch.ones(chunk, chunk, dtype=torch.bool, device=u.device).tril()[None, :, :, None, None]
    h, ys = torch.zeros(batch, d, A.shape[1], dtype=u.dtype, device=u.device), []
    for start in range(0, length, chunk):
        S = log_a[:, start:start + chunk].cumsum(1)
        decay = torch.exp((S[:, :, None] - S[:, None, :]).masked_fill(~keep, float("-inf")))
        states = torch.exp(S) * h[:, None] + torch.einsum("btsdn,bsdn->btdn", decay, b[:, start:start + chunk])
        ys.append(torch.einsum("btdn,btn->btd", states, C[:, start:start + chunk]))
        h = states[:, -1]
    return torch.cat(ys, 1)


def _products(torch, device, scale: float, repeats: int) -> list[str]:
    rows = []
    for A, batch, dense_target in ((clifford(3, 0, 1), 10**6, None), (clebsch_gordan(4), 10**5, 0.5),
                                   (clebsch_gordan(6), 5 * 10**4, 1 / 3)):
        batch = max(64, int(batch * scale))
        kernel = kernels.product(A)
        g = torch.Generator(device=device).manual_seed(A.dim)
        x, y = (torch.randn(batch, A.dim, generator=g, device=device) for _ in range(2))
        lam = torch.tensor(A.structure_constants(), dtype=x.dtype, device=device)
        hand = {"dense einsum": lambda x, y: torch.einsum("bi,bj,ijk->bk", x, y, lam),
                "x @ lam, bmm": lambda x, y: torch.bmm(y[:, None], (x @ lam.reshape(A.dim, -1)).reshape(
                    len(x), A.dim, A.dim))[:, 0]}
        assert torch.allclose(kernel(x, y), hand["dense einsum"](x, y), rtol=1e-3, atol=1e-3)
        names = "+".join(kernel.strategies_for(batch, TORCH, 4, TORCH.runs_compiled(x), TORCH.rates_for(x)))

        def both(product):
            a, b = x.detach().requires_grad_(), y.detach().requires_grad_()
            product(a, b).sum().backward()
        for phase, step in (("fwd", lambda f: lambda: f(x, y)), ("fwd+bwd", lambda f: lambda: both(f))):
            for name, reference in hand.items():
                target = dense_target if dense_target and name == "dense einsum" else 1.0
                rows.append(ratio_row(f"{A.name} batch {batch} {phase} ({names}) vs {name}",
                                      fenced(torch, step(kernel)), fenced(torch, step(reference)), target, repeats))
        if TORCH.runs_compiled(x):
            rows.append(_loop_rate(torch, A, x, y, repeats))
    return rows


def _loop_rate(torch, A: Algebra, x, y, repeats: int) -> str:
    """The compiled loop forced (the Triton kernel on a GPU) against the library's dense form, and the loop's
    measured rate beside the one auto prices it by (`Rates.compiled32`): what a calibration of the loop would fit."""
    from benchmarks.timing import interleaved, table_row
    loop, dense = (kernels.product(A, strategy=name) for name in ("compiled", "dense"))
    seconds, dense_seconds = interleaved(fenced(torch, lambda: loop(x, y)), fenced(torch, lambda: dense(x, y)),
                                         repeats)
    flops = 3 * kernels.Factor.from_algebra(A).nnz * len(x)
    return (table_row(f"{A.name} batch {len(x)} fwd: compiled vs the library's dense", seconds / dense_seconds, 1.0) +
            f"\n  (the loop: {flops / seconds / 1e12:.2f} TFLOP/s measured, "
            f"{TORCH.rates_for(x).compiled32 / 1e12:.2f} priced)")


def _attention(torch, device, scale: float, repeats: int) -> list[str]:
    functional, rows, model = torch.nn.functional, [], attention(d_model=64, heads=4)

    def sdpa(p, x):
        b, n, _ = x.shape
        q, k, v = [(x @ p[w].T).reshape(b, n, 4, 16).transpose(1, 2) for w in ("W_Q", "W_K", "W_V")]
        o = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(1, 2).reshape(b, n, 64) @ p["W_O"].T

    for length, batch, targets in ((1024, 32, (1.15, 1.1)), (4096, 8, (1.15, 1.1))):
        length = max(16, int(length * scale ** 0.5))
        params = {k: torch.tensor(v, dtype=torch.float32, device=device, requires_grad=True)
                  for k, v in model.init(seed=0).items()}
        x = torch.randn(batch, length, 64, device=device)
        assert float((model.apply(params, x) - sdpa(params, x)).detach().abs().max()) < 1e-4
        for phase, target, step in (("fwd", targets[0], lambda f: lambda: f(params, x)),
                                    ("fwd+bwd", targets[1], lambda f: lambda: f(params, x).sum().backward())):
            rows.append(ratio_row(f"attention L {length} B {batch} {phase} vs scaled_dot_product_attention",
                                  fenced(torch, step(model.apply)), fenced(torch, step(sdpa)), target, repeats))
    return rows


def _scans(torch, device, scale: float, repeats: int) -> list[str]:
    rows, g = [], torch.Generator(device=device).manual_seed(5)
    for length in (1024, 4096):
        length = max(64, int(length * scale ** 0.5) // 16 * 16)
        batch, d, n = 8, 128, 16
        u, B, C = (torch.randn(*shape, generator=g, device=device, requires_grad=True)
                   for shape in ((batch, length, d), (batch, length, n), (batch, length, n)))
        delta = (torch.rand(batch, length, d, generator=g, device=device) * 0.1 + 0.01).requires_grad_()
        A = (-torch.rand(d, n, generator=g, device=device) - 0.5).requires_grad_()
        reference = lambda: chunked_reference(torch, u, delta, A, B, C)  # noqa: E731
        assert torch.allclose(kernels.selective_scan(u, delta, A, B, C), reference(), rtol=1e-3, atol=1e-3)
        rows.append(ratio_row(f"selective scan B 8 L {length} d_inner 128 d_state 16 fwd+bwd vs hand chunked scan",
                              fenced(torch, lambda: kernels.selective_scan(u, delta, A, B, C).sum().backward()),
                              fenced(torch, lambda: reference().sum().backward()), 1.0, repeats))
        block = mamba(d_model=64, d_state=16)
        params = {k: torch.tensor(v, dtype=torch.float32, device=device, requires_grad=True)
                  for k, v in block.init(seed=0).items()}
        x = torch.randn(batch, length, 64, device=device)
        rows.append(ratio_row(f"Mamba block d_model 64 B 8 L {length} fwd+bwd vs hand chunked scan alone",
                              fenced(torch, lambda: block.apply(params, x).sum().backward()),
                              fenced(torch, lambda: reference().sum().backward()), 1.0, repeats))
    return rows


def _ls2t(torch, device, scale: float, repeats: int) -> list[str]:
    """LS2T (width 64, order 4) forward plus backward against the depth-4 signature of the same paths (256 paths of
    length 1,024 in R^4 at scale 1; target <= 2)."""
    from product_interactions.interactions.architectures import ls2t
    from product_interactions.interactions.feature_map import signature
    paths, length = max(8, int(256 * scale ** 0.5)), max(16, int(1024 * scale ** 0.5))
    layer = ls2t(d_in=4, width=64, order=4, static=None)
    params = {k: torch.tensor(v, dtype=torch.float32, device=device, requires_grad=True)
              for k, v in layer.init(seed=0).items()}
    x = torch.randn(paths, length, 4, device=device, requires_grad=True)

    def ours():
        layer.apply(params, x).sum().backward()

    def reference():
        signature(x, 4).sum().backward()
    return [ratio_row(f"LS2T width 64 order 4, {paths} paths of length {length} in R^4, fwd+bwd vs the depth-4 "
                      f"signature's", fenced(torch, ours), fenced(torch, reference), 2.0, repeats)]


def _compiled(torch, device, scale: float, repeats: int) -> list[str]:
    """The attention (L 1024 B 32) and Mamba (L 4096 B 8) modules under ``torch.compile(fullgraph=True)`` (Inductor)
    against the same eager modules, the forward under ``torch.no_grad`` (inference) and forward plus backward
    (target <= 1)."""
    rows = []
    for model, length, batch in ((attention(d_model=64, heads=4), 1024, 32), (mamba(d_model=64, d_state=16), 4096, 8)):
        length = max(16, int(length * scale ** 0.5))
        module = model.to_torch(seed=0, dtype="float32").to(device)
        compiled = torch.compile(module, fullgraph=True)
        x = torch.randn(batch, length, 64, device=device)
        assert torch.allclose(compiled(x), module(x), rtol=1e-4, atol=1e-4)
        name = f"{type(module).__name__} L {length} B {batch} under torch.compile(fullgraph=True)"
        with torch.no_grad():
            rows.append(ratio_row(f"{name} forward, no_grad, vs eager", fenced(torch, lambda: compiled(x)),
                                  fenced(torch, lambda: module(x)), 1.0, repeats))
        rows.append(ratio_row(f"{name} fwd+bwd vs eager", fenced(torch, lambda: compiled(x).sum().backward()),
                              fenced(torch, lambda: module(x).sum().backward()), 1.0, repeats))
    return rows


def _dense_peak(torch, device, scale: float, repeats: int) -> list[str]:
    from benchmarks.timing import median_time
    torch.backends.cuda.matmul.allow_tf32 = False
    rng = np.random.default_rng(0)
    kernel = kernels.product(Algebra.from_structure_constants(rng.standard_normal((64, 64, 64)), exact=False))
    batch, side = max(256, int(65536 * scale)), 8192 if device != "cpu" else 2048
    x, y = (torch.randn(batch, 64, device=device) for _ in range(2))
    square = torch.randn(side, side, device=device)
    peak = 2 * side**3 / median_time(fenced(torch, lambda: square @ square), repeats=repeats)
    share = 2 * batch * 64**3 / median_time(fenced(torch, lambda: kernel(x, y)), repeats=repeats) / peak
    return [f"| dense d = 64, batch {batch}, float32: share of the GEMM peak ({peak / 1e12:.1f} TFLOP/s, TF32 off) "
            f"| {share:.2f} | >= 0.6 | {'ok' if share >= 0.6 else 'MISSED'} |"]


def _copy(torch, device, scale: float, repeats: int) -> list[str]:
    """The copy model's training step through the library's Adam against the same model in torch, float32."""
    return copy_torch_rows(torch, repeats, device, ("float32",))


def device_rows(device: str, repeats: int, scale: float = 1.0, calibrate: bool = False) -> Iterator[str]:
    """Every row above on torch's `device`, each part's rows as soon as they are measured.  A part that fails gives
    a row naming its error (its traceback on stderr) and the next part runs: a device's time is lent by the
    minute."""
    import torch
    place = torch.device(device)
    if place.type == "cuda" and place.index is not None:      # what `fenced` synchronises: "cuda:1" too
        torch.cuda.set_device(place)
    like = TORCH.like("float32", device)
    yield f"torch {torch.__version__} on {TORCH.place(like)}; auto prices by: {TORCH.rates_for(like)}"

    def _calibrated(torch, device, scale: float, repeats: int) -> list[str]:
        return [f"calibrated: {kernels.calibrate(like)}"]
    parts = ((_calibrated,) if calibrate else ()) + (_products, _attention, _scans, _ls2t, _compiled, _dense_peak,
                                                     _copy)
    for part in parts:
        try:
            yield from part(torch, device, scale, repeats)
        except Exception as error:                      # reported as a row, and the other parts still run
            traceback.print_exc()
            yield f"| {part.__name__.strip('_')} failed: {type(error).__name__}: {error} | | | FAILED |"
