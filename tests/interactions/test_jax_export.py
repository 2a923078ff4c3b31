"""`jax.export` with a symbolic batch ("b, ..."): the library follows it, deciding at
`example_sizes.JAX_EXAMPLE_SIZE` (JAX's symbols have no example value), and the exported program equals the eager
call at batches other than any it was decided for.  Before, every export failed inside the library
(InconclusiveDimensionOperation, or "'_DimExpr' object cannot be interpreted as an integer").  A symbol on any
other axis (a length, a number of points) is refused, naming the argument: the library builds its plans, constants
and scans per length, so the program would hold one length's."""
from __future__ import annotations

import numpy as np
import pytest
from module_cases import MODELS, applicable_kernels

from product_interactions import kernels
from product_interactions.algebra import (clebsch_gordan, diagonal, position, quaternions, tensor_algebra,
                                          tensor_product, translation)
from product_interactions.interactions import Linear, Parameter, Signal, compiler
from product_interactions.interactions.feature_map import seq2tens, signature
from product_interactions.kernels.arrays import example_sizes

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax import export  # noqa: E402

IDS = [type(m).__name__ for m, _ in MODELS]


@pytest.fixture(autouse=True)
def float64():
    with jax.enable_x64(True):
        yield


def exported(function, arguments, spec="b, ..."):
    """`function` exported with `spec` on every argument of two or more axes (the others fixed)."""
    specs = export.symbolic_args_specs(arguments, tuple(spec if np.ndim(a) > 1 else "..." for a in arguments))
    return export.export(jax.jit(function))(*specs)


def batches(arguments):
    """The arguments at batch 1, at the example's and at one beyond it (arrays of one axis kept whole)."""
    def resized(rows):
        return tuple(np.concatenate([a] * 4)[:rows] if np.ndim(a) > 1 else a for a in arguments)
    return [resized(1), arguments, resized(len(arguments[0]) + 3)]


def assert_same(got, expected, message=""):
    got, expected = np.asarray(got), np.asarray(expected)
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(got), finite), message
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-12, err_msg=message)


@pytest.mark.parametrize("case", range(len(MODELS)), ids=IDS)
def test_every_architecture_exports_with_a_symbolic_batch(case):
    model, inputs = MODELS[case]
    params = {name: jnp.asarray(p) for name, p in model.init(seed=0).items()}
    program = exported(lambda *arrays: model.apply(params, *arrays), inputs)
    assert str(program.in_avals[0].shape[0]) == "b"
    for given in batches(inputs):
        assert_same(program.call(*given), model.apply(params, *given))


@pytest.mark.parametrize("algebra", [quaternions(), clebsch_gordan(1), tensor_algebra(2, 2), translation(8)],
                         ids=["quaternions", "cg1", "T(V)", "translation"])
def test_every_strategy_of_a_kernel_exports_with_a_symbolic_batch(algebra):
    """Two batch axes, a symbol on each, and a non-finite operand (the rule for them, with no read)."""
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((6, 2, algebra.dim)) for _ in range(2))
    y[0, 0, 0] = np.inf
    checked = 0
    for name, kernel in applicable_kernels(algebra):
        program = exported(kernel, (x, y), "b, c, ...")
        for given in batches((x, y)) + [(x[:, :1], y[:, :1])]:
            with np.errstate(invalid="ignore"):
                assert_same(program.call(*given), kernel(*given), name)
        checked += 1
    assert checked >= 4


def test_a_symbolic_batch_is_computed_whole_under_a_memory_limit_that_cuts_its_example(monkeypatch):
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", 2_000)
    kernel = kernels.product(clebsch_gordan(1), strategy="dense")
    x = np.random.default_rng(4).standard_normal((64, 4))
    program = exported(kernel, (x, x))
    larger = np.concatenate([x] * 40)                   # beyond JAX_EXAMPLE_SIZE rows
    assert len(larger) > example_sizes.JAX_EXAMPLE_SIZE
    assert_same(program.call(larger, larger), kernel(larger, larger))


