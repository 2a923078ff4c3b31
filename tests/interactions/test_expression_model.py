"""expression_model (issue 38): one's own expression as a Model, checked against hand-written products; the engines
agree; each mistake on the way is refused by name with the fix."""
from __future__ import annotations

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
import sympy

from product_interactions.algebra import position, quaternions, tensor_product
from product_interactions.interactions import CausalReduce, Flip, Parameter, Signal
from product_interactions.interactions.architectures import expression_model

H = quaternions()


def hamilton(p, q):
    """The Hamilton product written out, on the last axis (numpy arrays or lists of sympy numbers)."""
    a0, a1, a2, a3 = (p[..., i] for i in range(4)) if isinstance(p, np.ndarray) else p
    b0, b1, b2, b3 = (q[..., i] for i in range(4)) if isinstance(q, np.ndarray) else q
    parts = [a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
             a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0]
    return np.stack(parts, axis=-1) if isinstance(p, np.ndarray) else parts


def reference(K, x):
    """z_t = sum_{s <= t} (K x_t) x_s, by hand."""
    left = hamilton(np.broadcast_to(K, x.shape), x)                     # K x_t
    return np.stack([sum(hamilton(left[..., t, :], x[..., s, :]) for s in range(t + 1))
                     for t in range(x.shape[-2])], axis=-2)


def build(n):
    S = tensor_product(position(n), position(n), H)
    X = Signal("x", S, units=[1])
    K = Parameter("K", S, units=[0, 1])
    return CausalReduce((K * X) * Flip(X)), X


@pytest.fixture(scope="module")
def model():
    return expression_model(build, geometry=(3,), name="Mixer")


def test_a_function_of_the_length_gives_the_hand_written_interaction_at_every_length(model):
    K = np.random.default_rng(0).standard_normal(4)
    for n in (1, 3, 6):
        x = np.random.default_rng(n).standard_normal((2, n, 4))
        np.testing.assert_allclose(model.apply({"K": K}, x), reference(K, x), rtol=1e-12, atol=1e-12)


def test_a_length_generic_expression_serves_every_length():
    model = expression_model(build(2)[0])
    K = np.random.default_rng(0).standard_normal(4)
    x = np.random.default_rng(1).standard_normal((3, 7, 4))
    np.testing.assert_allclose(model.apply({"K": K}, x), reference(K, x), rtol=1e-12, atol=1e-12)
    assert "one plan for every size of position(2)" in model.explain()
    assert repr(model) == ("<ExpressionModel: 1 parameters (4 numbers), input x in position(2) ⊗ position(2) ⊗ "
                           "quaternions, order 2>")


def test_parameters_order_formula_and_display(model):
    assert model.parameters == {"K": (4,)} and model.order() == 2
    assert repr(model).startswith("<Mixer: 1 parameters (4 numbers), input x in position(3) ⊗ position(3) ⊗ "
                                  "quaternions at geometry (3,), order 2>")
    assert "<b>Mixer</b>" in model._repr_html_() and "self-interaction order 2" in model._repr_html_()
    assert model.explain().startswith("Plan for Mixer at (")          # compiled at the first length it saw
    formula = model.formula()                                  # (query, key: constant, feature) at length 3
    K = sympy.symbols("K_{0} K_{1} K_{2} K_{3}", real=True)
    x = [[sympy.Symbol(f"x_{{{t},{a}}}", real=True) for a in range(4)] for t in range(3)]
    for t in range(3):
        expected = [sum(terms) for terms in zip(*(hamilton(hamilton(list(K), list(x[t])), list(x[s]))
                                                  for s in range(t + 1)))]
        assert [sympy.expand(formula[t, 0, a] - expected[a]) for a in range(4)] == [0] * 4


def test_init_is_fan_in_normal_with_overrides_by_name():
    seed = 5
    default = expression_model(build, geometry=(2,)).init(seed)["K"]
    np.testing.assert_array_equal(default, np.random.default_rng(seed).standard_normal(4) / 2)
    scaled = expression_model(build, geometry=(2,), scales={"K": 0.1}).init(seed)["K"]
    np.testing.assert_array_equal(scaled, 0.1 * np.random.default_rng(seed).standard_normal(4))


