"""Fused attention (`kernels.plans.attend`): the scores-softmax-mix pattern found in plans, factored into queries, keys
and values, run by torch's fused kernel, equal to the three steps it replaces (outputs and gradients), and left to
those steps where the fused kernel would lose causality or rows."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from product_interactions.algebra import diagonal, position, tensor_product
from product_interactions.interactions import (CausalReduce, Flip, Linear, Mask, Parameter, Pointwise, Reduce,
                                               Scale, Signal, compiler)
from product_interactions.interactions.architectures import attention
from product_interactions.kernels.plans.attend import Attend, Factoring

torch = pytest.importorskip("torch")
from product_interactions.kernels.arrays import TORCH  # noqa: E402
from product_interactions.kernels.arrays.rates import CUDA_RATES  # noqa: E402


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


@pytest.fixture
def on_a_gpu(monkeypatch):
    """CUDA's rates on these CPU tensors: a read back to the host costs more than the passes that avoid it, so
    `TorchEngine.attention` keeps non-finite keys out without one."""
    from product_interactions.kernels.arrays.rates import CUDA_RATES
    monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)


def _reference(q, k, v, keep, scale):
    """Softmax attention over the kept pairs, by hand, in float64: the non-finite keys and values zeroed, and each
    query that keeps one NaN."""
    bad = ~(np.isfinite(k).all(-1) & np.isfinite(v).all(-1))
    k, v = (np.where(bad[..., None], 0.0, a) for a in (k, v))
    scores = np.where(keep, scale * q @ np.swapaxes(k, -1, -2), -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    out = weights / weights.sum(-1, keepdims=True) @ v
    return np.where(((keep & bad[..., None, :]).any(-1))[..., None], np.nan, out)


@pytest.mark.parametrize("mask", ["none", "causal", "band"])
@pytest.mark.parametrize("bad", [None, np.nan, np.inf, -np.inf])
def test_on_a_gpu_attention_keeps_non_finite_keys_out_without_reading_a_number(mask, bad, on_a_gpu):
    """Each query that sees a non-finite key or value is NaN, the others are the exact attention over what they see
    (finite inputs: torch's kernel as on the CPU, gradients included), with no read back to the host: the CPU's
    check reads one number, which on a GPU waits for the device's queue."""
    g = np.random.default_rng(5)
    q, k, v = (g.standard_normal((2, 3, 7, 4)) for _ in range(3))
    if bad is not None:
        k[0, 1, 3, 2] = bad
        v[1, 0, 5, 1] = bad
    length = np.arange(7)
    keep = {"none": np.ones((7, 7), bool), "causal": length[None] <= length[:, None],
            "band": abs(length[None] - length[:, None]) <= 1}[mask]
    tensors = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    arguments = (None, mask == "causal") if mask != "band" else (torch.tensor(keep), False)
    reads = []
    original = torch.Tensor.__float__
    torch.Tensor.__float__ = lambda self: reads.append(self) or original(self)
    try:
        got = TORCH.attention(*tensors, *arguments, 0.5)
    finally:
        torch.Tensor.__float__ = original
    assert reads == []
    expected = _reference(q, k, v, keep, 0.5)
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-12, atol=1e-12)
    if bad is None:
        got.sum().backward()
        exact = [a.detach().requires_grad_() for a in tensors]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        sdpa(*exact, attn_mask=torch.tensor(keep), scale=0.5).sum().backward()
        for a, b in zip(tensors, exact):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_on_a_gpu_the_attention_model_stays_causal_and_fused(bad, on_a_gpu, fused_calls):
    """The model's fused call runs (no three steps) and a non-finite step reaches no earlier output: the outputs
    before it are the exact ones, those after it NaN, as JAX's under jit."""
    model = attention(d_model=8, heads=2)
    params = model.init(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 9, 8))
    x[0, 5, 1] = bad
    out = model.apply({key: torch.tensor(value) for key, value in params.items()}, torch.tensor(x)).numpy()
    assert [call[-1] for call in fused_calls] == [True]
    assert np.isfinite(out[0, :5]).all() and np.isnan(out[0, 5:]).all()
    expected = model.apply(params, x)
    np.testing.assert_allclose(out[0, :5], expected[0, :5], rtol=1e-10)
    np.testing.assert_allclose(out[1], expected[1], rtol=1e-10)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_on_a_gpu_the_three_steps_keep_a_non_finite_step_causal_without_reading_a_number(bad, on_a_gpu,
                                                                                         monkeypatch):
    """Where the fused kernel declines, the three steps run; their masked contraction reads, on the CPU, which keys
    are not finite (and adds those back exactly), and on a GPU gives NaN to the queries that see one instead: the
    earlier outputs are the CPU's values, with no read back to the host."""
    model = attention(d_model=8, heads=2)
    params = model.init(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 9, 8))
    x[0, 5, 1] = bad
    expected = model.apply(params, x)
    tensors = {key: torch.tensor(value) for key, value in params.items()}
    model.apply(tensors, torch.tensor(x[1:]))                     # builds the plan (its checks read shapes only)
    monkeypatch.setattr(type(TORCH), "attention", lambda self, *arguments: None)
    for name in ("numpy", "__array__", "item", "tolist", "__bool__", "__float__", "__int__", "__index__"):
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _name=name, **k: pytest.fail(f"read by {_name}"))
    out = model.apply(tensors, torch.tensor(x))
    monkeypatch.undo()
    out = out.numpy()
    assert np.isnan(out[0, 5:]).all() and np.isfinite(expected[0, :5]).all()
    np.testing.assert_allclose(out[0, :5], expected[0, :5], rtol=1e-10)
    np.testing.assert_allclose(out[1], expected[1], rtol=1e-10)


