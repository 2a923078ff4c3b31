"""The dynamical layer: every (I, H) against its numpy loop and the expression, orders read off the nodes against
the degrees of the step's formulas, float32, gradients, causality and the formula."""
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.interactions.architectures._dynamical import dynamical
from product_interactions.interactions.architectures._ssm import Orders
from ssm_support import check_gradient, dynamical_loop, formula_values, step_degrees

GRID = [(i, h) for i in (1, 2, 3) for h in (1, 2)]


def layer(input_order=3, hidden_order=2, d_model=4, length=6, batch=2, seed=0, dtype=np.float64):
    model = dynamical(d_model=d_model, input_order=input_order, hidden_order=hidden_order, length=length)
    rng = np.random.default_rng(seed)
    params = model.init(seed=rng, dtype=dtype)
    params["A_log"] += rng.uniform(-0.5, 0.5, d_model).astype(dtype)
    return model, params, rng.standard_normal((batch, length, d_model)).astype(dtype)


@pytest.mark.parametrize("input_order, hidden_order", GRID)
def test_every_grid_point_equals_its_loop(input_order, hidden_order):
    model, params, x = layer(input_order, hidden_order)
    expected = dynamical_loop(params, x, input_order, hidden_order)
    for method in ("auto", "sequential", "parallel", "chunked", "expression"):
        np.testing.assert_allclose(model.apply(params, x, method=method), expected, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("input_order, hidden_order", GRID)
def test_orders_match_the_formulas_of_the_step(input_order, hidden_order):
    model = dynamical(d_model=2, input_order=input_order, hidden_order=hidden_order, length=2)
    assert model.order() == Orders(input_order, hidden_order, max(input_order, hidden_order) + 1)
    assert step_degrees(model) == (input_order, hidden_order)


def test_float32_stays_float32():
    model, params, x = layer(dtype=np.float32)
    out = model.apply(params, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, dynamical_loop(params, x, 3, 2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("input_order, hidden_order", [(3, 2), (1, 1)])
@pytest.mark.parametrize("method", ["sequential", "parallel"])
def test_gradients_equal_finite_differences(input_order, hidden_order, method):
    model, params, x = layer(input_order, hidden_order, length=5)
    weights = np.random.default_rng(4).standard_normal(x.shape)
    check_gradient(lambda p: anp.sum(weights * model.apply(p, x, method=method) ** 2), params)


def test_causal():
    model, params, x = layer(length=7)
    changed = x.copy()
    changed[:, 3:] *= 2.0
    for method in ("sequential", "parallel", "expression"):
        before, after = model.apply(params, x, method=method), model.apply(params, changed, method=method)
        np.testing.assert_allclose(before[:, :3], after[:, :3], rtol=1e-12, atol=1e-14)
        assert not np.allclose(before[:, 3:], after[:, 3:])


def test_formula_evaluates_to_the_loop():
    model, params, x = layer(2, 2, d_model=2, length=2, batch=1)
    values = formula_values(model.formula(), {**params, "x": x[0]})
    np.testing.assert_allclose(values, dynamical_loop(params, x, 2, 2)[0], rtol=1e-12)
