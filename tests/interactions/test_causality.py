"""Causality with non-finite inputs: a NaN or an infinity at step t never reaches an output before t, in every
sequence architecture, every method and on every engine (numpy, torch, JAX; masked entries are left out, never
multiplied by zero)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from product_interactions.algebra import diagonal, position, tensor_product
from product_interactions.interactions import CausalReduce, Flip, Mask, NeighbourhoodReduce, Pointwise, Signal
from product_interactions.interactions.architectures import (attention, convolution, deep_ls2t, dynamical,
                                                             dynamical_block, gating, ls2t, mamba, ssm)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")         # NaN arithmetic, on purpose
LENGTH, WIDTH = 12, 4


def _models():
    yield "attention", attention(d_model=WIDTH, heads=2), {}
    yield "attention rank 2", attention(d_model=WIDTH, heads=2, rank=2), {}
    yield "convolution", convolution(channels_in=WIDTH, channels_out=3, size=3, cyclic=False), {}
    yield "gating", gating(channels=WIDTH), {}
    for method in ("convolution", "sequential", "parallel", "chunked", "expression"):
        yield f"ssm {method}", ssm(channels=WIDTH, d_state=3), {"method": method}
    for method in ("sequential", "parallel", "chunked", "expression"):
        yield f"mamba {method}", mamba(d_model=WIDTH, d_state=3), {"method": method}
        yield f"dynamical {method}", dynamical(d_model=WIDTH), {"method": method}
        yield f"dynamical_block {method}", dynamical_block(d_model=WIDTH, d_conv=3), {"method": method}
    yield "ls2t", ls2t(d_in=WIDTH, width=3, order=3, return_sequences=True), {}
    yield "ls2t convolution static", ls2t(d_in=WIDTH, width=3, order=2, static="convolution", difference=True,
                                           normalise=True, return_sequences=True), {}
    yield "deep_ls2t", deep_ls2t(d_in=WIDTH, widths=(3, 2), order=2, return_sequences=True), {}


MODELS = list(_models())


def _engines():
    yield "numpy", lambda a: a, np.asarray
    if importlib.util.find_spec("torch") is not None:
        import torch
        yield "torch", torch.tensor, lambda t: t.detach().numpy()
    if importlib.util.find_spec("jax") is not None:
        import jax.numpy as jnp
        yield "jax", jnp.asarray, np.asarray


ENGINES = list(_engines())


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("step", [LENGTH - 1, LENGTH // 2])
@pytest.mark.parametrize("engine, to, back", ENGINES, ids=[e[0] for e in ENGINES])
@pytest.mark.parametrize("name, model, options", MODELS, ids=[m[0] for m in MODELS])
def test_a_non_finite_input_never_reaches_earlier_outputs(name, model, options, engine, to, back, step, bad):
    params = {key: to(value) for key, value in model.init(seed=1).items()}
    x = np.random.default_rng(2).standard_normal((2, LENGTH, WIDTH))
    clean = back(model.apply(params, to(x), **options))
    poisoned = x.copy()
    poisoned[0, step, 1] = bad
    out = back(model.apply(params, to(poisoned), **options))
    assert np.all(np.isfinite(out[0, :step])), f"{name} on {engine}: non-finite before step {step}"
    np.testing.assert_allclose(out[0, :step], clean[0, :step], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out[1], clean[1], rtol=1e-10, atol=1e-12)        # the other sequence untouched


def _relation(n=LENGTH):
    return Signal("x", tensor_product(position(n), position(n), diagonal(WIDTH)), units=[1])


@pytest.mark.parametrize("make", [
    lambda X: CausalReduce(X * Flip(X)),                                            # no operand holds (query, key)
    lambda X: CausalReduce(Pointwise("exp", X * Flip(X)) * Flip(X)),               # one does: masked by where
    lambda X: CausalReduce(Pointwise("softmax", X * Flip(X), factor=1, mask=Mask.causal()) * Flip(X)),
    lambda X: CausalReduce(Pointwise("softmax", X * Flip(X), factor=1, mask=np.tril(np.ones((LENGTH,) * 2)))
                           * Flip(X)),
], ids=["bilinear", "exp-weights", "softmax-rule", "softmax-fixed-mask"])
def test_masked_reductions_leave_masked_pairs_out(make):
    expr = make(_relation())
    plan = expr.compile()
    x = np.random.default_rng(3).standard_normal((2, LENGTH, WIDTH))
    clean = plan(x)
    poisoned = x.copy()
    poisoned[0, 7, 2] = np.nan
    out = plan(poisoned)
    np.testing.assert_allclose(out[0, :7], clean[0, :7], rtol=1e-12)
    assert np.isnan(out[0, 7]).any()


def test_a_band_mask_keeps_a_nan_inside_its_band():
    X = _relation()
    plan = NeighbourhoodReduce(X * Flip(X), radius=1).compile()
    x = np.random.default_rng(4).standard_normal((1, LENGTH, WIDTH))
    clean, poisoned = plan(x), x.copy()
    poisoned[0, 5, 0] = np.inf
    out = plan(poisoned)
    touched = sorted({int(t) for t in np.nonzero(~np.isclose(out[0], clean[0], equal_nan=False))[0]})
    assert touched == [4, 5, 6]