def test_the_engines_and_the_torch_module_agree_values_and_gradients(model):
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    K = np.random.default_rng(0).standard_normal(4)
    x = np.random.default_rng(1).standard_normal((2, 5, 4))
    value = model.apply({"K": K}, x)
    gradient = autograd.grad(lambda k: anp.sum(model.apply({"K": k}, x) ** 2))(K)
    k = torch.tensor(K, requires_grad=True)
    torch_value = model.apply({"K": k}, torch.tensor(x))
    (torch_value ** 2).sum().backward()
    jax_gradient = jax.grad(lambda k: (model.apply({"K": k}, jax.numpy.asarray(x)) ** 2).sum())(jax.numpy.asarray(K))
    np.testing.assert_allclose(torch_value.detach().numpy(), value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k.grad.numpy(), gradient, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(jax_gradient), gradient, rtol=1e-10)
    finite = [(np.sum(reference(K + h, x) ** 2) - np.sum(reference(K - h, x) ** 2)) / 2e-6 for h in 1e-6 * np.eye(4)]
    np.testing.assert_allclose(gradient, finite, rtol=1e-6)
    module = model.to_torch(seed=3)
    assert type(module).__name__ == "MixerModule" and dict(module.named_parameters()).keys() == {"K"}
    np.testing.assert_allclose(module(torch.tensor(x)).detach().numpy(), reference(model.init(3)["K"], x),
                               rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- mistakes refused by name, with the fix
def test_a_parameter_in_the_wrong_algebra_is_refused_with_the_units_to_use():
    def wrong(n):
        S = tensor_product(position(n), position(n), H)
        X = Signal("x", S, units=[1])
        return CausalReduce((Parameter("K", H) * X) * Flip(X)), X
    with pytest.raises(ValueError, match=r"K, X: cannot multiply an element of quaternions by one of position\(3\) "
                                         r"⊗ position\(3\) ⊗ quaternions .*units=\[0, 1\]"):
        expression_model(wrong, geometry=(3,))


@pytest.mark.parametrize("returned, error, message", [
    (lambda n: build(n)[0], TypeError, r"build: expected build\(3\) to return \(expression, its input Signal\), "
                                       r"got CausalReduce"),
    (lambda n: build(n)[::-1], TypeError, r"got \(Signal, CausalReduce\); return expr, X"),
    (lambda n: (build(n)[0], Signal("x", H)), ValueError, r"build: build\(3\) returned a different Signal of the "
                                                          r"same name, but the expression is built on the signal 'x'"),
    (lambda n: (build(n)[0], Signal("y", H)), ValueError, r"build: build\(3\) returned 'y', but the expression"),
    (lambda n: (build(n)[0] + build(n)[0], build(n)[1]), ValueError, r"input signals \['x', 'x'\]; a model takes one"),
])
def test_a_geometry_function_that_returns_the_wrong_signal_is_refused(returned, error, message):
    with pytest.raises(error, match=message):
        expression_model(returned, geometry=(3,))


def test_a_geometry_function_that_ignores_the_length_is_refused():
    with pytest.raises(ValueError, match=r"build: the signal has shape \(4, 4\) at geometry \(3,\) and \(4, 4\) at "
                                         r"\(4,\); geometry\[0\] must be the size of the axes it grows"):
        expression_model(lambda n: build(4), geometry=(3,))


def test_a_parameter_that_grows_with_the_length_is_refused_with_units():
    def per_position(n):
        S = tensor_product(position(n), position(n), H)
        X = Signal("x", S, units=[1])
        return CausalReduce((Parameter("K", S, units=[1]) * X) * Flip(X)), X
    with pytest.raises(ValueError, match=r"build: parameter 'K' has shape \(3, 4\) at geometry \(3,\) but \(4, 4\) "
                                         r"at \(4,\); .* make it constant along the position factors"):
        expression_model(per_position, geometry=(3,))


def test_mismatched_lengths_and_features_are_refused_with_the_expected_shape(model):
    K = {"K": np.ones(4)}
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., n, 4\), got \(2, 6, 3\)"):
        model.apply(K, np.ones((2, 6, 3)))
    S = tensor_product(position(3), H)
    X = Signal("x", S)
    fixed = expression_model(Parameter("K", S) * X)                   # K varies along positions: length 3 only
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., 3, 4\), got \(2, 5, 4\); the expression was "
                                         r"built at these sizes: .* expression_model\(build, geometry=\.\.\.\)"):
        fixed.apply({"K": np.ones((3, 4))}, np.ones((2, 5, 4)))


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(TypeError, match=r"geometry: expected the sizes to inspect build at, e.g. geometry=\(4,\)"):
        expression_model(build)
    with pytest.raises(TypeError, match=r"geometry: build is called as build\(\*geometry\) with 2 argument\(s\)"):
        expression_model(build, geometry=(3, 4))
    with pytest.raises(ValueError, match=r"scales: unknown parameter\(s\) \['Q'\] \(the parameters: \['K'\]\)"):
        expression_model(build, geometry=(3,), scales={"Q": 1.0})
    with pytest.raises(ValueError, match=r"scales\['K'\]: expected a real number in \(0"):
        expression_model(build, geometry=(3,), scales={"K": -1.0})
    with pytest.raises(ValueError, match="name: expected an identifier"):
        expression_model(build, geometry=(3,), name="my layer")
    expr, X = build(3)
    with pytest.raises(ValueError, match="signal: expected the Signal the expression is built on"):
        expression_model(expr, Signal("x", H))
    with pytest.raises(ValueError, match="geometry, geometry_of: only for a function of the geometry"):
        expression_model(expr, geometry=(3,))
    with pytest.raises(TypeError, match="build: expected an expression or a function of the geometry"):
        expression_model(3)


def test_geometry_of_may_be_given():
    model = expression_model(lambda n: build(2 * n), geometry=(2,), geometry_of=lambda x: (np.shape(x)[-2] // 2,))
    x = np.random.default_rng(1).standard_normal((1, 6, 4))
    np.testing.assert_allclose(model.apply({"K": np.ones(4)}, x), reference(np.ones(4), x), rtol=1e-12)