@pytest.mark.parametrize("device", ["gpu", "jax jit"])
def test_without_a_read_each_key_operand_s_non_finite_entries_reach_the_queries_that_see_them(device, monkeypatch):
    """A mix of three key operands, the signal (per batch entry) and two positional parameters (for all entries):
    a non-finite entry of any of them spoils exactly the queries that see its key (each one NaN), the others as on
    the CPU."""
    length, d = 6, 4
    features = diagonal(d)
    algebra = tensor_product(position(length), position(length), features)
    X = Signal("x", algebra, units=[1])
    Q, K, V = (Linear(Parameter(name, (d, d)), X, factor=2, into=features) for name in "QKV")
    P, R = (Parameter(name, algebra, units=[1]) for name in "PR")
    weights = Pointwise("softmax", Reduce(Q * Flip(K), factor=2), factor=1, mask=Mask.causal())
    plan = compiler.compile(CausalReduce(weights * Flip(V) * Flip(P) * Flip(R)))
    rng = np.random.default_rng(4)
    params = {**{name: rng.standard_normal((d, d)) for name in "QKV"},
              **{name: rng.standard_normal((length, d)) for name in "PR"}}
    x = rng.standard_normal((2, length, d))
    params["P"][2, 0], params["R"][4, 1] = np.inf, np.nan
    expected = plan(x, params)                    # exact: keys 2 and 4 add their non-finite features, in every entry
    assert np.isfinite(expected[:, :2]).all() and (~np.isfinite(expected[:, 2:])).any(-1).all()
    if device == "gpu":
        monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)
        monkeypatch.setattr(type(TORCH), "attention", lambda self, *arguments: None)
        monkeypatch.setattr(torch.Tensor, "numpy", lambda self: pytest.fail("a number was read back"))
        out = plan(torch.tensor(x), {k: torch.tensor(v) for k, v in params.items()})
        monkeypatch.undo()
        out = out.numpy()
    else:
        jax = pytest.importorskip("jax")
        out = np.asarray(jax.jit(plan)(jax.numpy.asarray(x), {k: jax.numpy.asarray(v) for k, v in params.items()}))
    assert np.isnan(out[:, 2:]).all()
    np.testing.assert_allclose(out[:, :2], expected[:, :2], rtol=1e-10)


def test_under_jax_jit_the_three_steps_spoil_only_the_batch_entry_of_a_non_finite_step(monkeypatch):
    """Traced, the masked contraction cannot read which keys are not finite: the queries that see one in their
    own batch entry are NaN, the other entries exact."""
    jax = pytest.importorskip("jax")
    from product_interactions.kernels.arrays import JAX
    model = attention(d_model=8, heads=2)
    params = model.init(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 9, 8))
    x[0, 5, 1] = np.inf
    expected = model.apply(params, x)
    monkeypatch.setattr(type(JAX), "attention", lambda self, *arguments: None)      # the three steps
    out = np.asarray(jax.jit(model.apply)({k: jax.numpy.asarray(v) for k, v in params.items()}, jax.numpy.asarray(x)))
    assert np.isnan(out[0, 5:]).all()
    np.testing.assert_allclose(out[0, :5], expected[0, :5], rtol=1e-10)
    np.testing.assert_allclose(out[1], expected[1], rtol=1e-10)


