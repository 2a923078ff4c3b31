"""Bad input to the ssm, mamba and dynamical layers and to selective_scan: errors that name the argument."""
import numpy as np
import pytest

from product_interactions.interactions.architectures._dynamical import dynamical
from product_interactions.interactions.architectures._mamba import mamba, selective_scan
from product_interactions.interactions.architectures._ssm import ssm

MODELS = [ssm(channels=3, d_state=2), mamba(d_model=3, d_state=2), dynamical(d_model=3)]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_input_rank_width_method_and_parameters(model):
    params, x = model.init(seed=0), np.ones((2, 5, 3))
    for bad in (np.ones((5, 3)), np.ones((2, 5, 4)), np.ones((1, 2, 5, 3))):
        with pytest.raises(ValueError, match=r"x: expected shape \(batch, length, 3\)"):
            model.apply(params, bad)
    with pytest.raises(ValueError, match="method: expected one of auto, expression, .*got 'fast'"):
        model.apply(params, x, method="fast")
    name = sorted(params)[0]
    with pytest.raises(ValueError, match=rf"params: missing \['{name}'\] \(expected shapes"):
        model.apply({k: v for k, v in params.items() if k != name}, x)
    with pytest.raises(ValueError, match=rf"params\['{name}'\]: expected shape"):
        model.apply({**params, name: np.ones(7)}, x)


def test_sizes_and_steps():
    for build, argument in ((lambda: ssm(d_state=0), "d_state"), (lambda: mamba(d_state=0), "d_state"),
                            (lambda: ssm(channels=-1), "channels"), (lambda: mamba(d_model=0), "d_model"),
                            (lambda: dynamical(d_model=0), "d_model"), (lambda: mamba(d_conv=0), "d_conv")):
        with pytest.raises(ValueError, match=f"{argument}: expected a positive int"):
            build()
    with pytest.raises(TypeError, match="d_state: expected a positive int, got float"):
        mamba(d_state=2.5)
    for build, argument in ((lambda: ssm(step_min=0.0), "step_min, step_max"),
                            (lambda: ssm(step_min=0.2, step_max=0.1), "step_min, step_max"),
                            (lambda: mamba(dt_min=-1e-3), "dt_min, dt_max")):
        with pytest.raises(ValueError, match=f"{argument}: expected steps 0 <"):
            build()


def test_orders_outside_the_grid():
    for input_order in (0, 4, True, "3"):
        with pytest.raises(ValueError, match=r"input_order: expected one of \(1, 2, 3\)"):
            dynamical(input_order=input_order)
    for hidden_order in (0, 3):
        with pytest.raises(ValueError, match=r"hidden_order: expected one of \(1, 2\)"):
            dynamical(hidden_order=hidden_order)


def test_selective_scan():
    u, A, BC = np.ones((2, 5, 3)), -np.ones((3, 4)), np.ones((2, 5, 4))
    with pytest.raises(ValueError, match=r"u: expected shape \(batch, length, channels\)"):
        selective_scan(u[0], u[0], A, BC[0], BC[0])
    with pytest.raises(ValueError, match="delta: expected positive steps, got a minimum of 0.0"):
        selective_scan(u, np.zeros_like(u), A, BC, BC)
    with pytest.raises(ValueError, match=r"A: expected shape \(channels, d_state\) = \(3, d_state >= 1\), got"):
        selective_scan(u, u, np.ones((3, 0)), BC[..., :0], BC[..., :0])
    with pytest.raises(ValueError, match=r"delta: expected shape \(2, 5, 3\)"):
        selective_scan(u, u[:, :4], A, BC, BC)
    with pytest.raises(ValueError, match=r"C: expected shape \(2, 5, 4\)"):
        selective_scan(u, u, A, BC, BC[..., :3])
    with pytest.raises(ValueError, match=r"D: expected shape \(3,\)"):
        selective_scan(u, u, A, BC, BC, D=np.ones(4))
    with pytest.raises(ValueError, match="method: expected one of auto, sequential, parallel"):
        selective_scan(u, u, A, BC, BC, method="expression")


