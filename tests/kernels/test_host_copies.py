"""Copies from the host on a GPU's paths: a tensor made from a numpy array (an index table, structure constants, a
mask) at every call is a copy to the device at every call, and torch synchronises the stream after a copy from
pageable memory, so it waits for every kernel queued before it, as a read does (`test_device_reads`).  Constants
are converted once and kept (`Engine.constant`, `kernels.arrays.constants`).  Counted here on CPU tensors under
CUDA's rates (the GPU's forms): a second call of the same shapes, forward and backward, makes none.  Before, the
scatter strategy made two to six a call (its index tables, its values reshaped anew), and relayouts and gathers in
plans one each (`TorchEngine.take` converted its indices at every call)."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import STRATEGY_NAMES, builtin_algebras

from product_interactions import kernels
from product_interactions.kernels.arrays.rates import CUDA_RATES
from product_interactions.kernels.scans import seq2tens
from product_interactions.kernels.scans.recurrence import METHODS

torch = pytest.importorskip("torch")
from product_interactions.kernels.arrays import TORCH  # noqa: E402

ALGEBRAS = builtin_algebras()


@pytest.fixture(autouse=True)
def gpu_rates(monkeypatch):
    monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)


def assert_steady(host_copies, step, *operands):
    """`step` of `operands` twice, forward and backward: the second time it makes no tensor from host data."""
    torch.autograd.grad(step(*operands).sum(), operands)
    with host_copies() as made:
        torch.autograd.grad(step(*operands).sum(), operands)
    assert made == []


@pytest.mark.parametrize("name", list(ALGEBRAS))
def test_every_strategy_copies_nothing_from_the_host_once_its_constants_are_on_the_device(name, host_copies):
    A = ALGEBRAS[name]
    x, y = (torch.randn(7, *A.shape, dtype=torch.float64, requires_grad=True) for _ in range(2))
    for strategy in (*STRATEGY_NAMES, "auto"):
        try:
            kernel = kernels.product(A, strategy=strategy)
        except ValueError:
            continue
        assert_steady(host_copies, kernel, x, y)


@pytest.mark.parametrize("method", METHODS)
def test_the_scans_copy_nothing_from_the_host(method, host_copies):
    def rand(*shape, low=0.1):
        return (torch.rand(*shape, dtype=torch.float64) + low).requires_grad_()
    assert_steady(host_copies, lambda *a: kernels.linear_scan(*a, method=method), rand(30, 2, 5), rand(30, 2, 5),
                  rand(2, 5))
    assert_steady(host_copies, lambda u, d, A, *rest: kernels.selective_scan(u, d, -A, *rest, method=method),
                  rand(2, 30, 3), rand(2, 30, 3), rand(3, 4), rand(2, 30, 4), rand(2, 30, 4), rand(3), rand(2, 30, 3))


def test_the_convolution_softmax_and_seq2tens_copy_nothing_from_the_host(host_copies):
    rng = np.random.default_rng(0)
    u, k = (torch.tensor(rng.standard_normal(shape), requires_grad=True) for shape in ((2, 3, 40), (40,)))
    assert_steady(host_copies, kernels.causal_convolution, u, k)
    assert_steady(host_copies, lambda s: kernels.softmax(s, axis=-1), torch.randn(4, 6, requires_grad=True))
    x, V = (torch.tensor(rng.standard_normal(shape), requires_grad=True) for shape in ((2, 20, 3), (3, 3, 4)))
    for method in seq2tens.METHODS:
        assert_steady(host_copies, lambda p: sum(level.sum() for level in seq2tens.scan(p, 3, 2, method)), x)
    assert_steady(host_copies, lambda *a: seq2tens.low_rank(*a, 3, independent=False), x, V)


def test_an_index_table_changed_in_place_is_taken_anew():
    """Only read-only tables (the library's own, `kernels.arrays.constants.frozen`) are kept on the device: a
    caller's writable index array changed in place gives its new entries, as on numpy."""
    from product_interactions.kernels.arrays import NUMPY, frozen
    a, indices = torch.arange(5.0), np.array([0, 1])
    assert TORCH.take(a, indices, 0).tolist() == [0.0, 1.0]
    indices[:] = [3, 2]
    assert TORCH.take(a, indices, 0).tolist() == NUMPY.take(a.numpy(), indices, 0).tolist() == [3.0, 2.0]
    kept = frozen(np.array([4, 0]))
    assert TORCH.take(a, kept, 0) .tolist() == [4.0, 0.0] and TORCH.constant(kept, a) is TORCH.constant(kept, a)
