"""A product on traced JAX arrays is one primitive whose derivatives are products (`kernels.products.jax_primitive`):
values and derivatives of every order against autograd's (numpy's kernels with kernel VJPs), vmap against a loop,
broadcast operands' gradients summed back in their own dtype, and a gradient whose program does not grow with the
algebra's terms (differentiated operation by operation, Clebsch-Gordan lmax 6 compiled for 184 s)."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, clifford, quaternions

jax = pytest.importorskip("jax")           # in float64: tests/conftest.py
jnp = jax.numpy

PRIMITIVE = "product_interactions_product"


def operands(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def equations(function, *arguments):
    return [e.primitive.name for e in jax.make_jaxpr(function)(*arguments).jaxpr.eqns]


@pytest.mark.parametrize("algebra", [quaternions(), clifford(3, 0, 1), clebsch_gordan(2)], ids=str)
def test_gradients_under_jit_equal_autograds_and_are_products(algebra):
    kernel, d = kernels.product(algebra), algebra.dim
    x, y, w = operands([(6, d), (1, d), (6, d)])          # y broadcast over x's rows: its gradient summed back

    def loss(a, b, np_=anp):
        return np_.sum(np_.tanh(kernel(a, b)) * w)
    expected = autograd.grad(loss, argnum=(0, 1))(x, y)
    traced = jax.jit(jax.grad(lambda a, b: loss(a, b, jnp), argnums=(0, 1)))
    found = traced(jnp.asarray(x), jnp.asarray(y))
    for a, b in zip(found, expected):
        assert a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12, atol=1e-12)
    program = equations(jax.grad(lambda a, b: loss(a, b, jnp), argnums=(0, 1)), x, y)
    assert program.count(PRIMITIVE) == 3                  # the product and the two VJPs' products


def test_derivatives_of_every_order_forward_and_reverse():
    """jax.hessian is forward mode over reverse mode: the tangent of a VJP's product is a product again."""
    kernel = kernels.product(clebsch_gordan(1))
    x, y = operands([(4,), (4,)], seed=1)
    cube = lambda a: (kernel(a, jnp.asarray(y)) ** 3).sum()  # noqa: E731
    expected = autograd.hessian(lambda a: anp.sum(kernel(a, y) ** 3))(x)
    np.testing.assert_allclose(np.asarray(jax.hessian(cube)(jnp.asarray(x))), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.jacfwd(jax.jacfwd(cube))(jnp.asarray(x))), expected, rtol=1e-12,
                               atol=1e-12)
    _, tangent = jax.jvp(lambda a, b: kernel(a, b), (jnp.asarray(x), jnp.asarray(y)), (jnp.asarray(y),
                                                                                       jnp.asarray(x)))
    np.testing.assert_allclose(np.asarray(tangent), kernel(y, y) + kernel(x, x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("in_axes, shapes", [
    ((0, None), [(7, 4), (3, 5, 4)]),        # the mapped operand has fewer batch axes than the other
    ((None, 1), [(3, 5, 4), (4, 7)]),
    ((1, 0), [(5, 7, 4), (7, 5, 4)]),
])
def test_vmap_maps_a_batch_axis_as_a_loop_would(in_axes, shapes):
    kernel = kernels.product(quaternions())
    x, y = operands(shapes, seed=2)
    found = jax.vmap(kernel, in_axes=in_axes)(jnp.asarray(x), jnp.asarray(y))
    size = next(np.shape(a)[axis] for a, axis in zip((x, y), in_axes) if axis is not None)
    pick = [(lambda a, n: a) if axis is None else (lambda a, n, axis=axis: np.take(a, n, axis=axis))
            for axis in in_axes]
    expected = np.stack([kernel(pick[0](x, n), pick[1](y, n)) for n in range(size)])
    np.testing.assert_allclose(np.asarray(found), expected, rtol=1e-13, atol=1e-13)
    program = equations(jax.grad(lambda a, b: jax.vmap(kernel, in_axes=in_axes)(a, b).sum()), x, y)
    assert program.count(PRIMITIVE) == 2


def test_gradients_keep_each_operands_dtype():
    kernel = kernels.product(quaternions())
    x, y = (jnp.asarray(a, dtype) for a, dtype in zip(operands([(3, 4), (4,)], seed=3), (jnp.float32, jnp.float64)))
    gx, gy = jax.jit(jax.grad(lambda a, b: kernel(a, b).sum(), argnums=(0, 1)))(x, y)
    assert (gx.dtype, gy.dtype, gx.shape, gy.shape) == (jnp.float32, jnp.float64, (3, 4), (4,))
    expected = autograd.grad(lambda a: anp.sum(kernel(a, np.asarray(y))))(np.asarray(x, np.float64))
    np.testing.assert_allclose(np.asarray(gx), expected, rtol=1e-6)


def test_the_gradients_program_does_not_grow_with_the_terms():
    """Clebsch-Gordan lmax 3 (611 terms) against lmax 1 (11 terms): the traced gradient is three products; each
    is lowered to its own program when XLA's is built."""
    sizes = []
    for lmax in (1, 3):
        kernel = kernels.product(clebsch_gordan(lmax), strategy="codegen")
        x = jnp.ones((8, (lmax + 1) ** 2))
        sizes.append(len(equations(jax.grad(lambda a: (kernel(a, a) ** 2).sum()), x)))
    assert sizes[0] == sizes[1] < 20


def test_other_calls_run_operation_by_operation_with_the_same_derivatives():
    """A component-major kernel and a numpy operand beside a traced one: the program traced as before."""
    algebra = quaternions()
    x, y = operands([(4, 6), (4, 6)], seed=4)
    component_major = kernels.product(algebra, layout="component-major")
    assert PRIMITIVE not in equations(component_major, x, y)
    found = jax.grad(lambda a: component_major(a, jnp.asarray(y)).sum())(jnp.asarray(x))
    expected = autograd.grad(lambda a: anp.sum(component_major(a, y)))(x)
    np.testing.assert_allclose(np.asarray(found), expected, rtol=1e-13)
    kernel = kernels.product(algebra)
    assert PRIMITIVE not in equations(lambda a: kernel(a, y.T), x.T)
    found = jax.grad(lambda a: kernel(a, y.T).sum())(jnp.asarray(x.T))
    np.testing.assert_allclose(np.asarray(found), autograd.grad(lambda a: anp.sum(kernel(a, y.T)))(x.T), rtol=1e-13)


def test_bad_operands_are_refused_when_traced_as_eagerly():
    kernel = kernels.product(quaternions())
    with pytest.raises(ValueError, match=r"y: axis -1 has size 3, but quaternions needs 4 there"):
        jax.jit(kernel)(jnp.ones((2, 4)), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"x, y: batch axes \(2,\) and \(3,\) do not broadcast"):
        jax.grad(lambda a: kernel(a, jnp.ones((3, 4))).sum())(jnp.ones((2, 4)))


def test_a_vjps_kernel_chooses_per_call_where_its_kernel_does():
    kernel, named = kernels.product(clebsch_gordan(2)), kernels.product(clebsch_gordan(2), strategy="dense")
    assert [kernel.transposed(a).requested for a in (0, 1)] == ["auto", "auto"]
    assert [named.transposed(a).strategies for a in (0, 1)] == [("dense",), ("dense",)]


def test_a_dropped_kernel_is_freed_whatever_jax_keeps():
    """The program names its kernel by key: JAX's caches of traced programs (kept while the traced function
    lives, or for good for an eager loop's body) held the kernel itself, and 1.5 MiB with it (CG lmax 3)."""
    import gc
    import weakref
    kernel = kernels.product(clebsch_gordan(2))
    x = jnp.ones((3, 9))
    jax.jit(kernel)(x, x)
    jax.make_jaxpr(kernel)(x, x)
    jax.lax.fori_loop(0, 2, lambda n, a: kernel(a, x), x)
    jax.jit(jax.grad(lambda a: kernel(a, a).sum()))(x)
    dropped = weakref.ref(kernel)
    del kernel
    gc.collect()
    assert dropped() is None


def test_sharded_operands_keep_their_types_and_derivatives():
    """Inside ``jax.shard_map`` an operand's type says which mesh axes it varies over; the primitive's would not
    (its gradient had failed: "Expected cotangent type float32[2,4]{V:i} but got float32[2,4]"), so such calls run
    operation by operation."""
    from jax.sharding import PartitionSpec
    kernel = kernels.product(quaternions())
    x, y = operands([(4, 4), (4, 4)], seed=5)
    mesh = jax.make_mesh((1,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
    mapped = jax.shard_map(kernel, mesh=mesh, in_specs=(PartitionSpec("i"), PartitionSpec("i")),
                           out_specs=PartitionSpec("i"))
    found = jax.jit(jax.grad(lambda a: (mapped(a, jnp.asarray(y)) ** 2).sum()))(jnp.asarray(x))
    expected = autograd.grad(lambda a: anp.sum(kernel(a, y) ** 2))(x)
    np.testing.assert_allclose(np.asarray(found), expected, rtol=1e-13)


def test_taylor_series_by_jet():
    from jax.experimental import jet
    kernel = kernels.product(quaternions())
    x, y, v = operands([(4,), (4,), (4,)], seed=6)
    primal, (first, second) = jet.jet(lambda a: kernel(a, jnp.asarray(y)), (jnp.asarray(x),),
                                      ((jnp.asarray(v), jnp.zeros(4)),))
    np.testing.assert_allclose(np.asarray(primal), kernel(x, y), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(first), kernel(v, y), rtol=1e-13)       # linear in x: no second term
    np.testing.assert_allclose(np.asarray(second), np.zeros(4), atol=1e-13)


def test_a_program_re_evaluated_under_a_strict_promotion_types_its_products_alike():
    """The primitive's type follows JAX's default promotion, as its program does, whatever the caller's: a
    rematerialised backward pass re-evaluates the product outside the call, and under a strict promotion its
    float32 x float64 type had failed (TypePromotionError)."""
    kernel = kernels.product(quaternions())
    x, y = jnp.ones((3, 4), jnp.float32), jnp.ones(4, jnp.float64)
    program = jax.make_jaxpr(lambda a: kernel(a, y))(x)
    with jax.numpy_dtype_promotion("strict"):
        gradient = jax.jit(jax.grad(jax.checkpoint(lambda a: (kernel(a, y) ** 2).sum())))(x)
        again = jax.jit(lambda a: jax.core.eval_jaxpr(program.jaxpr, program.consts, a)[0])(x)
    assert gradient.dtype == jnp.float32 and again.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(gradient), autograd.grad(
        lambda a: anp.sum(kernel(a, np.ones(4)) ** 2))(np.ones((3, 4))), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(again), kernel(np.ones((3, 4)), np.ones(4)), rtol=1e-12)


def test_a_program_that_outlives_its_kernel_builds_it_again():
    """A kernel made inside a differentiated function is dropped before the backward pass runs; the pull-back had
    found no kernel of its key ("a compiled program outlived its kernel")."""
    import gc
    x, y = operands([(3, 4), (3, 4)], seed=7)
    _, pull_back = jax.vjp(lambda a: kernels.product(quaternions())(a, jnp.asarray(y)), jnp.asarray(x))
    gc.collect()
    (found,) = pull_back(jnp.ones((3, 4)))
    kernel = kernels.product(quaternions())
    np.testing.assert_allclose(np.asarray(found), autograd.grad(lambda a: anp.sum(kernel(a, y)))(x), rtol=1e-13)