@pytest.mark.filterwarnings("ignore:There is a performance drop")     # torch's SDPA has no batching rule on CPU
def test_torch_func_vmaps_the_fused_attention_and_keeps_a_non_finite_key_out():
    """Under torch.func the fused call reads no number (vmap had failed: "calling .item() on a Tensor"): vmap over
    a batch of batches is the call batch by batch, a non-finite step reaching no earlier output."""
    model = attention(d_model=8, heads=2)
    params = {key: torch.tensor(value) for key, value in model.init(seed=0).items()}
    x = torch.tensor(np.random.default_rng(2).standard_normal((3, 2, 6, 8)))
    x[1, 0, 4, 2] = np.nan
    got = torch.func.vmap(lambda batch: model.apply(params, batch))(x)
    for n in range(3):
        want = model.apply(params, x[n])
        torch.testing.assert_close(got[n][torch.isfinite(want)], want[torch.isfinite(want)], rtol=1e-12, atol=1e-12)
    assert torch.isfinite(got[1, 0, :4]).all() and torch.isnan(got[1, 0, 4:]).all()
    assert torch.isfinite(got[[0, 2]]).all()


@pytest.mark.parametrize("name, model", MODELS[:2], ids=[m[0] for m in MODELS[:2]])
def test_forward_mode_differentiates_the_fused_attention_as_the_three_steps(name, model, monkeypatch, fused_calls):
    """torch.func.jvp and torch.autograd.forward_ad through the fused kernel (the CPU's flash attention has no
    forward-mode formula: "Trying to use forward AD with _scaled_dot_product_flash_attention_for_cpu") give the
    tangent of the three steps."""
    import torch.autograd.forward_ad as forward_ad
    params = {key: torch.tensor(value) for key, value in model.init(seed=0).items()}
    x, tangent = (torch.tensor(np.random.default_rng(seed).standard_normal((2, 6, 8))) for seed in (1, 2))

    def tangents():
        with forward_ad.dual_level():
            dual = model.apply(params, forward_ad.make_dual(x, tangent))
            by_dual = forward_ad.unpack_dual(dual).tangent
        return torch.func.jvp(lambda a: model.apply(params, a), (x,), (tangent,))[1], by_dual
    fused = tangents()
    assert len(fused_calls) == 2 and all(call[-1] for call in fused_calls)           # the fused kernel ran
    monkeypatch.setattr(type(TORCH), "attention", lambda self, *arguments: None)      # the three steps
    for got, want in zip(fused, tangents()):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_second_derivatives_through_the_fused_attention_are_the_three_steps(monkeypatch, fused_calls):
    """torch.func.hessian (forward over reverse: the math backend, chosen by the library) and a gradient penalty's
    double backward under ``sdpa_kernel(SDPBackend.MATH)`` (the choice torch leaves to its user: the flash
    kernel's backward has no derivative) equal the three steps' own."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    model = attention(d_model=8, heads=2)
    params = {key: torch.tensor(value, requires_grad=True) for key, value in model.init(seed=0).items()}
    x = torch.tensor(np.random.default_rng(1).standard_normal((2, 5, 8)), requires_grad=True)

    def derivatives():
        hessian = torch.func.hessian(lambda a: model.apply({k: v.detach() for k, v in params.items()}, a).sin().sum())
        with sdpa_kernel(SDPBackend.MATH):
            slope, = torch.autograd.grad(model.apply(params, x).sin().sum(), [x], create_graph=True)
            penalty = torch.autograd.grad((slope ** 2).sum(), list(params.values()))
        return [hessian(x.detach()[:1, :3]), *penalty]
    fused = derivatives()
    assert len(fused_calls) >= 2 and all(call[-1] for call in fused_calls)           # the fused kernel ran
    monkeypatch.setattr(type(TORCH), "attention", lambda self, *arguments: None)      # the three steps
    for got, want in zip(fused, derivatives()):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("bad", [None, np.nan, np.inf])
def test_on_cuda_the_attention_model_reads_nothing_and_stays_causal(bad):
    """The attention model on a CUDA device under its shipped rates: no read back to the host, forward or backward,
    the CPU's values where the inputs are finite, and a non-finite step reaching no earlier output."""
    model = attention(d_model=8, heads=2)
    params = model.init(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 9, 8))
    if bad is not None:
        x[0, 5, 1] = bad
    weights = {key: torch.tensor(value, device="cuda", requires_grad=True) for key, value in params.items()}
    reads, original = [], torch.Tensor.__float__
    torch.Tensor.__float__ = lambda self: reads.append(self) or original(self)
    try:
        out = model.apply(weights, torch.tensor(x, device="cuda"))
        out.nan_to_num().sum().backward()
    finally:
        torch.Tensor.__float__ = original
    assert reads == []
    out, expected = out.detach().cpu().numpy(), model.apply(params, x)
    finite = np.isfinite(expected)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=1e-9, atol=1e-12)
    if bad is not None:
        assert np.isnan(out[0, 5:]).all() and np.isfinite(out[0, :5]).all() and np.isfinite(out[1]).all()
