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
from product_interactions.kernels.scans import low_rank, seq2tens
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
    assert_steady(host_copies, lambda *a: low_rank.low_rank(*a, 3, independent=False), x, V)


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


def test_a_numpy_mask_crosses_from_the_host_once_a_call_and_a_mask_of_x_s_library_not_at_all(host_copies):
    """LS2T uses its mask up to five times (the time coordinate, the increments, the features), the signature
    twice and the Seq2Tens classifier twice a block; each use of a numpy mask beside a torch x converted it anew.
    It is now converted once a call, and a torch mask is used where it is (its values read to be checked)."""
    from product_interactions.interactions.architectures.seq2tens import DeepLS2T, ls2t
    from product_interactions.interactions.experiments.seq2tens import Classifier
    from product_interactions.interactions.feature_map import signature
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((2, 7, 3)))
    mask = np.arange(7) < np.array([[7], [4]])
    layer = ls2t(3, width=4, order=2, time=True, difference=True).to_torch()
    deep = DeepLS2T(3, widths=(4, 4), order=2, time=True, difference=True).to_torch()
    classifier = Classifier(3, classes=2, filters=4, widths=(4,), order=2)
    params = {name: torch.tensor(value) for name, value in classifier.init(0).items()}
    calls = [lambda m: layer(x, m), lambda m: deep(x, m), lambda m: signature(x, 3, m),
             lambda m: classifier.apply(params, x, m)]
    for call in calls:
        expected = call(mask)
        with host_copies() as made:
            got = call(mask)
        assert made == [mask.shape] * (2 if call is calls[-1] else 1), calls.index(call)  # classifier: FCN, LS2T
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        with host_copies() as made:
            got = call(torch.tensor(mask))
        assert made == [mask.shape]                                       # torch.tensor(mask) itself
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
