"""Reads of a tensor's numbers back to the host (``bool(t)``, ``float(t)``, ``t.item()``, ``t.numpy()``, ...): on a
GPU each one waits for every kernel queued before it, so the host can no longer run ahead of the device.  Counted
here on CPU tensors, forward and backward, for the library's paths a training step takes; each count is the
number the code needs (named in the test), so a new read on these paths fails here, without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan
from product_interactions.interactions.architectures import attention, ls2t, mamba, ssm
from product_interactions.interactions.experiments.training import Adam
from product_interactions.kernels.arrays.rates import CUDA_RATES

torch = pytest.importorskip("torch")
from product_interactions.kernels.arrays import TORCH  # noqa: E402

#: The tensor methods that hand a tensor's numbers to Python.
READS = ("__bool__", "__float__", "__int__", "__index__", "__array__", "item", "tolist", "numpy")


@pytest.fixture
def reads(monkeypatch):
    """The reads made while the test runs, as (method, how many numbers); a test's setup calls ``reads.clear()``."""
    seen: list[tuple[str, int]] = []
    for name in READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *arguments, _name=name, _original=original, **options):
            seen.append((_name, self.numel()))
            return _original(self, *arguments, **options)
        monkeypatch.setattr(torch.Tensor, name, counted)
    return seen


@pytest.fixture(params=["cpu", "cuda"])
def rates(request, monkeypatch):
    """The CPU's rates, or CUDA's on these CPU tensors (auto then takes the GPU's forms: the chunked scans, LS2T
    in whole sequences, the compiled loop where Triton is)."""
    if request.param == "cuda":
        monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)
    return request.param


def _params(model):
    return {key: torch.tensor(value, requires_grad=True) for key, value in model.init(seed=0).items()}


def test_attention_reads_once_a_call_on_the_cpu_and_never_on_a_gpu(reads, rates):
    """The fused kernel would not keep a non-finite key from the queries that do not see it: on the CPU one read
    checks the keys and values first; on a GPU, where a read waits for the device, passes over them that read
    nothing keep such keys out (`TorchEngine.attention`).  None in the backward."""
    model = attention(d_model=8, heads=2)
    params, x = _params(model), torch.randn(2, 6, 8, dtype=torch.float64)
    model.apply(params, x)
    reads.clear()
    out = model.apply(params, x)
    expected = [("__float__", 1)] if rates == "cpu" else []
    assert reads == expected
    out.sum().backward()
    assert reads == expected


def test_s4d_reads_its_non_finite_steps_on_the_cpu_and_nothing_on_a_gpu(reads, rates):
    """S4D's causal convolution reads, on the CPU, the count of non-finite inputs per step (their terms are then
    added exactly); on a GPU, where that read waits for the device, it reads nothing (`causal_convolution`)."""
    model = ssm(channels=4, d_state=2)
    params, x = _params(model), torch.randn(2, 12, 4, dtype=torch.float64)
    model.apply(params, x).sum().backward()
    reads.clear()
    model.apply(params, x).sum().backward()
    assert reads == ([("numpy", 12)] if rates == "cpu" else [])


@pytest.mark.parametrize("model, width", [(mamba(d_model=8, d_state=4), 8),
                                          (ls2t(d_in=3, width=4, order=3, static=None), 3)], ids=["mamba", "ls2t"])
def test_the_sequence_models_read_nothing_forward_or_backward(model, width, reads, rates):
    params = _params(model)
    x = torch.randn(2, 80, width, dtype=torch.float64)
    model.apply(params, x).sum().backward()                             # builds and keeps the plan
    reads.clear()
    model.apply(params, x).sum().backward()
    assert reads == []


@pytest.mark.parametrize("strategy, expected", [("compiled", []), ("scatter", []), ("dense", [("__bool__", 1)])])
def test_a_product_reads_only_where_its_strategy_multiplies_structural_zeros_on_the_cpu(strategy, expected, reads,
                                                                                        rates):
    """dense multiplies the table's zeros too, so a non-finite result must be checked (`Kernel._run`): one read on
    the CPU; on a GPU the outputs a non-finite entry reaches are marked instead, with no read.  The term-by-term
    strategies read nothing."""
    kernel = kernels.product(clebsch_gordan(2), strategy=strategy)
    x, y = (torch.randn(64, 9, dtype=torch.float64, requires_grad=True) for _ in range(2))
    kernel(x, y)
    reads.clear()
    kernel(x, y).sum().backward()
    assert reads == (expected if rates == "cpu" else [])


def test_a_training_step_reads_its_loss_and_gradient_norm_together(reads):
    model = attention(d_model=4, heads=1)
    x = np.random.default_rng(0).standard_normal((2, 5, 4))
    optimiser = Adam(lambda p, batch: (model.apply(p, batch) ** 2).sum(), model.init(seed=0), engine="torch")
    optimiser.step(x)
    reads.clear()
    loss = optimiser.step(x)
    assert isinstance(loss, float)
    assert reads == [("__float__", 1), ("numpy", 2)]   # the attention's check; the loss and the norm, together


def test_the_selective_scan_reads_its_step_and_growth_bounds_in_one_transfer(reads, rates):
    g = torch.Generator().manual_seed(0)
    u, B, C = (torch.randn(2, 70, n, generator=g, dtype=torch.float64, requires_grad=True) for n in (3, 4, 4))
    delta = (torch.rand(2, 70, 3, generator=g, dtype=torch.float64) + 0.1).requires_grad_()
    A = -torch.rand(3, 4, generator=g, dtype=torch.float64) - 0.5
    y = kernels.selective_scan(u, delta, A, B, C)
    assert reads == [("numpy", 2)]                     # delta's smallest step and A's largest entry, together
    y.sum().backward()
    assert reads == [("numpy", 2)]


def test_a_causal_convolution_reads_one_count_per_step_not_its_inputs(reads):
    x, kernel = torch.randn(3, 4, 50, dtype=torch.float64), torch.randn(4, 50, dtype=torch.float64)
    x[1, 2, 7] = float("nan")
    y = kernels.causal_convolution(x, kernel)
    assert reads == [("numpy", 50)]                    # how many inputs are not finite at each of the 50 steps
    assert torch.isfinite(y[..., :7]).all() and torch.isnan(y[1, 2, 7:]).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_a_dense_product_reads_nothing_and_marks_non_finite_outputs(reads):
    """On the device under its shipped (or calibrated) rates: the dense strategy's result is not read back, forward
    or backward, and the outputs a non-finite entry reaches are NaN, the others the CPU's."""
    kernel = kernels.product(clebsch_gordan(2), strategy="dense")
    x, y = (torch.randn(64, 9, dtype=torch.float64) for _ in range(2))
    x[3, 0] = float("inf")
    expected = kernel(x, y)
    on_cuda = [a.cuda().requires_grad_() for a in (x, y)]
    kernel(*on_cuda)
    reads.clear()
    z = kernel(*on_cuda)
    z.nansum().backward()
    assert reads == []
    got = z.detach().cpu()
    assert torch.equal(torch.isfinite(got), torch.isfinite(expected)) and torch.isnan(got[~torch.isfinite(got)]).all()
    torch.testing.assert_close(got[torch.isfinite(got)], expected[torch.isfinite(expected)], rtol=1e-12, atol=1e-12)
