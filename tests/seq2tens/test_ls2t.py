"""LS2T layers against <l, Phi(x)> from the full tensors, masks, static maps, initialisation and gradients."""
import dataclasses
from functools import reduce

import autograd
import numpy as np
import pytest

from product_interactions.kernels.arrays import NUMPY

from product_interactions.interactions.architectures import convolution
from product_interactions.interactions.architectures.seq2tens import deep_ls2t, ls2t
from product_interactions.interactions.feature_map import seq2tens


def functional(V, weights, m, n, reverse):
    """The level-m tensor of functional n: v^1 (x) ... (x) v^m (reversed for the reverse direction)."""
    M = V.shape[1] if weights == "recursive" else int((np.sqrt(8 * V.shape[1] + 1) - 1) / 2)
    slots = [k - 1 if weights == "recursive" else sum(M - j + 1 for j in range(1, k)) + m - k
             for k in range(1, m + 1)]
    vectors = [V[:, slot, n] for slot in slots]
    return reduce(np.multiply.outer, vectors[::-1] if reverse else vectors)


def reference(V, weights, order, features, reverse, return_sequences):
    """<l_m, Phi(window)> over the windows [0, t] (forward) or [t, L-1] (reverse), one sequence (L, h)."""
    length, width = len(features), V.shape[2]
    windows = [slice(t, length) if reverse else slice(0, t + 1) for t in range(length)]
    if not return_sequences:
        windows = [slice(0, length)]
    out = np.zeros((len(windows), order, width))
    for w, window in enumerate(windows):
        levels = seq2tens(features[None, window], order)
        for m in range(1, order + 1):
            for n in range(width):
                out[w, m - 1, n] = np.sum(functional(V, weights, m, n, reverse) * levels[m][0])
    out = out.reshape(len(windows), -1)
    return out if return_sequences else out[0]


