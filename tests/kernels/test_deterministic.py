"""Under ``torch.use_deterministic_algorithms(True)`` CUDA's cumsum of floating numbers raises, forward and backward
("cumsum_cuda_kernel does not have a deterministic implementation").  The library's running sums (LS2T's and the
signature's prefixes, S4D's convolution, the causal convolution's marks of non-finite inputs) take a log-depth
prefix scan of additions there instead, and the convolution counts its marks in integers.  Checked without a GPU:
the routing on the GPU stand-in (no floating ``torch.cumsum``), and the values of that form on the CPU against
``torch.cumsum``'s."""
from __future__ import annotations

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.interactions.architectures import deep_ls2t, ls2t, ssm
from product_interactions.kernels.arrays import TORCH
from product_interactions.kernels.scans import low_rank, seq2tens

torch = pytest.importorskip("torch")
from product_interactions.kernels.arrays import torch_engine  # noqa: E402

MODELS = [ls2t(d_in=3, width=2, order=2), deep_ls2t(d_in=3, widths=(2, 2), order=2), ssm(channels=3, d_state=2)]


@pytest.fixture
def deterministic():
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(before)


def floating_cumsums(step):
    """The floating ``torch.cumsum`` calls `step` makes, forward and backward (by dtype)."""
    from torch.overrides import TorchFunctionMode
    seen = []

    class Spy(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in (torch.cumsum, torch.Tensor.cumsum) and (args[0].is_floating_point() or args[0].is_complex()):
                seen.append(args[0].dtype)
            return func(*args, **(kwargs or {}))
    with Spy():
        step()
    return seen


def cases():
    """(name, call): each library call with running sums, given ``make(*shape)`` for its tensors."""
    yield "causal_convolution", lambda make: kernels.causal_convolution(make(2, 3, 20), make(20))
    for method in [m for m in seq2tens.METHODS if m != "compiled"]:       # the compiled C scan is the CPU's
        yield f"seq2tens {method}", lambda make, m=method: sum(
            level.sum() for level in seq2tens.scan(make(2, 9, 3), 3, 2, m))
    yield "low_rank", lambda make: low_rank.low_rank(make(2, 9, 3), make(3, 3, 4), 3, independent=False)
    for model in MODELS:
        yield type(model).__name__, lambda make, m=model: m.apply(
            {name: make(*np.shape(value)) for name, value in m.init(seed=0).items()}, make(2, 7, 3))


def run(call, device="cpu"):
    """`call` on seeded tensors on `device`, and its gradients: (output, gradients of every tensor made)."""
    generator, made = torch.Generator().manual_seed(0), []

    def make(*shape):
        made.append((torch.rand(*shape, generator=generator, dtype=torch.float64) + 0.1).to(device).requires_grad_())
        return made[-1]
    out = call(make)
    return out, torch.autograd.grad((out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype, device=device).view(
        out.shape)).sum(), made, allow_unused=True)


def test_on_a_gpu_deterministic_mode_takes_no_floating_cumsum(deterministic, meta_as_gpu):
    for name, call in cases():
        assert floating_cumsums(lambda: run(call, meta_as_gpu)) == [], name


def test_without_deterministic_mode_the_gpu_keeps_torch_cumsum(meta_as_gpu):
    """The prefix scan costs log2(L) launches: taken only where asked for."""
    assert floating_cumsums(lambda: run(dict(cases())["seq2tens levelwise"], meta_as_gpu))


@pytest.mark.parametrize("name", [name for name, _ in cases()])
def test_the_deterministic_running_sums_equal_torch_cumsum(name, monkeypatch):
    """On CPU tensors, with the deterministic form forced: the values and gradients torch.cumsum gives (to rounding:
    the additions run in another order)."""
    results = {}
    for forced in (False, True):
        monkeypatch.setattr(torch_engine, "_deterministic_sums_needed", lambda torch, a, f=forced: f)
        assert bool(floating_cumsums(lambda: TORCH.cumsum(torch.ones(4, 3), 0))) is not forced
        results[forced] = run(dict(cases())[name])
    (out, gradients), (expected, expected_gradients) = results[True], results[False]
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    for got, want in zip(gradients, expected_gradients):
        assert (got is None) == (want is None)
        if got is not None:
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
