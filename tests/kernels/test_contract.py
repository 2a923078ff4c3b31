"""kernels.arrays.contract: batched-matmul evaluation of einsum equations equals numpy's einsum."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions.kernels.arrays import NUMPY
from product_interactions.kernels.arrays.contract import contract as contract_on


def contract(equation, *arrays):
    return contract_on(equation, *arrays, engine=NUMPY)


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bkhe,blhe->bhkl", [(2, 5, 3, 4), (2, 6, 3, 4)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("ab,bc->", [(3, 4), (4, 2)]),
    ("ii->i", [(3, 3)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("abc,c->ab", [(2, 3, 4), (4,)]),
    ("ab,cd->abcd", [(2, 3), (4, 5)]),
    ("abx,bcx->ac", [(2, 3, 4), (3, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("kl,bkd,bld->bk", [(4, 4), (2, 4, 3), (2, 4, 3)]),
])
def test_contract_equals_einsum(equation, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    np.testing.assert_allclose(contract(equation, *arrays), np.einsum(equation, *arrays), rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_equations(data):
    letters = "abcdef"
    size = {c: data.draw(st.integers(1, 3)) for c in letters}
    operands = [data.draw(st.lists(st.sampled_from(letters), min_size=1, max_size=3, unique=True))
                for _ in range(data.draw(st.integers(1, 4)))]
    used = sorted({c for o in operands for c in o})
    output = data.draw(st.lists(st.sampled_from(used), unique=True, max_size=3))
    equation = ",".join("".join(o) for o in operands) + "->" + "".join(output)
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal([size[c] for c in o]) for o in operands]
    np.testing.assert_allclose(contract(equation, *arrays), np.einsum(equation, *arrays), rtol=1e-10, atol=1e-10)


def test_contract_is_differentiable():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    gradient = autograd.grad(lambda a: anp.sum(contract("bij,bjk->bik", a, b) ** 2))(a)
    expected = autograd.grad(lambda a: anp.sum(anp.einsum("bij,bjk->bik", a, b) ** 2))(a)
    np.testing.assert_allclose(gradient, expected, rtol=1e-12)
