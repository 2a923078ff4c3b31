"""Size guards: work beyond `algebra.limits.MAX_ENTRIES` is refused at once, saying the size and what to use."""
import time

import numpy as np
import pytest

from product_interactions.algebra import (Algebra, clebsch_gordan, complex_numbers, diagonal, gaunt, matrix_algebra,
                                          position, tensor_algebra, tensor_product, translation)
from product_interactions.algebra.limits import MAX_ENTRIES

LIMIT = "more than algebra.limits.MAX_ENTRIES = 1,048,576"


def _refused(call, *words):
    start = time.perf_counter()
    with pytest.raises(ValueError) as error:
        call()
    assert time.perf_counter() - start < 1
    message = str(error.value)
    assert all(word in message for word in words), message
    return message


@pytest.mark.parametrize("build, size", [
    (lambda: translation(3162), "9,998,244"), (lambda: diagonal(10**7), "10,000,000"),
    (lambda: matrix_algebra(215), "9,938,375"), (lambda: tensor_algebra(1, 4095), "8,390,656"),
])
def test_structured_algebras_are_lazy_and_refuse_to_materialise(build, size):
    A = build()
    for query in (A.entries, A.sparse_structure_constants, A.to_json):
        _refused(query, size, LIMIT, "its rule is used without them")
    _refused(lambda: A.structure_constants(max_bytes=2**62))            # no allocation before the refusal
    _refused(A.structure_constants, "bytes", "max_bytes")
    _refused(A.center, LIMIT)
    _refused(lambda: A.left_regular(0), LIMIT, "use the kernels")


def test_elements_of_huge_algebras_are_refused():
    A = position(10**9)
    for query in (A.unit, A.zero, A.symbols, lambda: A.basis_element(3)):
        _refused(query, "1,000,000,000 coefficients", LIMIT, "use the kernels on numeric arrays")
    assert A.product_of_basis(4, 4) == {4: 1}


@pytest.mark.parametrize("A, words", [(matrix_algebra(1500), ("unit", "2,250,000 coefficients")),
                                      (matrix_algebra(10**5), ("unit", "10,000,000,000 coefficients"))])
def test_a_unit_past_the_limits_is_refused_before_solving(A, words):
    _refused(A.unit, LIMIT, *words)


def test_an_algebra_with_a_basis_element_no_product_gives_back_has_no_unit_without_solving():
    start = time.perf_counter()
    assert Algebra.from_structure_constants({(0, 0): {0: 1}}, dim=MAX_ENTRIES).unit() is None    # 52 s before
    assert Algebra.from_structure_constants({(0, 1): {1: 1}, (1, 0): {1: 1}}, dim=2).unit() is None   # e_0 e_0 = 0
    assert time.perf_counter() - start < 5


def test_the_matrix_algebra_s_unit_is_the_identity_the_solver_finds():
    M = matrix_algebra(3)
    solved = Algebra.from_structure_constants(M.structure_constants()).unit()
    assert M.unit().flat == solved.flat == (1, 0, 0, 0, 1, 0, 0, 0, 1)
    x = M.symbols("x")
    assert M.unit() * x == x * M.unit() == x


@pytest.mark.parametrize("call, words", [
    (lambda: Algebra.from_structure_constants(np.zeros((200,) * 3)), ("lam", "8,000,000 entries", "mapping")),
    (lambda: Algebra.from_structure_constants(np.zeros((102,) * 3).tolist()), ("lam", "1,061,208 entries")),
    (lambda: Algebra.from_structure_constants({(0, 0): {0: 1}}, dim=10**8), ("basis", "100,000,000 basis labels")),
    (lambda: Algebra.from_function(3000, lambda i, j: {}), ("dim", "9,000,000 calls of mul")),
    (lambda: clebsch_gordan(40), ("lmax", "lmax = 40")),
    (lambda: gaunt(40), ("lmax", "lmax = 40")),
])
def test_builders_refuse_before_the_work(call, words):
    _refused(call, LIMIT, *words)


def test_builders_at_the_limit_still_work():
    assert Algebra.from_function(32, lambda i, j: {(i + j) % 32: 1}).dim == 32
    assert Algebra.from_structure_constants({(0, 0): {0: 1}}, dim=MAX_ENTRIES).dim == MAX_ENTRIES


def test_powers_are_bounded():
    x = complex_numbers().element([1, 1])
    assert x ** 4 == complex_numbers().element([-4, 0])
    _refused(lambda: x ** 10**6, "exponent", "MAX_POWER = 1024", "1000000")
    with pytest.raises(TypeError, match="exponent: .* float"):
        x ** 2.0


def test_products_of_dense_elements_are_bounded():
    A = translation(2000)
    x = A.element([1] * 2000)
    _refused(lambda: x * x, "*", "4,000,000 pairs of nonzero coefficients", LIMIT)
    assert (A.basis_element(1999) * x).flat == x.flat
    T = tensor_product(translation(2), translation(1000))
    y = T.element(np.ones(T.shape, dtype=int))
    _refused(lambda: y * y, "*: 4,000,000", LIMIT, "use the kernels")
