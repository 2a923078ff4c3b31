"""The diagonal SSM (S4D): recurrence == convolution == the loop == the expression; float32; gradients; causality;
orders and the formula."""
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.interactions.architectures._ssm import Orders, ssm
from product_interactions.interactions.orders import polynomial_degree
from ssm_support import check_gradient, formula_values, ssm_loop, step_degrees

METHODS = ["auto", "convolution", "sequential", "parallel", "expression"]


def setup(channels=3, d_state=4, length=9, batch=2, seed=0):
    model = ssm(channels=channels, d_state=d_state, length=length)
    rng = np.random.default_rng(seed)
    params = model.init(seed=rng)
    params["log_A_real"] += rng.uniform(-1, 1, params["log_A_real"].shape)       # away from the symmetric init
    params["B"] += 0.3 * rng.standard_normal(params["B"].shape)
    return model, params, rng.standard_normal((batch, length, channels))


@pytest.mark.parametrize("method", METHODS)
def test_every_method_equals_the_loop(method):
    model, params, x = setup()
    np.testing.assert_allclose(model.apply(params, x, method=method), ssm_loop(params, x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["convolution", "sequential", "parallel"])
def test_float32_stays_float32(method):
    model, params, x = setup()
    single = {name: value.astype(np.float32) for name, value in params.items()}
    out = model.apply(single, x.astype(np.float32), method=method)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ssm_loop(params, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("method", ["convolution", "sequential"])
def test_gradients_equal_finite_differences(method):
    model, params, x = setup(length=6)
    weights = np.random.default_rng(3).standard_normal(x.shape)
    check_gradient(lambda p: anp.sum(weights * model.apply(p, x, method=method) ** 2), params)


def test_causal():
    model, params, x = setup(length=8)
    changed = x.copy()
    changed[:, 5:] += 1.0
    for method in ("convolution", "sequential", "expression"):
        before, after = model.apply(params, x, method=method), model.apply(params, changed, method=method)
        np.testing.assert_allclose(before[:, :5], after[:, :5], rtol=1e-12, atol=1e-13)
        assert not np.allclose(before[:, 5:], after[:, 5:])


def test_orders_and_formula():
    model = ssm(channels=1, d_state=2, length=3)
    assert model.order() == Orders(input=1, hidden=0, output=1)
    assert step_degrees(model) == (1, 0)
    components = model.formula()                          # unrolled: still linear in x
    x = {s for c in components.ravel() for s in getattr(c, "free_symbols", ()) if s.name.startswith("x_")}
    assert max(polynomial_degree(c, x) for c in components.ravel()) == 1


def test_formula_evaluates_to_the_loop():
    model, params, x = setup(channels=1, d_state=2, length=3, batch=1)
    _, Abar, Bbar, C = model.discretise(params)
    pairs = lambda z: np.stack([z.real, z.imag], axis=-1)  # noqa: E731
    arrays = {"Abar": pairs(Abar), "Bbar": pairs(Bbar), "C": pairs(C), "D": params["D"][:, None],
              "x": np.stack([x[0], np.zeros_like(x[0])], axis=-1)}
    values = formula_values(model.formula()[:, :, 0, 0], arrays)
    np.testing.assert_allclose(values, ssm_loop(params, x)[0], rtol=1e-12)


def test_the_step_orders_count_the_order_of_what_the_scan_reads():
    """A state-space frame whose scan reads x * x (order 2), not x: the step's input term x_t is then order 2 in
    the layer's input, the hidden term a h still 0 (the per-step orders times the order of the scanned input), and
    the whole layer order 2 by its formula's degree."""
    from product_interactions.algebra import diagonal, position, tensor_product
    from product_interactions.interactions import Parameter, Signal
    from product_interactions.interactions.architectures._ssm import StateSpaceModel

    class SquaredInput(StateSpaceModel):
        width = 2

        def __init__(self):
            super().__init__()
            self.geometry = (3,)

        def build(self, geometry):
            X = Signal("x", tensor_product(position(geometry[0]), diagonal(2)))
            a = Parameter("a", diagonal(2))
            return self.recurrence(lambda h, x_t: (a * h, x_t), X * X, diagonal(2)), X

    model = SquaredInput()
    assert step_degrees(model) == (1, 0)                              # in x_t, the scanned x * x
    assert model.order() == Orders(input=2, hidden=0, output=2)
    components = model.formula()
    x = {s for c in components.ravel() for s in getattr(c, "free_symbols", ()) if s.name.startswith("x_")}
    assert max(polynomial_degree(c, x) for c in components.ravel()) == 2
