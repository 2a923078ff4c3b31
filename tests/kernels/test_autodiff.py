"""autograd gradients through every strategy equal finite differences."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from kernel_cases import numeric_gradient, relative_error

from product_interactions import kernels
from product_interactions.algebra import clifford, diagonal, position, quaternions, tensor_product, translation
from product_interactions.algebra import tensor_algebra

CASES = [(diagonal(3), "identify"), (translation(9), "gather"), (translation(9), "fft"),
         (translation(5, cyclic=False), "gather"), (clifford(3, 0, 1), "codegen"), (quaternions(), "dense"),
         (tensor_algebra(2, 2), "graded"), (tensor_product(position(2), quaternions()), "auto"),
         (tensor_product(translation(3), clifford(1)), ("gather", "dense"))]


@pytest.mark.parametrize("A, strategy", CASES, ids=[f"{A.name}-{s}" for A, s in CASES])
def test_gradients_equal_finite_differences(A, strategy):
    kernel = kernels.product(A, strategy=strategy)
    rng = np.random.default_rng(A.dim)
    x = rng.standard_normal((3, *A.shape))
    y = rng.standard_normal((1, *A.shape))                 # broadcast over the batch: its gradient is summed
    weights = rng.standard_normal((3, *A.shape))

    def loss(x, y):
        return anp.sum(anp.tanh(kernel(x, y)) * weights)

    gradients = autograd.grad(loss, (0, 1))(x, y)
    for index, gradient in enumerate(gradients):
        assert gradient.shape == (x, y)[index].shape
        assert relative_error(gradient, numeric_gradient(loss, (x, y), index)) < 1e-7


def test_index_gather_gradient():
    kernel = kernels.product(translation(6), strategy="gather")
    x, y = np.random.default_rng(1).standard_normal((2, 6))
    loss = lambda x, y: anp.sum(kernel(x, y) ** 2)      # noqa: E731
    assert relative_error(autograd.grad(loss)(x, y), numeric_gradient(loss, (x, y), 0)) < 1e-7


def test_second_derivatives_flow_through_the_transposed_kernels():
    kernel = kernels.product(clifford(2))
    rng = np.random.default_rng(2)
    x, y, v = rng.standard_normal((3, 4))
    loss = lambda x: anp.sum(kernel(x, kernel(x, y)) * v)    # noqa: E731   quadratic in x
    hessian_vector = autograd.grad(lambda x: anp.sum(autograd.grad(loss)(x) * v))(x)
    expected = numeric_gradient(lambda x: np.sum(autograd.grad(loss)(x) * v), (x,), 0)
    assert relative_error(hessian_vector, expected) < 1e-7


def test_the_vjp_kernels_permute_the_roles_of_lam():
    kernel = kernels.product(translation(8, cyclic=False))
    lam = translation(8, cyclic=False).structure_constants()
    assert np.array_equal(kernel.transposed(0).factors[0].dense(float), lam.transpose(1, 2, 0))
    assert np.array_equal(kernel.transposed(1).factors[0].dense(float), lam.transpose(0, 2, 1))
    assert kernels.product(translation(9)).transposed(0).factors[0].cyclic_signs() == (-1, 1)


def test_component_major_layout_is_differentiable():
    A = tensor_product(position(2), quaternions())
    kernel = kernels.product(A, layout="component-major")
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, *A.shape, 3))
    loss = lambda x: anp.sum(kernel(x, y) ** 2)    # noqa: E731
    assert relative_error(autograd.grad(loss)(x), numeric_gradient(loss, (x,), 0)) < 1e-7
