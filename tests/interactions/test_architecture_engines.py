"""Every architecture on every engine: torch and JAX give numpy's numbers (1e-10 in float64) and gradients, in
their own library, and JAX's jit(grad) goes through; mixed libraries get a clear error."""
from __future__ import annotations

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.interactions import flatten, seq2tens, signature
from product_interactions.interactions.architectures import (attention, convolution, deep_ls2t, dynamical,
                                                             dynamical_block, gating, ls2t, mamba, se3_attention,
                                                             ssm, tfn)
from product_interactions.kernels import linear_scan, selective_scan

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy

RNG = np.random.default_rng(0)
SEQUENCE = RNG.standard_normal((2, 6, 4))
IMAGE = RNG.standard_normal((2, 5, 5, 2))
POINTS, FEATURES = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 5, 4, 2))


def _cases():
    yield "attention", attention(d_model=4, heads=2), (SEQUENCE,), {}
    yield "attention rank 2, not causal", attention(d_model=4, heads=2, rank=2, causal=False), (SEQUENCE,), {}
    yield "gating", gating(channels=4), (SEQUENCE,), {}
    yield "convolution", convolution(channels_in=4, channels_out=3, size=3, cyclic=False), (SEQUENCE,), {}
    yield "convolution 2-D", convolution(channels_in=2, channels_out=2, size=2, dims=2), (IMAGE,), {}
    for method in ("convolution", "parallel", "expression"):
        yield f"ssm {method}", ssm(channels=4, d_state=3), (SEQUENCE,), {"method": method}
    for method in ("sequential", "parallel", "expression"):
        yield f"mamba {method}", mamba(d_model=4, d_state=2), (SEQUENCE,), {"method": method}
        yield f"dynamical {method}", dynamical(d_model=4), (SEQUENCE,), {"method": method}
        yield f"dynamical_block {method}", dynamical_block(d_model=4, d_conv=3), (SEQUENCE,), {"method": method}
    yield "ls2t", ls2t(d_in=4, width=3, order=3, normalise=True, time=True), (SEQUENCE,), {}
    yield "deep_ls2t", deep_ls2t(d_in=4, widths=(3, 2), order=2, difference_between=True), (SEQUENCE,), {}
    yield "tfn", tfn(lmax=1, channels_in=2, channels_out=2), (POINTS, FEATURES), {}
    yield "se3_attention", se3_attention(lmax=1, channels_in=2, channels=2), (POINTS, FEATURES), {}


CASES = list(_cases())


def _convert(tree, to):
    return {name: to(value) for name, value in tree.items()}


@pytest.mark.parametrize("name, model, inputs, options", CASES, ids=[c[0] for c in CASES])
def test_every_engine_gives_numpys_numbers_and_gradients(name, model, inputs, options):
    params = model.init(seed=1)
    weights = np.random.default_rng(2).standard_normal(model.apply(params, *inputs, **options).shape)

    def loss(p, *x):
        return anp.sum(anp.tanh(model.apply(p, *x, **options)) * weights)
    expected, expected_grad = model.apply(params, *inputs, **options), autograd.grad(loss)(params, *inputs)

    on_torch = _convert(params, lambda v: torch.tensor(v, requires_grad=True))
    out = model.apply(on_torch, *(torch.tensor(x) for x in inputs), **options)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-10, atol=1e-12)
    (torch.tanh(out) * torch.tensor(weights)).sum().backward()
    for key, value in on_torch.items():
        np.testing.assert_allclose(value.grad.numpy(), expected_grad[key], rtol=1e-8, atol=1e-10, err_msg=key)

    def jax_loss(p, *x):
        return jnp.sum(jnp.tanh(model.apply(p, *x, **options)) * weights)
    arrays = tuple(jnp.asarray(x) for x in inputs)
    on_jax = _convert(params, jnp.asarray)
    np.testing.assert_allclose(np.asarray(model.apply(on_jax, *arrays, **options)), expected, rtol=1e-10,
                               atol=1e-12)
    gradient = jax.jit(jax.grad(jax_loss))(on_jax, *arrays)
    for key in params:
        np.testing.assert_allclose(np.asarray(gradient[key]), expected_grad[key], rtol=1e-8, atol=1e-10,
                                   err_msg=key)


def test_float32_stays_float32_on_torch_and_a_numpy_parameter_is_adopted():
    model = attention(d_model=4, heads=2)
    params = model.init(seed=0, dtype=np.float32)
    mixed = {**_convert(params, torch.tensor), "W_O": params["W_O"]}           # one numpy parameter
    out = model.apply(mixed, torch.tensor(SEQUENCE, dtype=torch.float32))
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), model.apply(params, SEQUENCE.astype(np.float32)), rtol=1e-4)


def test_mixed_libraries_are_refused_naming_the_arguments():
    model = attention(d_model=4, heads=2)
    params = _convert(model.init(seed=0), jnp.asarray)
    with pytest.raises(TypeError, match=r"expected arrays of one library .*torch .*jax"):
        model.apply(params, torch.tensor(SEQUENCE))


def test_arrays_on_two_devices_are_refused_naming_them():
    model = gating(channels=4)
    params = {name: torch.tensor(value, device="meta") for name, value in model.init(seed=0).items()}
    with pytest.raises(ValueError, match=r"expected arrays on one device, got cpu \(inputs\['x'\]\) and meta "
                                         r"\(parameters\['W'\]\)"):
        model.apply(params, torch.tensor(SEQUENCE))


def test_hand_kernels_on_every_engine():
    a, b = RNG.uniform(0.2, 0.9, (9, 2, 3)), RNG.standard_normal((9, 2, 3))
    for method in ("sequential", "parallel", "chunked"):
        expected = linear_scan(a, b, method=method)
        np.testing.assert_allclose(linear_scan(torch.tensor(a), torch.tensor(b), method=method).numpy(), expected,
                                   rtol=1e-12)
        np.testing.assert_allclose(np.asarray(linear_scan(jnp.asarray(a), jnp.asarray(b), method=method)),
                                   expected, rtol=1e-12)
    u, delta = RNG.standard_normal((2, 7, 3)), RNG.uniform(0.1, 0.5, (2, 7, 3))
    A, B, C = -RNG.uniform(0.5, 2, (3, 2)), RNG.standard_normal((2, 7, 2)), RNG.standard_normal((2, 7, 2))
    expected = selective_scan(u, delta, A, B, C)
    weights = RNG.standard_normal(u.shape)
    gradients = autograd.grad(lambda A: anp.sum(selective_scan(u, delta, A, B, C) * weights))(A)
    for method in ("auto", "sequential", "parallel", "chunked"):      # torch's loop is its own (`_stepwise`)
        for to in (torch.tensor, jnp.asarray):
            np.testing.assert_allclose(np.asarray(selective_scan(*map(to, (u, delta, A, B, C)), method=method)),
                                       expected, rtol=1e-10)
        At = torch.tensor(A, requires_grad=True)
        (selective_scan(*map(torch.tensor, (u, delta)), At, *map(torch.tensor, (B, C)), method=method)
         * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(At.grad.numpy(), gradients, rtol=1e-10)
    x = RNG.standard_normal((2, 5, 3))
    for to in (torch.tensor, jnp.asarray):
        for method in ("levelwise", "sequential", "parallel"):
            np.testing.assert_allclose(np.asarray(flatten(seq2tens(to(x), 3, method=method))),
                                       flatten(seq2tens(x, 3, method=method)), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.asarray(signature(to(x), 3)), signature(x, 3), rtol=1e-12, atol=1e-13)