def _growing(method):
    rng = np.random.default_rng(0)
    u, delta = rng.standard_normal((1, 10, 2)), np.full((1, 10, 2), 100.0)
    return u, delta, np.array([[1.0], [2.0]]), np.ones((1, 10, 1)), np.ones((1, 10, 1))


@pytest.mark.parametrize("engine", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("method", ["sequential", "parallel"])
def test_a_positive_A_whose_state_overflows_is_named_not_silent(engine, method):
    """Issue 36: a positive A with large steps gave 8 of 10 outputs non-finite without a word."""
    if engine != "numpy":
        library = pytest.importorskip(engine)
    to = {"numpy": np.asarray, "torch": lambda a: library.tensor(a),
          "jax": lambda a: library.numpy.asarray(a)}[engine]
    arrays = _growing(method)
    with pytest.warns(RuntimeWarning, match=r"selective_scan: \d+ of 20 outputs are not finite, from finite inputs: "
                                            r"A has positive entries \(largest 2\)"):
        selective_scan(*map(to, arrays), method=method)
    u, delta, A, B, C = arrays
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # a growing state that stays finite, or a decaying one
        selective_scan(*map(to, (u, delta / 1000, A, B, C)), method=method)
        selective_scan(*map(to, (u, delta, -A, B, C)), method=method)


def test_a_positive_A_differentiates_under_every_jax_transform_and_still_warns_of_overflow():
    """A positive entry of A (a free A, as in S5 or the LRU) failed eager ``jax.grad``, ``jacfwd``, ``linearize``
    and ``vjp`` ("__array__() was called on traced array"): the overflow check read the traced result.  It reads
    the values under the trace, so the gradient equals autograd's on numpy and an overflow is still named."""
    jax = pytest.importorskip("jax")
    import autograd
    import warnings
    rng = np.random.default_rng(3)
    u, delta, B, C = (rng.standard_normal((1, 5, 2)), rng.uniform(0.1, 0.5, (1, 5, 2)),
                      rng.standard_normal((1, 5, 2)), rng.standard_normal((1, 5, 2)))
    A = np.array([[0.3, -1.0], [-0.5, -0.2]])                  # one positive entry; nothing overflows
    expected = autograd.grad(lambda v: (selective_scan(v, delta, A, B, C) ** 2).sum())(u)
    f = lambda v: (selective_scan(v, delta, A, B, C) ** 2).sum()   # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, tangent = jax.numpy.asarray(u), rng.standard_normal(u.shape)
        for got in (jax.grad(f)(x), jax.jacfwd(f)(x), jax.vjp(f, x)[1](1.0)[0]):
            np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(float(jax.linearize(f, x)[1](tangent)), (expected * tangent).sum(), rtol=1e-10)
    u, delta, A, B, C = _growing("sequential")
    with pytest.warns(RuntimeWarning, match="A has positive entries"):
        jax.grad(lambda v: selective_scan(v, delta, A, B, C).sum())(jax.numpy.asarray(u))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("model", MODELS, ids=lambda m: type(m).__name__)
def test_torch_inputs_of_int_or_bool_dtypes_are_refused_by_name(model, dtype):
    """Issue 36: mamba on int or bool torch input raised "expected scalar type Long but found Double" (half
    precision runs in float32: tests/kernels/test_half_precision.py)."""
    torch = pytest.importorskip("torch")
    params = {name: torch.tensor(value) for name, value in model.init(seed=0).items()}
    x = torch.ones((1, 5, 3)).to(getattr(torch, dtype))
    with pytest.raises(TypeError, match=rf"^x: expected floating-point values .*got {dtype}"):
        model.apply(params, x)


def test_a_float64_torch_module_names_the_dtype_of_a_float32_input():
    """Issue 36: a float64 to_torch() module on float32 input raised "expected m1 and m2 to have the same dtype"."""
    torch = pytest.importorskip("torch")
    from product_interactions.interactions.architectures import attention
    module = attention(d_model=4, heads=2).to_torch(seed=0)
    with pytest.raises(TypeError, match=r"^x: expected torch.float64, the dtype of the module's parameters \(convert "
                                        r"the input, or the module with .to\(torch.float32\)\), got torch.float32"):
        module(torch.ones(1, 5, 4))
    assert module.to(torch.float32)(torch.ones(1, 5, 4)).dtype == torch.float32
