"""Architectures against plain numpy / scipy references, their orders, gradients and bad input."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
import scipy.signal

from product_interactions.interactions.architectures import attention, convolution, gating


def attention_reference(params, x, heads, d_head, causal):
    """softmax(Q K^T / sqrt(d_head) + causal mask) V per head, then W_O."""
    b, n, _ = x.shape
    split = lambda W: (x @ W.T).reshape(b, n, heads, d_head)  # noqa: E731
    q, k, v = split(params["W_Q"]), split(params["W_K"]), split(params["W_V"])
    s = np.einsum("bkhe,blhe->bhkl", q, k) / np.sqrt(d_head)
    if causal:
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    return np.einsum("bhkl,blhe->bkhe", a, v).reshape(b, n, heads * d_head) @ params["W_O"].T


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("heads, rank", [(1, 1), (2, 1), (2, 2)])
def test_attention_equals_numpy(causal, heads, rank):
    model = attention(d_model=8, heads=heads, causal=causal, rank=rank)
    params = model.init(seed=1)
    x = np.random.default_rng(2).standard_normal((3, 7, 8))
    expected = attention_reference(params, x, heads * rank, 8 // heads, causal)
    np.testing.assert_allclose(model.apply(params, x), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal, rank", [(True, 1), (False, 2)])
def test_attention_with_its_own_d_head(causal, rank):
    """d_head away from its default d_model // heads (issue 39): the scores are scaled by 1 / sqrt(d_head) (here 3),
    not 1 / sqrt(d_model / heads) (4); the hand-written reference is independent of the model's expression."""
    model = attention(d_model=8, heads=2, causal=causal, rank=rank, d_head=3)
    params = model.init(seed=11)
    assert params["W_Q"].shape == (2 * rank * 3, 8) and params["W_O"].shape == (8, 2 * rank * 3)
    params = {name: 2.0 * value for name, value in params.items()}   # scores of order 1: the scale shows
    x = np.random.default_rng(12).standard_normal((2, 6, 8))
    expected = attention_reference(params, x, 2 * rank, 3, causal)
    np.testing.assert_allclose(model.apply(params, x), expected, rtol=1e-12, atol=1e-12)


def test_attention_float32_stays_float32():
    model = attention(d_model=8, heads=2)
    params = model.init(seed=1, dtype=np.float32)
    x = np.random.default_rng(2).standard_normal((2, 5, 8)).astype(np.float32)
    out = model.apply(params, x)
    assert out.dtype == np.float32
    expected = attention_reference({k: v.astype(float) for k, v in params.items()}, x.astype(float), 2, 4, True)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_attention_is_causal():
    model = attention(d_model=4, heads=2, causal=True)
    params = model.init(seed=0)
    x = np.random.default_rng(5).standard_normal((1, 6, 4))
    changed = x.copy()
    changed[0, 4:] += 1.0
    before, after = model.apply(params, x), model.apply(params, changed)
    np.testing.assert_allclose(before[0, :4], after[0, :4], rtol=1e-13)
    assert not np.allclose(before[0, 4:], after[0, 4:])


def test_attention_parameters_and_orders():
    model = attention(d_model=64, heads=4, causal=True, rank=2)
    assert model.parameters == {"W_Q": (128, 64), "W_K": (128, 64), "W_V": (128, 64), "W_O": (64, 128)}
    assert attention(d_model=4, heads=1).order() == 3
    assert gating(channels=3).order() == 2
    assert convolution(channels_in=2, channels_out=2, size=2).order() == 1


def test_gating_equals_its_formula():
    for function, f in [("sigmoid", lambda a: 1 / (1 + np.exp(-a))), ("silu", lambda a: a / (1 + np.exp(-a))),
                        ("tanh", np.tanh), ("relu", lambda a: np.maximum(a, 0))]:
        model = gating(channels=5, function=function)
        params = model.init(seed=3)
        x = np.random.default_rng(4).standard_normal((2, 6, 5))
        np.testing.assert_allclose(model.apply(params, x), f(x @ params["W"].T) * x, rtol=1e-12, atol=1e-14)


def convolution_reference(K, x, cyclic):
    """scipy.signal: the causal 'full' convolution cut to the input size (circular for cyclic)."""
    spatial = x.shape[1:-1]
    out = np.zeros(x.shape[:-1] + (K.shape[-2],))
    for b in range(x.shape[0]):
        for o in range(K.shape[-2]):
            for i in range(K.shape[-1]):
                signal = x[b, ..., i]
                if cyclic:
                    signal = np.tile(signal, (2,) * signal.ndim)
                full = scipy.signal.convolve(signal, K[..., o, i], mode="full")
                start = spatial if cyclic else (0,) * len(spatial)
                out[b, ..., o] += full[tuple(slice(s, s + n) for s, n in zip(start, spatial))]
    return out


