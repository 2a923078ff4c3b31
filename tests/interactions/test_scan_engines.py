"""A compiled expression's `Scan` on every engine: its values, dtype and gradients equal numpy's (autograd), and on
JAX its loop is one compiled lax.scan (`Engine.sequential_scan`), not a program that grows with the length."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.algebra import complex_numbers, diagonal, position, tensor_product
from product_interactions.interactions import Parameter, Scan, Signal


def _scans(length):
    """(name, compiled plan, signal name, parameter shapes): a complex rotation from a given state, its last state,
    a state squared (order 2 in h), and a scan whose body reads a hoisted product of two parameters."""
    S = Signal("s", tensor_product(position(length), complex_numbers()))
    X = Signal("x", tensor_product(position(length), diagonal(3)))
    r, h0 = Parameter("r", complex_numbers()), Parameter("h0", complex_numbers())
    a, b = Parameter("a", diagonal(3)), Parameter("b", diagonal(3))
    return [("rotation", Scan(lambda h, x_t: r * h + x_t * x_t, S, state=complex_numbers(), initial=h0), "s",
             {"r": (2,), "h0": (2,)}),
            ("last state", Scan(lambda h, x_t: r * h + x_t, S, state=complex_numbers(), return_sequences=False), "s",
             {"r": (2,)}),
            ("square", Scan(lambda h, x_t: a * h * h + x_t, X, state=diagonal(3)), "x", {"a": (3,)}),
            ("hoisted", Scan(lambda h, x_t: (a * b) * h + x_t, X, state=diagonal(3)), "x", {"a": (3,), "b": (3,)})]


def _library(name):
    if name == "torch":
        torch = pytest.importorskip("torch")
        return lambda v: torch.tensor(v, requires_grad=True), lambda v: v.detach().numpy()
    jnp = pytest.importorskip("jax.numpy")
    return jnp.asarray, np.asarray


@pytest.mark.parametrize("engine", ["torch", "jax"])
@pytest.mark.parametrize("case", range(4))
def test_a_scan_gives_numpy_s_values_dtype_and_gradients_on_torch_and_jax(engine, case):
    """On JAX, parameters in float64 beside a float32 signal: the state takes their common dtype, as numpy's (torch
    refuses two dtypes in a plan)."""
    name, scan, signal, shapes = _scans(5)[case]
    plan = scan.compile()
    rng = np.random.default_rng(case)
    x = rng.standard_normal((2, 5, 2 if signal == "s" else 3)).astype(np.float32 if engine == "jax" else np.float64)
    params = {key: 0.5 * rng.standard_normal(shape) for key, shape in shapes.items()}
    weights = rng.standard_normal(plan(x, params).shape)
    expected = plan(x, params)
    gradients = autograd.grad(lambda p: anp.sum(plan(x, p) * weights))(params)
    to, back = _library(engine)
    leaves = {key: to(value) for key, value in params.items()}
    got = plan(to(x), leaves)
    assert back(got).dtype == expected.dtype == np.float64, name
    np.testing.assert_allclose(back(got), expected, rtol=1e-6, atol=1e-6, err_msg=name)
    if engine == "torch":
        (got * to(weights)).sum().backward()
        found = {key: leaf.grad.numpy() for key, leaf in leaves.items()}
    else:
        import jax
        found = jax.grad(lambda p: (plan(to(x), p) * weights).sum())(leaves)
    for key in params:
        np.testing.assert_allclose(np.asarray(found[key]), gradients[key], rtol=1e-6, atol=1e-6, err_msg=key)


def test_on_jax_a_scan_is_one_compiled_loop_traced_once_per_size(monkeypatch):
    """Its program does not grow with the length, and an eager call with new numbers runs the compiled loop
    without tracing the body again."""
    jax = pytest.importorskip("jax")
    from product_interactions.kernels.plans.plan import Scan as ScanStep
    jnp = jax.numpy
    programs = {}
    for length in (4, 40):
        _, scan, _, _ = _scans(length)[0]
        plan, x = scan.compile(), jnp.ones((2, length, 2))
        programs[length] = jax.make_jaxpr(lambda x, p: plan(x, p))(x, {"r": jnp.ones(2), "h0": jnp.ones(2)}).jaxpr
    assert len(programs[4].eqns) == len(programs[40].eqns)
    assert " scan[" in str(programs[40])
    _, scan, _, _ = _scans(7)[2]
    plan = scan.compile()
    inputs = [np.full((3, 7, 3), value) for value in (0.5, 1.0)]
    expected = [plan(x, {"a": np.full(3, 0.25)}) for x in inputs]
    body = next(step for step in plan.steps if isinstance(step, ScanStep)).body[0]
    run, traced = type(body).run, []
    monkeypatch.setattr(type(body), "run", lambda *arguments: traced.append(1) or run(*arguments))
    for index, x in enumerate(inputs):
        got = plan(jnp.asarray(x), {"a": jnp.full(3, 0.25)})
        np.testing.assert_allclose(np.asarray(got), expected[index], rtol=1e-12)
        assert bool(traced) == (index == 0), "the first call traces the body, the second runs the compiled loop"
        traced.clear()


def test_a_plan_s_compiled_loop_lives_no_longer_than_the_plan():
    """JAX's compiled loop is kept with the plan's step, not in a cache of the process: a plan dropped after an
    eager call is freed, with its kernels and compiled programs."""
    jax = pytest.importorskip("jax")
    import gc
    import weakref
    _, scan, _, _ = _scans(6)[3]
    plan = scan.compile()
    plan(jax.numpy.ones((2, 6, 3)), {"a": jax.numpy.ones(3), "b": jax.numpy.ones(3)})
    gone = weakref.ref(plan)
    del plan
    gc.collect()
    assert gone() is None