@pytest.mark.parametrize("weights", ["recursive", "independent"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("return_sequences", [False, True])
@pytest.mark.parametrize("one_step_blocks", [False, True])
def test_ls2t_equals_functionals_of_the_full_tensors_with_masked_variable_lengths(weights, reverse,
                                                                                return_sequences, one_step_blocks,
                                                                                monkeypatch):
    if one_step_blocks:                                         # the recursion carried across blocks of time
        one_step = dataclasses.replace(NUMPY.rates, block_numbers=1)
        monkeypatch.setattr(NUMPY, "rates_for", lambda a: one_step)
    layer = ls2t(d_in=2, width=3, order=3, weights=weights, static=None, reverse=reverse,
                 return_sequences=return_sequences)
    params = layer.init(seed=1)
    lengths = [5, 3, 1]
    x = np.random.default_rng(2).standard_normal((3, 5, 2))
    mask = np.arange(5)[None, :] < np.array(lengths)[:, None]
    out = layer.apply(params, np.where(mask[:, :, None], x, np.nan), mask=mask)
    for b, n in enumerate(lengths):
        expected = reference(params["V"], weights, 3, x[b, :n], reverse, return_sequences)
        np.testing.assert_allclose(out[b, :n] if return_sequences else out[b], expected, rtol=1e-11, atol=1e-12)


def test_bidirectional_concatenates_forward_and_reverse():
    options = dict(d_in=2, width=2, order=2, static="dense", return_sequences=True)
    both = ls2t(bidirectional=True, **options)
    params = both.init(seed=3)
    x = np.random.default_rng(4).standard_normal((2, 4, 2))
    one_way = {name: value for name, value in params.items() if name != "V_reverse"}
    forward = ls2t(**options).apply(one_way, x)
    backward = ls2t(reverse=True, **options).apply({**one_way, "V": params["V_reverse"]}, x)
    np.testing.assert_allclose(both.apply(params, x), np.concatenate([forward, backward], axis=-1), rtol=1e-13)


def test_static_maps_mlp_and_convolution():
    x = np.random.default_rng(5).standard_normal((2, 6, 3))
    mlp = ls2t(d_in=3, width=2, order=2, static="dense", hidden=(5,), activation="relu", features=4)
    params = mlp.init(seed=6)
    params["b0"] = params["b0"] + 0.5                          # so that the relu cuts some but not all
    features = np.maximum(x @ params["W0"].T + params["b0"], 0) @ params["W1"].T + params["b1"]
    expected = [reference(params["V"], "recursive", 2, features[b], False, False) for b in range(2)]
    np.testing.assert_allclose(mlp.apply(params, x), expected, rtol=1e-12)

    conv = ls2t(d_in=3, width=2, order=2, static="convolution", kernel_size=3, features=4, time=True)
    params = conv.init(seed=7)
    timed = np.concatenate([x, np.broadcast_to(np.linspace(0, 1, 6)[None, :, None], (2, 6, 1))], axis=2)
    features = convolution(channels_in=4, channels_out=4, size=3, cyclic=False).apply({"K": params["K"]}, timed)
    expected = [reference(params["V"], "recursive", 2, features[b] + params["b"], False, False) for b in range(2)]
    np.testing.assert_allclose(conv.apply(params, x), expected, rtol=1e-12)


@pytest.mark.parametrize("static", ["dense", "convolution"])
def test_padding_changes_no_result_in_deep_ls2t(static):
    model = deep_ls2t(d_in=2, widths=(3, 2), order=3, static=static, difference=True, time=True, normalise=True,
                      difference_between=True, bidirectional=True, return_sequences=True, weights="independent")
    params = model.init(seed=8)
    lengths = [6, 4, 2]
    x = np.random.default_rng(9).standard_normal((3, 6, 2))
    mask = np.arange(6)[None, :] < np.array(lengths)[:, None]
    out = model.apply(params, np.where(mask[:, :, None], x, np.nan), mask=mask)
    assert np.all(np.isfinite(out))
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(out[b, :n], model.apply(params, x[b:b + 1, :n])[0], rtol=1e-10, atol=1e-12)


def test_deep_ls2t_stacks_layers():
    model = deep_ls2t(d_in=2, widths=(3, 2), order=2, difference_between=True)
    params = model.init(seed=10)
    x = np.random.default_rng(11).standard_normal((2, 5, 2))
    first = ls2t(d_in=2, width=3, order=2, return_sequences=True)
    second = ls2t(d_in=6, width=2, order=2, difference=True)
    layer = lambda i: {k.split("/")[1]: v for k, v in params.items() if k.startswith(f"layer{i}/")}  # noqa: E731
    np.testing.assert_allclose(model.apply(params, x), second.apply(layer(1), first.apply(layer(0), x)), rtol=1e-13)


@pytest.mark.parametrize("weights", ["recursive", "independent"])
def test_initialisation_keeps_every_level_at_unit_variance(weights):
    """Seeded sample: unit-variance white-noise features of the typical length; 512 functionals, 256 sequences.
    The spread of this estimate over seeds is about 0.03, so 0.15 is five standard deviations."""
    layer = ls2t(d_in=16, width=512, order=3, weights=weights, static=None, typical_length=8)
    x = np.random.default_rng(12).standard_normal((256, 8, 16))
    out = layer.apply(layer.init(seed=13), x).reshape(256, 3, 512)
    variances = np.mean(out ** 2, axis=(0, 2))
    np.testing.assert_allclose(variances, 1.0, atol=0.15)
    naive = np.mean(ls2t(d_in=16, width=512, order=3, static=None).apply(
        {"V": np.random.default_rng(13).standard_normal((16, 3, 512)) / 4}, x).reshape(256, 3, 512) ** 2, axis=(0, 2))
    assert naive[2] / naive[0] > 5                              # without the scaling, level 3 is C(8, 3) / 8 = 7x


@pytest.mark.parametrize("weights", ["recursive", "independent"])
def test_gradients_equal_finite_differences(weights):
    layer = ls2t(d_in=2, width=2, order=3, weights=weights, static="dense", hidden=(3,), difference=True,
                 normalise=True, bidirectional=True, return_sequences=True)
    params = layer.init(seed=14)
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 5, 2))
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    probe = rng.standard_normal(layer.apply(params, x, mask).shape)

    def loss(params, x):
        return np.sum(layer.apply(params, x, mask) * probe)

    grad_params, grad_x = autograd.grad(loss, (0, 1))(params, x)
    for _ in range(3):
        direction = {k: rng.standard_normal(v.shape) for k, v in params.items()}
        dx = rng.standard_normal(x.shape)
        h = 1e-6
        plus = loss({k: v + h * direction[k] for k, v in params.items()}, x + h * dx)
        minus = loss({k: v - h * direction[k] for k, v in params.items()}, x - h * dx)
        analytic = sum(np.sum(grad_params[k] * direction[k]) for k in params) + np.sum(grad_x * dx)
        np.testing.assert_allclose((plus - minus) / (2 * h), analytic, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(grad_x[1, 3:], 0)             # padding gets no gradient


def test_ls2t_on_a_device_whose_blocks_are_whole_sequences_gives_the_same_numbers(monkeypatch):
    """A GPU's rates run LS2T's recursion over the whole sequence in one block (CUDA_RATES.block_numbers), the CPU
    in cache-sized blocks carrying the sums: the same numbers and gradients either way."""
    from product_interactions.kernels.arrays.rates import CUDA_RATES
    layer = ls2t(d_in=3, width=4, order=3, static=None, return_sequences=True)
    params = layer.init(seed=3)
    x = np.random.default_rng(4).standard_normal((5, 40, 3))
    loss = lambda p: np.sum(layer.apply(p, x) ** 2)                      # noqa: E731
    monkeypatch.setattr(NUMPY, "rates_for", lambda a: dataclasses.replace(NUMPY.rates, block_numbers=5 * 4 * 3))
    blocked, blocked_gradient = layer.apply(params, x), autograd.grad(loss)(params)["V"]
    monkeypatch.setattr(NUMPY, "rates_for", lambda a: CUDA_RATES)
    whole, whole_gradient = layer.apply(params, x), autograd.grad(loss)(params)["V"]
    np.testing.assert_allclose(whole, blocked, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(whole_gradient, blocked_gradient, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("return_sequences", [False, True])
def test_normalise_standardises_each_level_over_its_width(return_sequences):
    """normalise=True: each level's `width` functionals centred and divided by their standard deviation (plus
    1e-5 under the root), against the plain layer's output normalised by hand (3 levels of width 4: the axes
    differ)."""
    options = dict(d_in=2, width=4, order=3, static=None, return_sequences=return_sequences)
    params = ls2t(**options).init(seed=21)
    x = np.random.default_rng(22).standard_normal((2, 5, 2))
    plain = ls2t(**options).apply(params, x)
    levels = plain.reshape(plain.shape[:-1] + (3, 4))
    centred = levels - levels.mean(axis=-1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ls2t(normalise=True, **options).apply(params, x), expected.reshape(plain.shape),
                               rtol=1e-10, atol=1e-12)


def test_the_convolution_map_is_drawn_by_its_fan_in():
    """The static convolution's K (kernel_size, features, d_in) has fan-in kernel_size * d_in: its draws spread
    1/sqrt(that) (LeCun), the other weights 1/sqrt(their inputs)."""
    params = ls2t(d_in=8, width=4, order=2, static="convolution", kernel_size=4, features=64).init(seed=23)
    assert params["K"].shape == (4, 64, 8)
    assert np.std(params["K"]) == pytest.approx(1 / np.sqrt(4 * 8), rel=0.1)


TRACED_MASK_MODELS = [ls2t(d_in=3, width=2, order=2, time=True, difference=True),
                      ls2t(d_in=3, width=2, order=3, return_sequences=True, bidirectional=True),
                      deep_ls2t(d_in=3, widths=(2, 2), order=2)]


@pytest.mark.parametrize("model", TRACED_MASK_MODELS, ids=["time+difference", "sequences", "deep"])
def test_a_mask_traced_by_jax_gives_the_concrete_masks_result(model):
    """A mask passed into ``jax.jit`` or ``jax.vmap`` (padded batches whose lengths change every step) failed
    ("__array__() was called on traced array"): its values were read to check them.  A traced mask's shape and
    kind are checked, its values used as they are, and the results equal the concrete mask's."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(4)
    params = {name: jnp.asarray(value) for name, value in model.init(seed=0).items()}
    x = jnp.asarray(rng.standard_normal((3, 6, 3)))
    masks = jnp.asarray(np.arange(6)[None, :] < np.array([6, 4, 1])[:, None])
    expected = model.apply(params, x, np.asarray(masks))
    np.testing.assert_allclose(jax.jit(model.apply)(params, x, masks), expected, rtol=1e-12, atol=1e-12)
    one_each = jax.vmap(lambda xi, mi: model.apply(params, xi[None], mi[None])[0])(x, masks)
    np.testing.assert_allclose(one_each, expected, rtol=1e-12, atol=1e-12)
    loss = lambda p, m: (model.apply(p, x, m) ** 2).sum()          # noqa: E731
    traced, concrete = jax.jit(jax.grad(loss))(params, masks), jax.grad(loss)(params, np.asarray(masks))
    for name in params:
        np.testing.assert_allclose(traced[name], concrete[name], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"mask: expected shape \(batch, length\) = \(3, 6\), got \(3, 5\)"):
        jax.jit(model.apply)(params, x, masks[:, :5])


def test_the_signature_takes_a_mask_traced_by_jax():
    jax = pytest.importorskip("jax")
    from product_interactions.interactions.feature_map import signature
    rng = np.random.default_rng(5)
    x = jax.numpy.asarray(rng.standard_normal((2, 5, 2)))
    mask = np.arange(5)[None, :] < np.array([5, 3])[:, None]
    np.testing.assert_allclose(jax.jit(lambda a, m: signature(a, 3, m))(x, jax.numpy.asarray(mask)),
                               signature(x, 3, mask), rtol=1e-12, atol=1e-12)


def test_under_torch_func_a_mask_from_outside_is_checked_and_a_batched_one_used():
    """Inside ``torch.func.vmap`` a mask from outside the transform can be read, so it is checked as in eager
    calls (a gapped mask is refused); a mask the transform batches cannot be, and is used as it is."""
    torch = pytest.importorskip("torch")
    model = TRACED_MASK_MODELS[0]
    params = {name: torch.tensor(value) for name, value in model.init(seed=0).items()}
    x = torch.tensor(np.random.default_rng(6).standard_normal((3, 1, 6, 3)))
    masks = torch.tensor(np.arange(6)[None, :] < np.array([6, 4, 1])[:, None])
    gapped = torch.tensor([[True, False, True, True, True, True]])
    with pytest.raises(ValueError, match="mask: expected each row to be ones then zeros"):
        torch.func.vmap(lambda xi: model.apply(params, xi, gapped))(x)
    batched = torch.func.vmap(lambda xi, mi: model.apply(params, xi, mi[None]))(x, masks)
    expected = model.apply(params, x[:, 0], masks)
    torch.testing.assert_close(batched[:, 0], expected, rtol=1e-12, atol=1e-12)


def test_a_numpy_mask_is_converted_at_each_call_not_kept_among_the_constants(monkeypatch):
    """A mask is a call's data: kept by the engine's store of constants (by identity, one new entry a call), it had
    pushed the kernels' own constants out of the store after a few dozen masked calls."""
    torch = pytest.importorskip("torch")
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.bounded_cache import BoundedCache
    from product_interactions.kernels.arrays.engine import CONSTANTS_KEPT
    monkeypatch.setattr(TORCH, "_constants", BoundedCache(CONSTANTS_KEPT))        # not full from earlier tests
    model = TRACED_MASK_MODELS[0]
    params = {name: torch.tensor(value) for name, value in model.init(seed=0).items()}
    x = torch.tensor(np.random.default_rng(7).standard_normal((2, 6, 3)))
    mask = np.arange(6)[None, :] < np.array([6, 4])[:, None]
    expected = model.apply(params, x, mask)
    before = len(TORCH._constants)
    for _ in range(10):
        torch.testing.assert_close(model.apply(params, x, mask.copy()), expected, rtol=0, atol=0)
    assert len(TORCH._constants) == before
