"""kernels.scans.recurrence: both scans against a Python loop, the adjoint, gradients (real and complex), the choice."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.kernels.arrays import ENGINES, NUMPY
from product_interactions.kernels.arrays.rates import CUDA_RATES
from product_interactions.kernels.scans.chunked import chunk_size, chunked
from product_interactions.kernels.scans.recurrence import (choose, in_chunks, linear_scan, parallel, reverse,
                                                           sequential)
from ssm_support import check_gradient


def loop(a, b, initial=None):
    h, states = (0 if initial is None else initial), []
    for t in range(len(b)):
        h = a[t] * h + b[t]
        states.append(h)
    return np.array(states)


def draw(rng, shape, dtype):
    values = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return (0.8 * values).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("initial", [False, True])
def test_scans_equal_the_loop(dtype, initial):
    rng = np.random.default_rng(0)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for length in range(1, 18):
        a, b = draw(rng, (length, 3, 2), dtype), draw(rng, (length, 3, 2), dtype)
        h0 = draw(rng, (3, 2), dtype) if initial else None
        expected = loop(a, b, h0)
        for method in ("sequential", "parallel", "chunked", "auto"):
            states = linear_scan(a, b, h0, method=method)
            assert states.dtype == dtype
            np.testing.assert_allclose(states, expected, rtol=tolerance, atol=tolerance)
        for scan in (sequential, parallel, in_chunks):            # in place, into b
            inplace = b.copy()
            scan(a, inplace, h0, out=inplace)
            np.testing.assert_allclose(inplace, expected, rtol=tolerance, atol=tolerance)


def test_reverse_is_the_adjoint_recurrence():
    rng = np.random.default_rng(1)
    a, b, final = rng.standard_normal((6, 2)), rng.standard_normal((6, 2)), rng.standard_normal(2)
    expected, l = [], final
    for t in reversed(range(6)):
        l = b[t] + (a[t + 1] * l if t + 1 < 6 else l)
        expected.append(l)
    for method in ("sequential", "parallel", "chunked"):
        np.testing.assert_allclose(reverse(a, b, final, method), expected[::-1], rtol=1e-13)


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked"])
def test_gradients_equal_finite_differences(method):
    rng = np.random.default_rng(2)
    weights = rng.standard_normal((9, 4))
    params = {"a": rng.uniform(-1, 1, (9, 4)), "b": rng.standard_normal((9, 4)), "h0": rng.standard_normal(4)}
    check_gradient(lambda p: anp.sum(weights * linear_scan(p["a"], p["b"], p["h0"], method) ** 2), params)

    def complex_loss(p):                                          # a real loss of a complex recurrence
        states = linear_scan(p["ar"] + 1j * p["ai"], p["br"] + 1j * p["bi"], method=method)
        return anp.sum(weights * anp.abs(states) ** 2)
    check_gradient(complex_loss, {name: 0.7 * rng.standard_normal((9, 4)) for name in ("ar", "ai", "br", "bi")})


def test_gradients_by_hand():
    a, b = np.full((3, 1), 0.5), np.ones((3, 1))
    ga, gb = autograd.grad(lambda a, b: anp.sum(linear_scan(a, b)), (0, 1))(a, b)
    np.testing.assert_allclose(gb[:, 0], [1.75, 1.5, 1.0])          # d sum h / d b_t = sum_s>=t prod a
    np.testing.assert_allclose(ga[:, 0], [0.0, 1.5 * 1.0, 1.5])     # adjoint_t * h_{t-1}


def test_auto_takes_the_parallel_scan_only_for_narrow_steps_by_the_engine_s_threshold():
    width = NUMPY.rates.loop_scan_width
    assert choose(1024, 1) == "parallel" and choose(1024, width) == "sequential"
    assert choose(8, 1) == "sequential"
    torch = ENGINES["torch"]
    assert choose(1024, width, torch) == "parallel" and choose(1024, torch.rates.loop_scan_width, torch) == "sequential"
    jax = ENGINES["jax"]
    assert choose(4096, 1, jax) == "sequential"                             # one compiled loop (lax.scan), always
    assert {choose(4096, 65536, jax, jax.shipped_rates(place)) for place in ("gpu/H100", "tpu/v5", "rocm/MI300")} \
        == {"parallel"}                                                     # an accelerator's launches: not measured


def test_auto_takes_chunks_for_long_sequences_where_the_device_s_rates_say_so():
    torch = pytest.importorskip("torch")
    engine = ENGINES["torch"]
    assert engine.rates_for(torch.zeros(1)) is engine.rates                   # the CPU keeps its loops
    assert choose(4096, 16384, engine, engine.rates_for(torch.zeros(1))) == "sequential"
    assert [choose(n, 16384, engine, CUDA_RATES) for n in (8, 63, 64, 4096)] == \
        ["parallel", "parallel", "chunked", "chunked"]


@pytest.mark.parametrize("length, size", [(1, None), (2, 1), (7, 3), (16, 4), (17, 4), (10, 10), (5, 99)])
def test_chunks_of_any_size_equal_the_loop_on_every_engine(length, size):
    rng = np.random.default_rng(length)
    a, b = rng.uniform(-1, 1, (length, 2, 3)), rng.standard_normal((length, 2, 3))
    expected = loop(a, b)
    np.testing.assert_allclose(chunked(NUMPY, a, b, size), expected, rtol=1e-12, atol=1e-12)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(chunked(ENGINES["torch"], torch.tensor(a), torch.tensor(b), size).numpy(), expected,
                               rtol=1e-12, atol=1e-12)
    assert [chunk_size(n) for n in (1, 2, 4, 5, 4096, 4097)] == [1, 2, 2, 3, 64, 65]


def test_chunked_gradients_on_torch_equal_the_loop_s():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b, weights = rng.uniform(0.3, 1, (37, 5)), rng.standard_normal((37, 5)), rng.standard_normal((37, 5))
    gradients = {}
    for method in ("sequential", "chunked"):
        at, bt = (torch.tensor(v, requires_grad=True) for v in (a, b))
        (linear_scan(at, bt, method=method) * torch.tensor(weights)).sum().backward()
        gradients[method] = (at.grad.numpy(), bt.grad.numpy())
    expected = autograd.grad(lambda a, b: anp.sum(weights * linear_scan(a, b, method="sequential")), (0, 1))(a, b)
    for got in gradients.values():
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-10)
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-10)


def test_bad_input():
    a = np.ones((3, 2))
    with pytest.raises(ValueError, match="method: expected one of auto, sequential, parallel"):
        linear_scan(a, a, method="fast")
    with pytest.raises(ValueError, match=r"a: expected the shape of b \(3, 2\)"):
        linear_scan(np.ones((3, 1)), a)
    with pytest.raises(ValueError, match="b: expected shape .* at least one step"):
        linear_scan(np.ones((0, 2)), np.ones((0, 2)))
    with pytest.raises(ValueError, match=r"initial: expected shape \(2,\)"):
        linear_scan(a, a, initial=np.ones(3))


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked", "auto"])
def test_a_sequence_of_scalars_is_scanned_and_a_scalar_refused(method):
    """b of shape (time,): one number a step, down to one step, on every engine (the sequential loop wrote each
    step into a numpy scalar, not a view, and failed); a 0-dimensional b has no time axis."""
    rng = np.random.default_rng(3)
    for length in (1, 2, 9):
        a, b = draw(rng, (length,), np.float64), draw(rng, (length,), np.float64)
        for engine in ENGINES.values():
            states = np.asarray(linear_scan(engine.convert(a, None), engine.convert(b, None), method=method))
            np.testing.assert_allclose(states, loop(a, b), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"b: expected shape \(time, \.\.\.\) with at least one step, got \(\)"):
        linear_scan(np.ones(()), np.ones(()), method=method)
