"""Bad input: clear errors that name the argument, never a silent broadcast over algebra axes."""
import re

import numpy as np
import pytest
import sympy

from product_interactions import kernels
from product_interactions.algebra import clifford, complex_numbers, diagonal, position, quaternions, tensor_product


@pytest.fixture
def quaternion_kernel():
    return kernels.product(quaternions())


def test_trailing_axes_must_match_the_algebra(quaternion_kernel):
    with pytest.raises(ValueError, match=r"y: axis -1 has size 3, but quaternions needs 4 there"):
        quaternion_kernel(np.ones((2, 4)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"x: axis -1 has size 1, but quaternions needs 4"):   # no broadcasting
        quaternion_kernel(np.ones((2, 1)), np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"x: expected at least 1 axes"):
        quaternion_kernel(np.float64(1.0), np.ones(4))
    product = kernels.product(tensor_product(position(3), diagonal(2)))
    with pytest.raises(ValueError, match=r"x: axis -2 has size 2, but position\(3\) ⊗ diagonal\(2\) needs 3"):
        product(np.ones((2, 3)), np.ones((3, 2)))
    component_major = kernels.product(quaternions(), layout="component-major")
    with pytest.raises(ValueError, match=r"x: axis 0 has size 5, .*expected shape \(4, \.\.\.\)"):
        component_major(np.ones((5, 4)), np.ones((4, 5)))


def test_batch_axes_must_broadcast(quaternion_kernel):
    with pytest.raises(ValueError, match=r"x, y: batch axes \(2,\) and \(3,\) do not broadcast"):
        quaternion_kernel(np.ones((2, 4)), np.ones((3, 4)))


@pytest.mark.parametrize("bad", [np.ones(4, dtype=int), np.ones(4, dtype=bool), np.ones(4, dtype=complex),
                                 np.array([1, 2, 3, "4"], dtype=object), "abcd"])
def test_integer_complex_and_other_values_are_refused(quaternion_kernel, bad):
    with pytest.raises(TypeError, match="x: expected real floating-point values"):
        quaternion_kernel(bad, np.ones(4))


@pytest.mark.parametrize("library, how", [("torch", "x.float() or x.double()"), ("jax", "x.astype(jnp.float32)")])
def test_torch_and_jax_integers_are_refused_with_their_library_s_conversion(quaternion_kernel, library, how):
    module = pytest.importorskip(library if library == "torch" else "jax.numpy")
    bad = module.ones(4, dtype=module.int32)
    computes = "torch computes in the tensors' dtype" if library == "torch" else "JAX computes in the arrays' dtype"
    with pytest.raises(TypeError, match=re.escape(f"x: expected real floating-point values ({computes}), got ")):
        quaternion_kernel(bad, module.ones(4))
    with pytest.raises(TypeError, match=re.escape(f"; convert explicitly, e.g. {how}")):
        quaternion_kernel(bad, module.ones(4))


@pytest.mark.parametrize("argument", [-1, 2, "x", 1.0, True])
def test_a_transposed_kernel_is_asked_for_by_0_or_1(quaternion_kernel, argument):
    with pytest.raises(ValueError, match=re.escape(f"argument: expected 0 (x) or 1 (y), got {argument!r}")):
        quaternion_kernel.transposed(argument)
    assert quaternion_kernel.transposed(1).shapes == ((4,), (4,), (4,))


def test_float_inputs_are_computed_in_the_kernel_dtype():
    z = kernels.product(quaternions(), dtype=np.float32)(np.ones(4), np.ones(4, dtype=np.float32))
    assert z.dtype == np.float32


def test_elements_of_another_algebra_are_refused(quaternion_kernel):
    H, C = quaternions(), complex_numbers()
    assert np.array_equal(quaternion_kernel(H.basis_element("i"), H.basis_element("j")), [0, 0, 0, 1])
    with pytest.raises(ValueError, match="y: expected an element of quaternions, got one of complex_numbers"):
        quaternion_kernel(H.basis_element("i"), C.basis_element("i"))
    with pytest.raises(TypeError, match="needs a kernel built by kernels.product"):
        kernels.bilinear(H.structure_constants())(H.basis_element("i"), np.ones(4))


def test_strategies_that_cannot_represent_the_algebra_are_refused():
    with pytest.raises(ValueError, match=r"strategy: 'identify' cannot represent factor 0: lam\[0, 1, 1\] = 1 in "
                                         r"quaternions"):
        kernels.product(quaternions(), strategy="identify")
    crowded = np.zeros((2, 2, 2))
    crowded[0, 1] = [1, 2]
    with pytest.raises(ValueError, match=r"'gather' cannot represent factor 0: e_0 e_1 has 2 nonzero coefficients"):
        kernels.bilinear(crowded, strategy="gather")
    with pytest.raises(ValueError, match="strategy: expected 'auto' or one of"):
        kernels.product(quaternions(), strategy="fast")
    with pytest.raises(ValueError, match=r"strategy: expected one entry per factor \(2\)"):
        kernels.product(tensor_product(position(2), clifford(1)), strategy=("auto",))
    with pytest.raises(ValueError, match="'identify' cannot represent factor 1"):
        kernels.product(tensor_product(position(2), clifford(1)), strategy=("identify", "identify"))


def test_construction_arguments_are_checked():
    with pytest.raises(TypeError, match="A: expected an algebra.Algebra, got ndarray"):
        kernels.product(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="dtype: expected numpy.float32 or numpy.float64, got int64"):
        kernels.product(quaternions(), dtype=np.int64)
    with pytest.raises(ValueError, match="layout: expected one of 'batch-first', 'component-major'"):
        kernels.product(quaternions(), layout="rows")
    with pytest.raises(ValueError, match=r"lam: expected a \(d1, d2, d3\) array with positive sizes, got shape \(2, "):
        kernels.bilinear(np.ones((2, 2)))
    with pytest.raises(ValueError, match="lam: expected a .* ragged"):
        kernels.bilinear([[[1, 2]], [[1]]])
    with pytest.raises(TypeError, match="lam: expected real numbers"):
        kernels.bilinear(np.ones((2, 2, 2), dtype=complex))
    with pytest.raises(ValueError, match="lam: expected finite numbers"):
        kernels.bilinear(np.full((1, 1, 1), np.inf))
    with pytest.raises(TypeError, match=r"lam\[0, 0, 0\]: expected a number, got Symbol a"):
        kernels.bilinear(np.array([[[sympy.Symbol("a")]]], dtype=object))
    with pytest.raises(ValueError, match="lam: expected at least one"):
        kernels.bilinear()


def test_symbolic_algebras_are_refused_with_the_coefficient_named():
    from product_interactions.algebra import Algebra
    a = sympy.Symbol("a", real=True)
    A = Algebra.from_structure_constants({(0, 0): {0: a}}, dim=1, name="symbolic")
    with pytest.raises(TypeError, match=r"symbolic: lam\[0, 0, 0\]: expected a number, got Symbol a"):
        kernels.product(A)


@pytest.mark.parametrize("make, words", [
    (lambda torch: torch.ones(3, 4, device="meta"), "a meta tensor, which has a shape but no values"),
    (lambda torch: torch.ones(3, 4, dtype=torch.float64).to_sparse(), "a tensor of layout torch.sparse_coo (convert "
                                                                        "it with .to_dense())"),
])
def test_meta_and_sparse_torch_operands_are_refused_by_name(make, words):
    """Issue 36: torch internals escaped ("Tensor.item() cannot be called on meta tensors", "Cannot access data
    pointer") from products, attention and the ssm."""
    torch = pytest.importorskip("torch")
    from product_interactions import kernels
    from product_interactions.algebra import quaternions
    from product_interactions.interactions.architectures import attention, ssm
    bad, good = make(torch), torch.ones(3, 4, dtype=torch.float64)
    product = kernels.product(quaternions())
    product(good, good)                                   # a dense signature first: the bad one is checked anew
    calls = [lambda: product(bad, make(torch))] + ([lambda: product(good, bad)] if "layout" in words else [])
    for call in calls:                    # (a meta y beside a CPU x is refused as on another device)
        with pytest.raises(TypeError, match=rf"^[xy]: expected a dense torch array with values, got {re.escape(words)}"):
            call()
    for model in (attention(d_model=4, heads=2), ssm(channels=4, d_state=2)):
        params = {name: torch.tensor(value) for name, value in model.init(seed=0).items()}
        with pytest.raises(TypeError, match=rf"^x: expected a dense torch array with values, got {re.escape(words)}"):
            model.apply(params, make(torch)[None])
