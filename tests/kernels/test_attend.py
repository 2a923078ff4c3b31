"""Fused attention (`kernels.plans.attend`): the scores-softmax-mix pattern found in plans, factored into queries, keys
and values, run by torch's fused kernel, equal to the three steps it replaces (outputs and gradients), and left to
those steps where the fused kernel would lose causality or rows."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from product_interactions.algebra import diagonal, position, tensor_product
from product_interactions.interactions import (Flip, Linear, Mask, Parameter, Pointwise, Reduce, Scale, Signal,
                                               compiler)
from product_interactions.interactions.architectures import attention
from product_interactions.kernels.plans.attend import Attend, Factoring

torch = pytest.importorskip("torch")
from product_interactions.kernels.arrays import TORCH  # noqa: E402


@pytest.fixture
def fused_calls(monkeypatch):
    calls = []
    original = type(TORCH).attention

    def counted(self, *arguments):
        result = original(self, *arguments)
        calls.append(arguments + (result is not None,))          # q, k, v, keep, causal, scale, whether it ran
        return result
    monkeypatch.setattr(type(TORCH), "attention", counted)
    return calls


def _band_attention(length: int, d_model: int = 4, mask: Mask = Mask.band(1), scale: Fraction = Fraction(1)):
    """One-head attention written as an expression whose softmax keeps `mask` (by default a band of radius 1; every
    key summed), the scores scaled by `scale`."""
    features = diagonal(d_model)
    X = Signal("x", tensor_product(position(length), position(length), features), units=[1])
    Q, K, V = (Linear(Parameter(name, (d_model, d_model)), X, factor=2, into=features) for name in "QKV")
    scores = Reduce(Q * Flip(K), factor=2)
    weights = Pointwise("softmax", scores if scale == 1 else Scale(scores, scale), factor=1, mask=mask)
    return Reduce(weights * Flip(V), factor=1)


MODELS = [("causal", attention(d_model=8, heads=2)), ("full", attention(d_model=8, heads=2, causal=False)),
          ("rank 2, d_head 3", attention(d_model=6, heads=1, rank=2, d_head=3)),
          ("one head", attention(d_model=4, heads=1))]


@pytest.mark.parametrize("name, model", MODELS, ids=[m[0] for m in MODELS])
def test_fused_attention_equals_the_three_steps_with_gradients(name, model, fused_calls):
    params = model.init(seed=2)
    x = np.random.default_rng(3).standard_normal((3, 7, model.d_model))
    expected = model.apply(params, x)
    tensors = {key: torch.tensor(value, requires_grad=True) for key, value in params.items()}
    out = model.apply(tensors, torch.tensor(x))
    assert len(fused_calls) == 1 and fused_calls[0][4] == model.causal and fused_calls[0][-1]  # ran, causal
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-10, atol=1e-12)
    weights = np.random.default_rng(4).standard_normal(expected.shape)
    (out * torch.tensor(weights)).sum().backward()
    from autograd import grad
    expected_gradients = grad(lambda p: np.sum(model.apply(p, x) * weights))(params)
    for key in params:
        np.testing.assert_allclose(tensors[key].grad.numpy(), expected_gradients[key], rtol=1e-9, atol=1e-12)


def test_queries_and_keys_meet_over_the_head_width_not_the_model_width():
    model = attention(d_model=8, heads=2)
    step = next(s for s in model.plan().steps if isinstance(s, Attend))
    shapes1 = ((5, 8), (2, 4, 8), (5, 8), (2, 4, 8), ())
    shapes2 = (None, (5, 8), (2, 4, 8), (8, 2, 4))
    factoring = Factoring(step.scores, step.mix, step.position, shapes1, shapes2)
    assert factoring.valid and factoring.bridge == 1 and factoring.carried == (4,)      # d_head = 4
    assert factoring.q[0] == [0, 1] and factoring.k[0] == [2, 3] and factoring.scalars1 == [4]
    assert factoring.v[0] == [1, 2] and factoring.rest[0] == [3]                    # W_V with values, W_O after


def test_a_band_mask_runs_fused_with_its_boolean_mask(fused_calls):
    plan = compiler.compile(_band_attention(6))
    assert any(isinstance(s, Attend) for s in plan.steps)
    rng = np.random.default_rng(0)
    params = {name: rng.standard_normal((4, 4)) for name in "QKV"}
    x = rng.standard_normal((2, 6, 4))
    expected = plan(x, params)
    out = plan(torch.tensor(x), {k: torch.tensor(v) for k, v in params.items()})
    assert len(fused_calls) == 1 and fused_calls[0][3] is not None and not fused_calls[0][4] and fused_calls[0][-1]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scale, kernel_scale", [(Fraction(1, 3), 1 / 3), (Fraction(-2, 3), 1.0)])
def test_a_positive_scale_of_the_scores_is_the_kernel_s_and_another_multiplies_the_queries(scale, kernel_scale,
                                                                                           fused_calls):
    """The scores' positive constant reaches the fused kernel as its scale (no product with q); a negative one,
    which a kernel may take the square root of, multiplies q as before.  Both equal the three steps."""
    plan = compiler.compile(_band_attention(6, scale=scale))
    rng = np.random.default_rng(5)
    params = {name: rng.standard_normal((4, 4)) for name in "QKV"}
    x = rng.standard_normal((2, 6, 4))
    out = plan(torch.tensor(x), {k: torch.tensor(v) for k, v in params.items()})
    assert len(fused_calls) == 1 and fused_calls[0][-1] and fused_calls[0][5] == pytest.approx(kernel_scale, 1e-15)
    np.testing.assert_allclose(out.numpy(), plan(x, params), rtol=1e-10, atol=1e-12)


def test_a_mask_that_leaves_a_query_no_key_takes_the_three_steps_at_every_call(fused_calls):
    """The fused kernel gives a query without keys no zero row: such a mask runs the three steps, whose softmax
    gives that row 0 (the decision is kept per size: the second call decides the same)."""
    keep = np.tril(np.ones((5, 5), bool))
    keep[2] = False
    plan = compiler.compile(_band_attention(5, mask=Mask.fixed(keep)))
    assert any(isinstance(s, Attend) for s in plan.steps)
    rng = np.random.default_rng(0)
    params = {name: rng.standard_normal((4, 4)) for name in "QKV"}
    x = rng.standard_normal((2, 5, 4))
    expected = plan(x, params)
    tensors = {k: torch.tensor(v) for k, v in params.items()}
    for _ in range(2):
        out = plan(torch.tensor(x), tensors)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-12)
    assert fused_calls == [] and np.all(expected[:, 2] == 0) and np.all(expected[:, [0, 1, 3, 4]] != 0)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_step_takes_the_three_steps_and_stays_causal(bad, fused_calls):
    model = attention(d_model=8, heads=2)
    params = {key: torch.tensor(value) for key, value in model.init(seed=0).items()}
    x = np.random.default_rng(1).standard_normal((2, 9, 8))
    x[0, 5, 1] = bad
    out = model.apply(params, torch.tensor(x)).numpy()
    assert [call[-1] for call in fused_calls] == [False]                     # torch's kernel declined
    assert np.isfinite(out[0, :5]).all() and np.isfinite(out[1]).all() and not np.isfinite(out[0, 5:]).all()
    np.testing.assert_allclose(out[0, :5], model.apply(model.init(seed=0), x)[0, :5], rtol=1e-10)


def test_numpy_runs_the_three_steps_and_explain_shows_them():
    model = attention(d_model=8, heads=2)
    text = model.explain()
    assert "attention (fused by the engine where it can)" in text and "softmax(" in text
    x = np.random.default_rng(0).standard_normal((2, 5, 8))
    assert model.apply(model.init(seed=0), x).shape == (2, 5, 8)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_jax_keeps_a_non_finite_key_causal_under_jit(bad):
    jax = pytest.importorskip("jax")
    model = attention(d_model=8, heads=2)
    params = model.init(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 9, 8))
    x[0, 5, 1] = bad
    out = np.asarray(jax.jit(model.apply)({k: jax.numpy.asarray(v) for k, v in params.items()}, jax.numpy.asarray(x)))
    assert np.isfinite(out[0, :5]).all() and np.isfinite(out[1]).all() and np.isnan(out[0, 5:]).all()
    expected = model.apply(params, x)
    np.testing.assert_allclose(out[0, :5], expected[0, :5], rtol=1e-10)
    np.testing.assert_allclose(out[1], expected[1], rtol=1e-10)
