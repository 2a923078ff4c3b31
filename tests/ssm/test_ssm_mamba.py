"""Mamba: the selective scan and the block against numpy loops (float32, float64, chunked, parallel), the
expression, gradients (hand-written VJP), causality, orders and the formula."""
import importlib

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.interactions.architectures._mamba import mamba, selective_scan
from product_interactions.interactions.architectures._ssm import Orders
from ssm_support import check_causal, check_gradient, formula_values, mamba_loop, selective_scan_loop, step_degrees

mamba_module = importlib.import_module("product_interactions.kernels.scans.selective_ssm")   # the hand kernel


@pytest.fixture(params=[None, 1024], ids=["one chunk", "chunks of 2 steps"])
def chunk_bytes(request, monkeypatch):
    if request.param:
        monkeypatch.setattr(mamba_module, "CHUNK_BYTES", request.param)   # 2 steps of (2, 4, 8) float64


def scan_inputs(dtype=np.float64, seed=0, batch=2, length=7, channels=8, d_state=4):
    rng = np.random.default_rng(seed)
    draw = lambda *shape: rng.standard_normal(shape).astype(dtype)  # noqa: E731
    return {"u": draw(batch, length, channels), "delta": (rng.random((batch, length, channels)) + 0.05).astype(dtype),
            "A": -(rng.random((channels, d_state)) + 0.5).astype(dtype), "B": draw(batch, length, d_state),
            "C": draw(batch, length, d_state), "D": draw(channels), "z": draw(batch, length, channels)}


@pytest.fixture(params=[False, True], ids=["exp in one thread", "exp on two threads"])
def exp_threads(request, monkeypatch):
    if request.param:
        monkeypatch.setattr(mamba_module, "THREADS", 2)
        monkeypatch.setattr(mamba_module, "THREAD_ELEMENTS", 1)


@pytest.mark.parametrize("method", ["auto", "sequential", "parallel"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_selective_scan_equals_the_loop(method, dtype, chunk_bytes, exp_threads):
    inputs = scan_inputs(dtype)
    tolerance = 1e-12 if dtype == np.float64 else 2e-5
    for optional in ({}, {"D": inputs["D"]}, {"D": inputs["D"], "z": inputs["z"]}):
        core = {name: inputs[name] for name in ("u", "delta", "A", "B", "C")}
        y = selective_scan(**core, **optional, method=method)
        assert y.dtype == dtype
        np.testing.assert_allclose(y, selective_scan_loop(**core, **optional), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked"])
@pytest.mark.parametrize("batch, length, channels, d_state", [(1, 1, 1, 1), (2, 3, 1, 1), (1, 5, 3, 1)])
def test_the_smallest_sizes_equal_the_loop(batch, length, channels, d_state, method):
    """One state per channel, one channel, one step, one sequence: each size at its least is still a scan."""
    inputs = scan_inputs(batch=batch, length=length, channels=channels, d_state=d_state)
    np.testing.assert_allclose(selective_scan(**inputs, method=method), selective_scan_loop(**inputs), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("method", ["sequential", "parallel"])
def test_selective_scan_gradients(method, chunk_bytes):
    inputs = scan_inputs()
    weights = np.random.default_rng(1).standard_normal(inputs["u"].shape)
    check_gradient(lambda p: anp.sum(weights * selective_scan(**p, method=method)), inputs)


def block(d_model=4, d_state=3, length=6, batch=2, seed=0, dtype=np.float64, **options):
    model = mamba(d_model=d_model, d_state=d_state, length=length, **options)
    rng = np.random.default_rng(seed)
    params = model.init(seed=rng, dtype=dtype)
    return model, params, rng.standard_normal((batch, length, d_model)).astype(dtype)


@pytest.mark.parametrize("method", ["auto", "sequential", "parallel", "expression"])
def test_block_equals_the_loop(method, chunk_bytes):
    model, params, x = block()
    np.testing.assert_allclose(model.apply(params, x, method=method), mamba_loop(params, x), rtol=1e-11, atol=1e-13)


def test_block_float32():
    model, params, x = block(dtype=np.float32)
    out = model.apply(params, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, mamba_loop(params, x), rtol=1e-4, atol=1e-5)


def test_block_gradients_equal_finite_differences_and_the_expression(chunk_bytes):
    model, params, x = block(length=5)
    weights = np.random.default_rng(2).standard_normal(x.shape)
    loss = lambda method: lambda p: anp.sum(weights * model.apply(p, x, method=method) ** 2)  # noqa: E731
    check_gradient(loss("sequential"), params)
    fast, exact = autograd.grad(loss("parallel"))(params), autograd.grad(loss("expression"))(params)
    for name in params:
        np.testing.assert_allclose(fast[name], exact[name], rtol=1e-9, atol=1e-12)


def test_causal():
    check_causal(*block(length=7))


def test_orders_match_the_formulas_of_the_step():
    model = mamba(d_model=1, d_state=1, expand=1, d_conv=2, length=2)
    assert model.order() == Orders(input=3, hidden=1, output=5)
    assert step_degrees(model) == (3, 1)


def test_formula_evaluates_to_the_loop():
    model, params, x = block(d_model=1, d_state=1, length=2, batch=1, d_conv=2)
    values = formula_values(model.formula()[:, :, 0], {**params, "x": x[0]})
    np.testing.assert_allclose(values, mamba_loop(params, x)[0], rtol=1e-12)


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked", "auto"])
def test_an_explicit_method_is_the_one_that_scans(method, monkeypatch):
    """Each chunk of the numpy selective scan runs the linear recurrence by the method asked for; auto by the one
    `choose` picks for the sizes (the numbers agree either way, so only the calls can tell)."""
    from product_interactions.kernels.scans import recurrence, selective_ssm
    used, scan = [], selective_ssm.scan
    monkeypatch.setattr(selective_ssm, "scan", lambda *a, method, **k: used.append(method) or scan(*a, method=method,
                                                                                                     **k))
    inputs = scan_inputs()
    selective_scan(**inputs, method=method)
    u = inputs["u"]
    expected = recurrence.choose(u.shape[1], u.shape[0] * u.shape[2] * inputs["A"].shape[1]) if method == "auto" \
        else method
    assert used and set(used) == {expected}
