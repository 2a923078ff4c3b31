"""The associative prefix scan and tree reduction against a left-to-right fold (a non-commutative product)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from product_interactions.kernels.arrays import NUMPY
from product_interactions.kernels.arrays.prefix_scan import prefix_scan, tree_reduce


def matmul(a, b):
    """Elements are (matrices, offsets): an affine map pair, to exercise tuples of arrays."""
    return (a[0] @ b[0], a[1] @ b[0] + b[1])


def fold(element, axis):
    prefixes, current = [], None
    for t in range(element[0].shape[axis]):
        step = tuple(np.take(array, t, axis=axis) for array in element)
        current = step if current is None else matmul(current, step)
        prefixes.append(current)
    return tuple(np.stack(arrays, axis=axis) for arrays in zip(*prefixes))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.integers(1, 17), st.integers(0, 1), st.integers(0, 2**16))
def test_prefix_scan_and_tree_reduce_equal_the_sequential_fold(n, axis, seed):
    rng = np.random.default_rng(seed)
    shape = (n, 2) if axis == 0 else (2, n)
    element = (rng.standard_normal(shape + (3, 3)), rng.standard_normal(shape + (1, 3)))
    expected = fold(element, axis)
    for got, want in zip(prefix_scan(matmul, element, axis, engine=NUMPY), expected):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    for got, want in zip(tree_reduce(matmul, element, axis, engine=NUMPY), expected):
        np.testing.assert_allclose(got, np.take(want, n - 1, axis=axis), rtol=1e-10, atol=1e-10)


def test_elements_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="element"):
        prefix_scan(matmul, (np.ones((3, 2, 2)), np.ones((4, 1, 2))), engine=NUMPY)
