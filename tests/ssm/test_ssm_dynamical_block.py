"""The dynamical layer in Mamba's block: every (I, H) against a numpy loop (Mamba's frame around the recurrence),
the fast paths against the expression, orders against the step's formulas, the frame shared with Mamba,
gradients, float32, causality and bad arguments."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.interactions.architectures import dynamical_block, mamba
from product_interactions.interactions.architectures._ssm import Orders
from ssm_support import check_causal, check_gradient, dynamical_block_loop, formula_values, step_degrees

GRID = [(i, h) for i in (1, 2, 3) for h in (1, 2)]


def block(input_order=3, hidden_order=2, d_model=3, length=6, batch=2, seed=0, dtype=np.float64, **options):
    model = dynamical_block(d_model=d_model, input_order=input_order, hidden_order=hidden_order, length=length,
                            **options)
    rng = np.random.default_rng(seed)
    params = model.init(seed=rng, dtype=dtype)
    params["A_log"] += rng.uniform(-0.5, 0.5, model.d_inner).astype(dtype)
    return model, params, rng.standard_normal((batch, length, d_model)).astype(dtype)


@pytest.mark.parametrize("input_order, hidden_order", GRID)
def test_every_grid_point_equals_its_loop_on_every_path(input_order, hidden_order):
    model, params, x = block(input_order, hidden_order)
    expected = dynamical_block_loop(params, x, input_order, hidden_order)
    for method in ("auto", "sequential", "parallel", "chunked", "expression"):
        np.testing.assert_allclose(model.apply(params, x, method=method), expected, rtol=1e-11, atol=1e-13,
                                   err_msg=method)


@pytest.mark.parametrize("expand, d_conv", [(1, 1), (3, 2)])
def test_expansion_and_taps_are_mambas(expand, d_conv):
    model, params, x = block(2, 1, expand=expand, d_conv=d_conv)
    assert model.d_inner == 3 * expand and params["W_x"].shape == (3 * expand, 3)
    np.testing.assert_allclose(model.apply(params, x), dynamical_block_loop(params, x, 2, 1), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(model.apply(params, x, method="expression"), dynamical_block_loop(params, x, 2, 1),
                               rtol=1e-11, atol=1e-13)


def test_the_frame_is_mambas():
    ours, theirs = dynamical_block(d_model=4, expand=3, d_conv=2), mamba(d_model=4, expand=3, d_conv=2)
    frame = {"W_x", "W_z", "W_out", "conv_0", "conv_1", "conv_bias"}
    assert {name: ours.parameters[name] for name in frame} == {name: theirs.parameters[name] for name in frame}
    assert set(ours.parameters) - frame == {"W_g", "W_h", "W_u", "W_b", "W_c", "A_log"}      # no D: no skip
    assert ours.parameters["W_g"] == (12, 12) and ours.parameters["A_log"] == (12,)   # state: d_inner numbers


@pytest.mark.parametrize("input_order, hidden_order", GRID)
def test_orders_match_the_formulas_of_the_step(input_order, hidden_order):
    model = dynamical_block(d_model=1, input_order=input_order, hidden_order=hidden_order, expand=1, d_conv=2,
                            length=2)
    assert model.order() == Orders(input_order, hidden_order, max(input_order, hidden_order) + 2)
    assert step_degrees(model) == (input_order, hidden_order)


def test_formula_evaluates_to_the_loop():
    model, params, x = block(2, 2, d_model=1, length=2, batch=1, expand=1, d_conv=2)
    values = formula_values(model.formula(), {**params, "x": x[0]})
    np.testing.assert_allclose(values, dynamical_block_loop(params, x, 2, 2)[0], rtol=1e-12)


@pytest.mark.parametrize("input_order, hidden_order", [(3, 2), (1, 1)])
def test_gradients_equal_finite_differences_and_the_expression(input_order, hidden_order):
    model, params, x = block(input_order, hidden_order, length=5)
    weights = np.random.default_rng(4).standard_normal(x.shape)
    loss = lambda method: lambda p: anp.sum(weights * model.apply(p, x, method=method) ** 2)  # noqa: E731
    check_gradient(loss("sequential"), params)
    fast, exact = autograd.grad(loss("parallel"))(params), autograd.grad(loss("expression"))(params)
    for name in params:
        np.testing.assert_allclose(fast[name], exact[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_float32_stays_float32():
    model, params, x = block(dtype=np.float32)
    out = model.apply(params, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, dynamical_block_loop(params, x, 3, 2), rtol=1e-4, atol=1e-5)


def test_causal():
    check_causal(*block(length=7))


@pytest.mark.parametrize("arguments, error, message", [
    ({"input_order": 4}, ValueError, r"input_order: expected one of \(1, 2, 3\) \(the paper's I\), got 4"),
    ({"hidden_order": 3}, ValueError, r"hidden_order: expected one of \(1, 2\) \(the paper's H\), got 3"),
    ({"hidden_order": True}, ValueError, r"hidden_order: expected one of \(1, 2\) \(the paper's H\), got True"),
    ({"expand": 0}, ValueError, r"expand: expected a positive int, got 0"),
    ({"d_conv": 1.5}, TypeError, r"d_conv: expected a positive int, got float 1.5"),
    ({"d_model": -2}, ValueError, r"d_model: expected a positive int, got -2")])
def test_bad_arguments_name_the_argument_and_what_came(arguments, error, message):
    with pytest.raises(error, match=message):
        dynamical_block(**arguments)


def test_a_wrong_input_width_is_refused_naming_x():
    model, params, _ = block()
    with pytest.raises(ValueError, match=r"x: expected shape \(batch, length, 3\), got \(2, 5, 4\)"):
        model.apply(params, np.ones((2, 5, 4)))