@pytest.mark.parametrize("dims, shape", [(1, (9,)), (2, (5, 6))])
@pytest.mark.parametrize("cyclic", [True, False])
def test_convolution_equals_scipy(dims, shape, cyclic):
    model = convolution(channels_in=2, channels_out=3, size=3, dims=dims, cyclic=cyclic)
    params = model.init(seed=6)
    x = np.random.default_rng(7).standard_normal((2,) + shape + (2,))
    expected = convolution_reference(params["K"], x, cyclic)
    np.testing.assert_allclose(model.apply(params, x), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model, shape", [
    (attention(d_model=4, heads=2, causal=True, rank=2), (2, 5, 4)),
    (gating(channels=3), (2, 4, 3)),
    (convolution(channels_in=2, channels_out=2, size=2, dims=2, cyclic=False), (2, 4, 3, 2)),
], ids=["attention", "gating", "convolution"])
def test_gradients_equal_finite_differences(model, shape):
    params = model.init(seed=8)
    x = np.random.default_rng(9).standard_normal(shape)
    loss = lambda p, x: anp.sum(anp.sin(model.apply(p, x)))  # noqa: E731
    gradient = autograd.grad(loss)(params, x)
    rng = np.random.default_rng(10)
    direction = {name: rng.standard_normal(value.shape) for name, value in params.items()}
    eps = 1e-6
    shifted = lambda s: {n: v + s * eps * direction[n] for n, v in params.items()}  # noqa: E731
    numeric = (loss(shifted(1), x) - loss(shifted(-1), x)) / (2 * eps)
    analytic = sum(np.sum(gradient[n] * direction[n]) for n in params)
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-9)
    dx = rng.standard_normal(shape)
    numeric_x = (loss(params, x + eps * dx) - loss(params, x - eps * dx)) / (2 * eps)
    assert np.sum(autograd.grad(loss, 1)(params, x) * dx) == pytest.approx(numeric_x, rel=1e-6, abs=1e-9)


def test_bad_model_input():
    model = attention(d_model=4, heads=2)
    params = model.init(seed=0)
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., length, 4\), got \(2, 5, 3\)"):
        model.apply(params, np.ones((2, 5, 3)))
    with pytest.raises(ValueError, match=r"params: missing \['W_O'\]"):
        model.apply({k: v for k, v in params.items() if k != "W_O"}, np.ones((2, 5, 4)))
    with pytest.raises(ValueError, match=r"params\['W_Q'\]: expected shape \(4, 4\), got \(4, 3\)"):
        model.apply(dict(params, W_Q=np.ones((4, 3))), np.ones((2, 5, 4)))
    with pytest.raises(ValueError, match="heads: d_model = 5 is not divisible by heads = 2"):
        attention(d_model=5, heads=2)
    with pytest.raises(ValueError, match="size: expected a positive int"):
        convolution(size=0)
    with pytest.raises(ValueError, match="x: spatial size"):
        convolution(size=4).apply({"K": np.ones((4, 1, 1))}, np.ones((1, 3, 1)))
    with pytest.raises(ValueError, match="function: expected an elementwise nonlinearity"):
        gating(channels=2, function="softmax")


@pytest.mark.parametrize("model, inner", [
    (attention(d_model=4, heads=2), (5, 4)), (gating(channels=3), (6, 3)),
    (convolution(channels_in=2, channels_out=3, size=2), (5, 2)),
    (convolution(channels_in=2, channels_out=3, size=2, dims=2), (4, 5, 2)),
], ids=["attention", "gating", "convolution", "convolution 2d"])
def test_any_number_of_batch_axes_or_none_and_too_few_axes_refused(model, inner):
    """Leading axes are batch axes, none included: each (i, j) entry of a (2, 3)-batch is the unbatched call on it
    (length and channels differ, so reading the wrong axis shows); fewer axes than one input is refused by name."""
    params = model.init(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 3) + inner)
    batched = model.apply(params, x)
    assert batched.shape[:2] == (2, 3)
    for index in np.ndindex(2, 3):
        np.testing.assert_allclose(batched[index], model.apply(params, x[index]), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=rf"x: expected shape \(\.\.\., .*{inner[-1]}\), got \({inner[-1]},\)"):
        model.apply(params, x[(0,) * (x.ndim - 1)])


def test_weights_are_drawn_with_standard_deviation_one_over_the_square_root_of_their_fan_in():
    """LeCun's normal initialisation: each weight's spread is 1/sqrt(the number of inputs one output sums), for a
    convolution c_in size^dims, for Mamba's B and C projections d_inner, for its depthwise taps d_conv (sample
    standard deviations of 256 draws and more, within 10 %)."""
    from product_interactions.interactions.architectures import mamba
    K = convolution(channels_in=4, channels_out=8, size=3, dims=2).init(seed=0)["K"]
    assert np.std(K) == pytest.approx(1 / np.sqrt(4 * 3**2), rel=0.1)
    params = mamba(d_model=32, d_state=16, d_conv=4).init(seed=1)                     # d_inner = 64
    for name in ("W_B", "W_C"):
        assert params[name].size >= 1000 and np.std(params[name]) == pytest.approx(1 / np.sqrt(64), rel=0.1)
    taps = np.concatenate([params[f"conv_{k}"] for k in range(4)])                   # 256 draws
    assert np.std(taps) == pytest.approx(1 / np.sqrt(4), rel=0.1)


@pytest.mark.parametrize("make", [lambda: attention(d_model=4, heads=2), lambda: gating(channels=4),
                                  lambda: convolution(channels_in=4, channels_out=2, size=3)],
                         ids=["attention", "gating", "convolution"])
def test_a_used_model_pickles_and_computes_as_before(make):
    """A model that has compiled plans pickles without them (they hold compiled kernels, which do not pickle: it had
    failed) and builds them again, to the same values."""
    import pickle
    model = make()
    x = np.random.default_rng(0).standard_normal((2, 6, 4))
    params = model.init(seed=1)
    expected = model.apply(params, x)
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.apply(params, x), expected)