def test_the_functional_entry_points_export_with_a_symbolic_batch():
    rng = np.random.default_rng(2)
    u, A = rng.standard_normal((2, 10, 3)), -np.ones((3, 2))
    cases = {"selective_scan": (lambda u, d, B, C: kernels.selective_scan(u, d, A, B, C),
                                (u, np.abs(u), rng.standard_normal((2, 10, 2)), rng.standard_normal((2, 10, 2)))),
             "linear_scan": (lambda a, b: kernels.linear_scan(jnp.swapaxes(a, 0, 1), jnp.swapaxes(b, 0, 1)),
                             (rng.uniform(size=(2, 10, 3)), u)),                # time-first: the batch on axis 1
             "causal_convolution": (kernels.causal_convolution, (rng.standard_normal((2, 3, 10)),
                                                                 rng.standard_normal(10))),
             "masked softmax": (lambda s, m, n: kernels.softmax(s, axis=-1, mask=m) + kernels.softmax(s, mask=n),
                                (rng.standard_normal((4, 6)), rng.standard_normal((4, 6)) > 0, np.arange(6) % 3 > 0)),
             "signature with a mask": (lambda x, m: signature(x, 3, mask=m),
                                       (u, np.array([[1] * 10, [1] * 4 + [0] * 6]))),
             "seq2tens": (lambda x: seq2tens(x, 2)[2], (u,))}
    for name, (function, arguments) in cases.items():
        program = exported(function, arguments)
        for given in batches(arguments):
            assert_same(program.call(*given), function(*given), name)


def test_a_symbolic_length_is_refused_by_name():
    model, (sequence,) = MODELS[0]
    params = {name: jnp.asarray(p) for name, p in model.init(seed=0).items()}
    with pytest.raises(ValueError, match=r"^x: a symbolic size \(l\) on axis 1 of shape \(b, l, 4\); the library "
                                         r"follows jax.export's symbolic batch \(axis 0\) only"):
        exported(lambda x: model.apply(params, x), (sequence,), "b, l, ...")
    a = np.random.default_rng(3).uniform(size=(10, 2, 3))
    with pytest.raises(ValueError, match=r"^a: a symbolic size \(t\) on axis 0 .* \(axis 1\) only"):
        exported(kernels.linear_scan, (a, a), "t, ...")             # time-first: the time is no batch
    X = Signal("x", tensor_product(position(5), diagonal(3)))
    plan = compiler.compile(Linear(Parameter("W", (3, 3)), X, factor=1))
    with pytest.raises(ValueError, match=r"^inputs\['x'\]: a symbolic size \(l\) for dim .* export with it fixed"):
        exported(lambda x: plan(x, {"W": np.eye(3)}), (sequence[..., :3],), "b, l, ...")


def test_a_product_kernel_takes_a_symbol_on_any_leading_axis():
    kernel = kernels.product(quaternions())
    x = np.random.default_rng(5).standard_normal((3, 5, 4))
    program = exported(kernel, (x, x), "b, l, ...")
    assert_same(program.call(x[:, :2], x[:, :2]), kernel(x[:, :2], x[:, :2]))


def test_jax_symbols_are_decided_at_the_example_size_and_broadcast_by_jax():
    b, n = export.symbolic_shape("b, n")
    assert example_sizes.jax_symbol(b) and example_sizes.jax_symbol(2 * b) and not example_sizes.jax_symbol(2)
    assert example_sizes.example_shape((b, 3, 2 * n)) == (example_sizes.JAX_EXAMPLE_SIZE, 3,
                                                          example_sizes.JAX_EXAMPLE_SIZE)
    assert example_sizes.broadcast_shapes((b, 1), (1, 3)) == (b, 3)
    with pytest.raises(ValueError):
        example_sizes.broadcast_shapes((b, 2), (b, 3))
