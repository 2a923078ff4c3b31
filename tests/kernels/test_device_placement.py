"""The kernels' GPU forms keep every tensor on the operands' device: run on torch's meta device standing in for a
GPU (the `meta_as_gpu` fixture), where any index table, mask or constant made on the CPU raises as it would on
CUDA.  Forward and backward, at a few rows and at a million (chunked where the memory limit asks), for every
built-in algebra under every strategy that represents it, for the scans by each of their methods, and for a
compiled plan's masked attention, fused or in its three steps."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import STRATEGY_NAMES, builtin_algebras

from product_interactions import kernels
from product_interactions.algebra import diagonal, position, tensor_product
from product_interactions.interactions import Flip, Linear, Mask, Parameter, Pointwise, Reduce, Signal, compiler
from product_interactions.kernels.arrays import TORCH
from product_interactions.kernels.arrays.rates import CUDA_RATES
from product_interactions.kernels.scans import low_rank, seq2tens
from product_interactions.kernels.scans.recurrence import METHODS

torch = pytest.importorskip("torch")

ALGEBRAS = builtin_algebras()


def on(device, *shape, grad=True):
    return torch.zeros(shape, dtype=torch.float32, device=device, requires_grad=grad)


def assert_on(device, *tensors):
    assert all(t is not None and t.device == device for t in tensors), [getattr(t, "device", t) for t in tensors]


def representing(A):
    """The strategies that represent `A` (auto included), each as its kernel."""
    found = {}
    for name in (*STRATEGY_NAMES, "auto"):
        try:
            found[name] = kernels.product(A, strategy=name, dtype=np.float32)
        except ValueError:
            continue
    return found


@pytest.mark.parametrize("name", list(ALGEBRAS))
def test_every_strategy_of_every_algebra_runs_on_the_device(name, meta_as_gpu):
    A = ALGEBRAS[name]
    found = representing(A)
    assert "auto" in found and len(found) > 1
    for strategy, kernel in found.items():
        for batch in ((6,), (1_000_000,), (3, 4)):
            x, y = on(meta_as_gpu, *batch, *A.shape), on(meta_as_gpu, *batch, *A.shape)
            z = kernel(x, y)
            assert z.shape == (*batch, *A.shape), (strategy, batch)
            assert_on(meta_as_gpu, z, *torch.autograd.grad(z.sum(), [x, y]))


def test_the_cost_model_prices_meta_tensors_as_a_gpu(meta_as_gpu):
    """The stand-in holds: auto takes CUDA's choice for meta tensors (quaternions at 100,000 rows: one dense
    contraction where the CPU takes generated code)."""
    kernel = kernels.product(ALGEBRAS["quaternions"], dtype=np.float32)
    meta = torch.zeros(1, device=meta_as_gpu)
    chosen = {rates: kernel.strategies_for(100_000, TORCH, 4, False, rates)
              for rates in (TORCH.rates_for(meta), CUDA_RATES, TORCH.rates_for(torch.zeros(1)))}
    assert TORCH.place(meta) == "cuda/meta" and list(chosen.values()) == [("dense",), ("dense",), ("codegen",)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("length", [7, 300])
def test_the_linear_and_selective_scans_run_on_the_device_by_every_method(method, length, meta_as_gpu):
    a, b, initial = on(meta_as_gpu, length, 2, 5), on(meta_as_gpu, length, 2, 5), on(meta_as_gpu, 2, 5)
    h = kernels.linear_scan(a, b, initial, method=method)                   # time first
    assert h.shape == (length, 2, 5)
    assert_on(meta_as_gpu, h, *torch.autograd.grad(h.sum(), [a, b, initial]))
    u, delta, z = (on(meta_as_gpu, 2, length, 3) for _ in range(3))
    A, B, C, D = on(meta_as_gpu, 3, 4), on(meta_as_gpu, 2, length, 4), on(meta_as_gpu, 2, length, 4), on(meta_as_gpu, 3)
    y = kernels.selective_scan(u, delta, A, B, C, D, z, method=method)
    assert y.shape == (2, length, 3)
    assert_on(meta_as_gpu, y, *torch.autograd.grad(y.sum(), [u, delta, A, B, C, D, z]))


@pytest.mark.parametrize("length", [7, 300])
def test_the_causal_convolution_runs_on_the_device(length, meta_as_gpu):
    x, kernel = on(meta_as_gpu, 2, 3, length), on(meta_as_gpu, 3, length)
    y = kernels.causal_convolution(x, kernel)
    assert y.shape == (2, 3, length)
    assert_on(meta_as_gpu, y, *torch.autograd.grad(y.sum(), [x, kernel]))


@pytest.mark.parametrize("method", [name for name in seq2tens.METHODS if name != "compiled"])  # the CPU's C loop
@pytest.mark.parametrize("return_sequences", [False, True])
def test_the_seq2tens_scans_run_on_the_device(method, return_sequences, meta_as_gpu):
    x, V = on(meta_as_gpu, 2, 50, 3), on(meta_as_gpu, 3, 3, 4)
    levels = seq2tens.scan(x, 3, 2, method, return_sequences)
    assert [tuple(level.shape) for level in levels] == [(2, *(50,) * return_sequences, 3 ** m) for m in (1, 2, 3)]
    assert_on(meta_as_gpu, *levels, *torch.autograd.grad(sum(level.sum() for level in levels), [x]))
    features = low_rank.low_rank(x, V, 3, independent=False, return_sequences=return_sequences)
    assert features.shape == (2, *(50,) * return_sequences, 3, 4)
    assert_on(meta_as_gpu, features, *torch.autograd.grad(features.sum(), [x, V]))


def test_the_masked_softmax_runs_on_the_device(meta_as_gpu):
    x = on(meta_as_gpu, 2, 5, 5)
    mask = torch.ones(5, 5, dtype=torch.bool, device=meta_as_gpu).tril()
    y = kernels.softmax(x, axis=-1, mask=mask)
    assert y.shape == (2, 5, 5)
    assert_on(meta_as_gpu, y, *torch.autograd.grad(y.sum(), [x]))


def _masked_attention(length: int, mask: Mask):
    """One-head attention as an expression whose softmax keeps `mask`."""
    features = diagonal(4)
    X = Signal("x", tensor_product(position(length), position(length), features), units=[1])
    Q, K, V = (Linear(Parameter(name, (4, 4)), X, factor=2, into=features) for name in "QKV")
    weights = Pointwise("softmax", Reduce(Q * Flip(K), factor=2), factor=1, mask=mask)
    return Reduce(weights * Flip(V), factor=1)


EMPTY_ROW = np.tril(np.ones((6, 6), bool))
EMPTY_ROW[2] = False                                        # a query without keys: the three steps, not fused


@pytest.mark.parametrize("mask", [Mask.causal(), Mask.band(1), Mask.full(), Mask.fixed(EMPTY_ROW)],
                         ids=["causal", "band", "full", "fixed with an empty row"])
def test_a_compiled_plan_runs_on_the_device_fused_or_in_its_three_steps(mask, meta_as_gpu):
    plan = compiler.compile(_masked_attention(6, mask))
    params = {name: on(meta_as_gpu, 4, 4) for name in "QKV"}
    x = on(meta_as_gpu, 2, 6, 4)
    out = plan(x, params)
    assert out.shape == (2, 6, 4)
    assert_on(meta_as_gpu, out, *torch.autograd.grad(out.sum(), [x, *params.values()]))
