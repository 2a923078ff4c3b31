"""Kernels on every engine: torch and JAX give numpy's numbers and gradients, in their own library, dtype and
device; mixed and unknown libraries get a clear error."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from kernel_cases import builtin_algebras, operands, reference, relative_error, same_values, term_by_term, with_non_finite

from product_interactions import kernels

ALGEBRAS = builtin_algebras()
torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = jax.numpy


def _applicable(A):
    for name in ("auto",) + tuple(kernels.STRATEGIES):
        try:
            yield name, kernels.product(A, strategy=name)
        except ValueError:
            continue


@pytest.mark.parametrize("name", ALGEBRAS)
def test_every_strategy_gives_numpys_numbers_on_torch_and_jax(name):
    A = ALGEBRAS[name]
    x, y = operands(A, batch=(4,), seed=1)
    expected = reference(A, x, y)
    for strategy, kernel in _applicable(A):
        on_torch = kernel(torch.tensor(x), torch.tensor(y))
        on_jax = kernel(jnp.asarray(x), jnp.asarray(y))
        assert isinstance(on_torch, torch.Tensor) and on_torch.dtype == torch.float64
        assert isinstance(on_jax, jax.Array) and on_jax.dtype == jnp.float64
        assert relative_error(on_torch.numpy(), expected) <= 1e-12, strategy
        assert relative_error(np.asarray(on_jax), expected) <= 1e-12, strategy


@pytest.mark.parametrize("name", ["diagonal(3)", "translation(9)", "matrix_algebra(2)", "clebsch_gordan(2)",
                                  "translation(8) ⊗ translation(4)", "position(3) ⊗ quaternions"])
def test_values_that_are_not_finite_follow_the_rule_on_torch_and_under_jit(name):
    A = ALGEBRAS[name]
    x, y = with_non_finite(*operands(A, seed=5))
    expected = term_by_term(A, x, y)
    for strategy, kernel in _applicable(A):
        assert same_values(kernel(torch.tensor(x), torch.tensor(y)).numpy(), expected), strategy
        assert same_values(np.asarray(jax.jit(kernel)(jnp.asarray(x), jnp.asarray(y))), expected), strategy
        # operands captured by the traced function: concrete arrays, but what is made of them is traced (before, a
        # dense or fft call read its result there: TracerBoolConversionError)
        captured_x, captured_y = jnp.asarray(x), jnp.asarray(y)
        assert same_values(np.asarray(jax.jit(lambda: kernel(captured_x, captured_y))()), expected), strategy


@pytest.mark.parametrize("name, strategy", [("clebsch_gordan(2)", "dense"), ("translation(9)", "fft")])
def test_under_jit_the_primitive_checks_its_result_when_the_program_runs(name, strategy):
    """Under jax.jit the product (the JAX primitive's lowering, `Kernel.lowered`) checks dense's and fft's result
    in one conditional on its sum (`Engine.branch`), as an eager call reads it: a finite call runs the product
    alone (every call had run the marks' passes: 1.5-1.7x the time for quaternions, PGA and CG(2)), one that is
    not finite marks the outputs a non-finite entry reaches.  The operation-by-operation path (`Kernel.compute`
    traced: differentiated, vmapped or expanded by jet through its operations) marks on every call, as before."""
    A = ALGEBRAS[name]
    kernel = kernels.product(A, strategy=strategy)
    x, y = (jnp.asarray(a) for a in operands(A, seed=8))
    assert "stablehlo.case" in jax.jit(kernel).lower(x, y).as_text()
    assert "stablehlo.case" not in jax.jit(kernel.compute).lower(x, y).as_text()
    assert relative_error(np.asarray(jax.jit(kernel)(x, y)), reference(A, *operands(A, seed=8))) <= 1e-12
    bad_x, bad_y = with_non_finite(*operands(A, seed=8))
    expected = term_by_term(A, bad_x, bad_y)
    assert same_values(np.asarray(jax.jit(kernel)(jnp.asarray(bad_x), jnp.asarray(bad_y))), expected)
    assert same_values(np.asarray(jax.jit(jax.vmap(kernel))(jnp.stack([x, jnp.asarray(bad_x)]),
                                                         jnp.stack([y, jnp.asarray(bad_y)]))[1]), expected)
    gradient = jax.jit(jax.grad(lambda a: kernel(a, y).sum()))(x)
    assert relative_error(np.asarray(gradient), np.asarray(jax.grad(lambda a: kernel(a, y).sum())(x))) <= 1e-12


def test_a_weakly_typed_operand_gives_way_to_the_other_under_jit():
    """A Python scalar's type (weak) beside float16 gives float16, in the primitive's type as in its program (the
    primitive had typed it float64, and jit refused the program: "doesn't match function result type")."""
    kernel = kernels.product(ALGEBRAS["clebsch_gordan(2)"], strategy="dense")
    z = jax.jit(kernel)(jnp.full((9,), 1.0), jnp.ones(9, jnp.float16))
    assert z.dtype == jnp.float16 and relative_error(np.asarray(z, np.float64), kernel(np.ones(9), np.ones(9))) < 1e-3


@pytest.mark.parametrize("name", ["diagonal(3)", "translation(9)", "matrix_algebra(2)", "clebsch_gordan(2)",
                                  "translation(8) ⊗ translation(4)", "position(3) ⊗ quaternions"])
@pytest.mark.parametrize("strategy", ["dense", "fft"])
def test_on_a_gpu_a_product_that_meets_zeros_marks_non_finite_outputs_without_a_read(name, strategy, monkeypatch):
    """Under CUDA's rates (where a read waits for the device) dense and fft zero the non-finite entries and give NaN
    to the outputs those have a term in: the rule's finite values and non-finite places, read-free."""
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.rates import CUDA_RATES
    A = ALGEBRAS[name]
    try:
        kernel = kernels.product(A, strategy=strategy)
    except ValueError:
        pytest.skip(f"{strategy} does not represent {name}")
    x, y = with_non_finite(*operands(A, seed=6))
    monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)
    monkeypatch.setattr(torch.Tensor, "__bool__", lambda self: pytest.fail("a number was read back"))
    z = kernel(torch.tensor(x), torch.tensor(y))
    assert same_values(z.numpy(), term_by_term(A, x, y))
    assert np.isnan(z.numpy()[~np.isfinite(term_by_term(A, x, y))]).all()
    finite = kernel(torch.tensor(operands(A, seed=7)[0]), torch.tensor(operands(A, seed=7)[1]))
    assert relative_error(finite.numpy(), reference(A, *operands(A, seed=7))) <= 1e-12


@pytest.mark.parametrize("name", ["quaternions", "translation(9)", "tensor_algebra(2, 2)", "clebsch_gordan(2)",
                                  "position(3) ⊗ quaternions"])
def test_gradients_agree_across_engines(name):
    A = ALGEBRAS[name]
    x, y = operands(A, batch=(3,), seed=2)
    weights = np.random.default_rng(3).standard_normal(x.shape)
    for strategy, kernel in _applicable(A):
        expected = autograd.grad(lambda a: anp.sum(anp.tanh(kernel(a, y)) * weights))(x)
        xt = torch.tensor(x, requires_grad=True)
        (torch.tanh(kernel(xt, torch.tensor(y))) * torch.tensor(weights)).sum().backward()
        on_jax = jax.jit(jax.grad(lambda a: jnp.sum(jnp.tanh(kernel(a, jnp.asarray(y))) * weights)))(jnp.asarray(x))
        assert relative_error(xt.grad.numpy(), expected) <= 1e-10, strategy
        assert relative_error(np.asarray(on_jax), expected) <= 1e-10, strategy


def test_float32_and_a_numpy_operand_follow_the_foreign_array():
    A = ALGEBRAS["clifford(3, 0, 1)"]
    x, y = operands(A, batch=(2,))
    z = kernels.product(A)(torch.tensor(x, dtype=torch.float32), y)           # y is numpy: converted
    assert z.dtype == torch.float32 and relative_error(z.numpy(), reference(A, x, y)) <= 1e-5


def test_mixed_and_unknown_libraries_are_refused_by_name():
    kernel = kernels.product(ALGEBRAS["quaternions"])
    with pytest.raises(TypeError, match=r"x, y: expected arrays of one library .*torch \(x\) and jax \(y\)"):
        kernel(torch.ones(4, dtype=torch.float64), jnp.ones(4))

    class Foreign:
        shape, dtype = (4,), np.dtype(float)
    Foreign.__module__ = "somelibrary"
    with pytest.raises(TypeError, match="x"):
        kernel(Foreign(), np.ones(4))


def test_each_new_signature_of_engine_operands_is_checked_and_the_memory_limit_read_at_every_call(monkeypatch):
    A = ALGEBRAS["quaternions"]
    kernel = kernels.product(A)
    x, y = operands(A, batch=(3,), seed=4)
    assert relative_error(kernel(torch.tensor(x), torch.tensor(y)).numpy(), reference(A, x, y)) <= 1e-12
    with pytest.raises(ValueError, match=r"x: axis -1 has size 5, but quaternions needs 4"):
        kernel(torch.ones(3, 5, dtype=torch.float64), torch.tensor(y))
    with pytest.raises(TypeError, match="y: expected real floating-point values"):
        kernel(torch.tensor(x), torch.ones(3, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"x, y: batch axes \(2,\) and \(3,\) do not broadcast"):
        kernel(torch.tensor(x[:2]), torch.tensor(y))
    with pytest.raises(ValueError, match="expected arrays on one device, got cpu \\(x\\) and meta \\(y\\)"):
        kernel(torch.tensor(x), torch.tensor(y, device="meta"))
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", 1)                     # the same signature, a new limit: refused
    with pytest.raises(kernels.MemoryLimitError):
        kernel(torch.tensor(x), torch.tensor(y))


def test_a_kernel_keeps_one_call_per_engine_for_operands_of_one_shape_and_dtype():
    """numpy and JAX arrays of one shape and dtype have no device to tell them apart: the call kept for numpy's (the
    compiled loop) was taken for JAX's, which it refused ("strategy 'compiled' runs on numpy arrays ...")."""
    from product_interactions.algebra import clifford
    kernel = kernels.product(clifford(3, 0, 1))
    x = np.random.default_rng(0).standard_normal((4, 5, 16)).astype(np.float32)
    expected = kernel(x, x)
    np.testing.assert_allclose(np.asarray(kernel(jnp.asarray(x), jnp.asarray(x))), expected, rtol=1e-5, atol=1e-5)
