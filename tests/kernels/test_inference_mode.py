"""A call under ``torch.inference_mode`` (an evaluation loop, a validation pass before training starts) leaves
nothing behind that a later training step trips on.  The torch engine keeps converted constants (structure
constants, index tables, masks) across calls; kept as inference tensors, every later call that saved one for
backward failed ("Inference tensors cannot be saved for backward").  Each test empties that store first, so the
inference call is the one that makes the constants."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import STRATEGY_NAMES, builtin_algebras

from product_interactions import kernels
from product_interactions.kernels.arrays import TORCH
from product_interactions.kernels.arrays.bounded_cache import BoundedCache
from product_interactions.kernels.arrays.engine import CONSTANTS_KEPT
from product_interactions.kernels.scans import low_rank, seq2tens
from product_interactions.kernels.scans.recurrence import METHODS

torch = pytest.importorskip("torch")

ALGEBRAS = builtin_algebras()


@pytest.fixture
def fresh_constants(monkeypatch):
    """The torch engine's store of converted constants, empty for the test."""
    monkeypatch.setattr(TORCH, "_constants", BoundedCache(CONSTANTS_KEPT))


def gradients_after_inference(function, operands):
    """`function`'s value and gradients at `operands`, called first under inference mode and then recording."""
    with torch.inference_mode():
        inferred = function(*(a.detach() for a in operands))
    assert inferred.is_inference()
    tracked = [a.detach().requires_grad_() for a in operands]
    out = function(*tracked)
    torch.testing.assert_close(out.detach(), inferred, rtol=1e-12, atol=1e-12)    # in place or recorded
    return out.detach(), torch.autograd.grad((out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum(),
                                             tracked)


def test_a_constant_kept_under_inference_mode_is_a_normal_tensor(fresh_constants):
    value, like = np.arange(4.0), torch.zeros(2, dtype=torch.float64)
    with torch.inference_mode():
        kept = TORCH.constant(value, like)
        assert not kept.is_inference()
    assert TORCH.constant(value, like) is kept


@pytest.mark.parametrize("name", list(ALGEBRAS))
def test_every_strategy_trains_after_an_inference_call(name, fresh_constants, monkeypatch):
    A = ALGEBRAS[name]
    rng = np.random.default_rng(0)
    x, y = (torch.tensor(rng.standard_normal((5, *A.shape))) for _ in range(2))
    for strategy in (*STRATEGY_NAMES, "auto"):
        try:
            kernel = kernels.product(A, strategy=strategy, dtype=np.float64)
        except ValueError:
            continue
        monkeypatch.setattr(TORCH, "_constants", BoundedCache(CONSTANTS_KEPT))
        value, gradients = gradients_after_inference(kernel, (x, y))
        monkeypatch.setattr(TORCH, "_constants", BoundedCache(CONSTANTS_KEPT))
        reference = [a.detach().requires_grad_() for a in (x, y)]
        out = kernel(*reference)
        expected = torch.autograd.grad((out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum(), reference)
        torch.testing.assert_close(value, out.detach(), rtol=0, atol=0)
        for got, want in zip(gradients, expected):
            torch.testing.assert_close(got, want, rtol=0, atol=0, msg=f"{strategy}")


@pytest.mark.parametrize("method", METHODS)
def test_the_scans_train_after_an_inference_call(method, fresh_constants):
    rng = np.random.default_rng(1)
    a, b, initial = (torch.tensor(rng.uniform(0, 1, shape)) for shape in ((40, 2, 3), (40, 2, 3), (2, 3)))
    gradients_after_inference(lambda *ops: kernels.linear_scan(*ops, method=method), (a, b, initial))
    u, delta, z = (torch.tensor(rng.uniform(0.1, 1, (2, 40, 3))) for _ in range(3))
    A, B, C, D = (torch.tensor(rng.uniform(-1, -0.1, shape)) for shape in ((3, 4), (2, 40, 4), (2, 40, 4), (3,)))
    gradients_after_inference(lambda *ops: kernels.selective_scan(*ops, method=method), (u, delta, A, B, C, D, z))


def test_the_convolution_softmax_and_seq2tens_train_after_an_inference_call(fresh_constants):
    rng = np.random.default_rng(2)
    u, k = torch.tensor(rng.standard_normal((2, 30, 3))), torch.tensor(rng.standard_normal((30, 3)))
    gradients_after_inference(kernels.causal_convolution, (u, k))
    gradients_after_inference(lambda s: kernels.softmax(s, axis=-1), (torch.tensor(rng.standard_normal((4, 6))),))
    x, V = torch.tensor(rng.standard_normal((2, 9, 3))), torch.tensor(rng.standard_normal((3, 3, 4)))
    for method in seq2tens.METHODS:
        gradients_after_inference(lambda p: sum(level.sum() for level in seq2tens.scan(p, 3, 2, method)), (x,))
    gradients_after_inference(lambda *ops: low_rank.low_rank(*ops, 3, independent=False), (x, V))
