"""kernels.causal_convolution against the direct sum y_t = sum_(s <= t) k_(t - s) x_s, on every engine: shapes that
broadcast, non-finite inputs kept causal, bad input and the memory guard at its exact edge."""
import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.kernels import MemoryLimitError, causal_convolution
from product_interactions.kernels.arrays import ENGINES


def direct(x, kernel):
    """The causal convolution term by term (a non-finite x_s reaches the outputs from s on only)."""
    x, kernel = np.broadcast_arrays(np.asarray(x, float), np.asarray(kernel, float))
    y = np.zeros(x.shape)
    for t in range(x.shape[-1]):
        for s in range(t + 1):
            y[..., t] = y[..., t] + kernel[..., t - s] * x[..., s]
    return y


@pytest.mark.parametrize("engine", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("x_shape, kernel_shape", [((1,), (1,)), ((7,), (7,)), ((2, 3, 6), (6,)),
                                                   ((3, 1, 5), (1, 4, 5)), ((4,), (2, 4))])
def test_the_convolution_equals_the_direct_sum(x_shape, kernel_shape, engine):
    rng = np.random.default_rng(sum(x_shape) + 10 * len(kernel_shape))
    x, kernel = rng.standard_normal(x_shape), rng.standard_normal(kernel_shape)
    engine = ENGINES[engine]
    y = causal_convolution(engine.convert(x, None), engine.convert(kernel, None))
    np.testing.assert_allclose(np.asarray(y), direct(x, kernel), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ["numpy", "torch"])
def test_a_non_finite_input_reaches_only_the_later_outputs_with_the_direct_sum_s_values(engine):
    """An infinity at step 2 and a NaN at step 4 of one row: the earlier outputs stay finite and exact, the rows
    without them are untouched (the FFT alone would spread them to every output)."""
    rng = np.random.default_rng(1)
    x, kernel = rng.standard_normal((3, 6)), rng.standard_normal(6)
    x[1, 2], x[2, 4] = np.inf, np.nan
    engine = ENGINES[engine]
    with np.errstate(invalid="ignore"):
        expected = direct(x, kernel)
        y = np.asarray(causal_convolution(engine.convert(x, None), engine.convert(kernel, None)))
    assert np.isfinite(y[0]).all() and np.isfinite(y[1, :2]).all() and np.isfinite(y[2, :4]).all()
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)          # inf, -inf and nan where the sum has them


@pytest.mark.parametrize("x, kernel, error, match", [
    (np.ones(()), np.ones(3), ValueError, r"x: expected a last \(time\) axis of positive length, got shape \(\)"),
    (np.ones(3), np.ones(()), ValueError, r"kernel: expected a last \(time\) axis of positive length, got shape \(\)"),
    (np.ones((2, 0)), np.ones(0), ValueError, r"x: expected a last \(time\) axis of positive length"),
    (np.ones(3) + 0j, np.ones(3), TypeError, "x: expected an array of real numbers, got complex128"),
    (np.ones((2, 3, 4)), np.ones((5, 4)), ValueError,
     r"x, kernel: leading axes \(2, 3\) and \(5,\) do not broadcast"),
    (np.ones((5, 4)), np.ones((2, 3, 4)), ValueError,
     r"x, kernel: leading axes \(5,\) and \(2, 3\) do not broadcast"),
])
def test_bad_input_is_refused_by_name(x, kernel, error, match):
    with pytest.raises(error, match=match):
        causal_convolution(x, kernel)


def test_the_spectra_are_refused_exactly_beyond_the_memory_limit(monkeypatch):
    """Four complex spectra (16 bytes a number) of length L + 1 for each of the broadcast batch's rows: at exactly
    that many bytes it runs, one byte less is refused."""
    x, kernel = np.ones((3, 1, 10)), np.ones((1, 5, 10))
    needed = 4 * 15 * 11 * 16
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", needed)
    assert causal_convolution(x, kernel).shape == (3, 5, 10)
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", needed - 1)
    with pytest.raises(MemoryLimitError, match=r"x, kernel: the spectra of a batch of shape \(3, 5\) at length 10"):
        causal_convolution(x, kernel)


def test_under_jax_jit_the_outputs_from_a_non_finite_step_on_are_nan_and_the_earlier_ones_exact():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    x, kernel = rng.standard_normal((2, 6)), rng.standard_normal(6)
    x[0, 3] = np.nan
    y = np.asarray(jax.jit(causal_convolution)(jax.numpy.asarray(x), jax.numpy.asarray(kernel)))
    expected = direct(x, kernel)
    assert np.isnan(y[0, 3:]).all()
    np.testing.assert_allclose(y[0, :3], expected[0, :3], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y[1], expected[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("length", [1, 5, 6])
def test_autograd_gradients_at_odd_and_even_lengths_equal_the_direct_sum_s(length):
    """The transforms' size is kept even (twice the length), which autograd's rfft gradient needs: the gradient
    of sum(sin(y)) in x and in the kernel equals the direct sum's, k_(t - s) and x_(t - s) weighted by cos(y_t)."""
    import autograd
    import autograd.numpy as anp
    rng = np.random.default_rng(length)
    x, kernel = rng.standard_normal((2, length)), rng.standard_normal(length)
    loss = lambda x, kernel: anp.sum(anp.sin(causal_convolution(x, kernel)))  # noqa: E731
    weight = np.cos(direct(x, kernel))                                       # d loss / d y_t
    grad_x = np.array([[sum(weight[b, t] * kernel[t - s] for t in range(s, length)) for s in range(length)]
                       for b in range(2)])
    grad_kernel = np.array([sum(weight[b, t] * x[b, t - j] for b in range(2) for t in range(j, length))
                            for j in range(length)])
    np.testing.assert_allclose(autograd.grad(loss, 0)(x, kernel), grad_x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(autograd.grad(loss, 1)(x, kernel), grad_kernel, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bad", [None, np.nan, np.inf])
def test_on_a_gpu_the_outputs_from_a_non_finite_step_on_are_nan_with_no_read(bad, monkeypatch):
    """Under CUDA's rates (on CPU tensors) a read back to the host costs more than the passes that avoid it
    (`Rates.host_read`), so the convolution reads nothing (it had read which steps hold a non-finite input, each
    call, waiting for the device): the outputs from a non-finite step on are NaN, the others the direct sum's."""
    torch = pytest.importorskip("torch")
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.rates import CUDA_RATES
    monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)
    reads = []
    monkeypatch.setattr(TORCH, "value", lambda a: reads.append(a) or a.detach().numpy())
    rng = np.random.default_rng(3)
    x, kernel = rng.standard_normal((2, 3, 7)), rng.standard_normal(7)
    if bad is not None:
        x[1, 2, 4] = bad
    y = causal_convolution(torch.tensor(x), torch.tensor(kernel)).numpy()
    expected = direct(x, kernel)
    assert reads == []
    if bad is not None:
        assert np.isnan(y[1, 2, 4:]).all()
        expected[1, 2, 4:] = np.nan
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
