"""The Algebra class: constructors, queries, elements, bad input."""
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions.algebra import Algebra, clebsch_gordan, clifford, complex_numbers, diagonal, matrix_algebra, quaternions, translation


def cross_product():
    """R^3 with the cross product: anticommutative, not associative, no unit (a Lie algebra)."""
    return Algebra.from_function(3, lambda i, j: {} if i == j else {3 - i - j: 1 if (j - i) % 3 == 1 else -1},
                                 basis=["x", "y", "z"], name="cross")


def brute_product(A, x, y):
    lam = A.structure_constants(dtype=object)
    return [sum(x[i] * y[j] * lam[i, j, k] for i in range(A.dim) for j in range(A.dim)) for k in range(A.dim)]


# ---------------------------------------------------------------------- constructors agree
def test_constructors_agree_on_the_quaternions():
    H = quaternions()
    dense = H.structure_constants(dtype=object)
    from_dense = Algebra.from_structure_constants(dense, basis=H.basis)
    from_sparse = Algebra.from_structure_constants({(i, j): {k: c} for i, j, k, c in H.entries()}, basis=H.basis)
    from_function = Algebra.from_function(4, lambda i, j: H.product_of_basis(i, j), basis=H.basis)
    from_left = Algebra.from_left_multiplication([np.array(H.left_regular(i).tolist(), dtype=object)
                                                  for i in range(4)], basis=H.basis)
    assert from_dense == from_sparse == from_function == from_left == H
    assert H.nnz == 16 and H.shape == (4,) and H.factors == (H,)


def test_exact_coefficients_survive():
    half, root = sympy.Rational(1, 2), sympy.sqrt(3) / 2
    A = Algebra.from_structure_constants({(0, 0): {0: Fraction(1, 2), 1: root}, (1, 1): {1: 0.25}}, dim=2)
    assert A.product_of_basis(0, 0) == {0: half, 1: root}
    assert A.product_of_basis(1, 1) == {1: sympy.Rational(1, 4)}
    assert A.structure_constants()[0, 0, 1] == pytest.approx(np.sqrt(3) / 2, abs=1e-15)


def test_duplicate_entries_cancel_and_zeros_are_not_stored():
    A = Algebra.from_structure_constants(np.zeros((3, 3, 3), dtype=int))
    assert A.nnz == 0 and A.is_associative() and A.is_commutative() and A.is_anticommutative()
    assert A.unit() is None


def test_symbolic_structure_constants():
    a, b = sympy.symbols("a b", real=True)
    A = Algebra.from_structure_constants({(0, 0): {0: a}, (0, 1): {1: b}, (1, 0): {1: b}}, dim=2)
    assert A.is_commutative()
    x = A.symbols("x")
    assert (x * x)[0] == a * sympy.Symbol("x_0", real=True) ** 2


# ---------------------------------------------------------------------- queries
def test_cross_product_queries():
    L = cross_product()
    assert L.is_anticommutative() and not L.is_commutative() and not L.is_associative()
    assert L.unit() is None
    assert L.center() == []
    x, y = L.element([1, 2, 3]), L.element([4, 5, 6])
    assert (x * y).to_array().tolist() == np.cross([1, 2, 3], [4, 5, 6]).tolist()


def test_associativity_detects_a_single_bad_entry():
    table = {(i, j): {(i + j) % 5: 1} for i in range(5) for j in range(5)}
    assert Algebra.from_structure_constants(table, dim=5).is_associative()
    table[3, 4] = {2: 2}                         # e_3 e_4 = 2 e_2 instead of e_2
    assert not Algebra.from_structure_constants(table, dim=5).is_associative()


def test_associativity_with_irrational_and_symbolic_constants():
    s = sympy.sqrt(2)
    # e_0 e_0 = sqrt(2) e_0 is associative; rescaling the basis of a unital algebra keeps it associative.
    scaled = Algebra.from_structure_constants({(0, 0): {0: s}, (0, 1): {1: s}, (1, 0): {1: s}, (1, 1): {0: -s}},
                                              dim=2)
    assert scaled.is_associative() and scaled.is_commutative()
    assert scaled.unit() == scaled.element([1 / s, 0])
    t = sympy.Symbol("t", real=True)
    twisted = Algebra.from_structure_constants({(0, 0): {1: 1}, (1, 0): {1: t}, (0, 1): {1: 1}}, dim=2)
    assert not twisted.is_associative()          # (e0 e0) e0 = t e1 but e0 (e0 e0) = e1, differs for generic t


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_associativity_matches_brute_force_on_random_small_algebras(seed):
    rng = np.random.default_rng(seed)
    lam = rng.integers(-1, 2, size=(2, 2, 2)) * (rng.random((2, 2, 2)) < 0.4)
    A = Algebra.from_structure_constants(lam)
    brute = np.array_equal(np.einsum("ijp,pkm->ijkm", lam, lam), np.einsum("jkp,ipm->ijkm", lam, lam))
    assert A.is_associative() == brute
    assert A.is_commutative() == np.array_equal(lam, lam.transpose(1, 0, 2))
    assert A.is_anticommutative() == np.array_equal(lam, -lam.transpose(1, 0, 2))


def test_unit_is_exact_and_two_sided():
    M = matrix_algebra(3)
    u = M.unit()
    assert u == M.element(np.eye(3, dtype=int).reshape(-1))
    for label in M.basis:
        e = M.basis_element(label)
        assert u * e == e == e * u
    # a left unit that is not a right unit: e_0 e_j = e_j but e_1 e_0 = 0 != e_1
    one_sided = Algebra.from_structure_constants({(0, 0): {0: 1}, (0, 1): {1: 1}}, dim=2)
    assert one_sided.unit() is None


def test_regular_representations():
    H = quaternions()
    x, y = H.element([1, 2, 3, 4]), H.element([5, -6, 7, Fraction(1, 2)])
    xy = sympy.Matrix((x * y).flat)
    assert H.left_regular(x) * sympy.Matrix(y.flat) == xy
    assert H.right_regular(y) * sympy.Matrix(x.flat) == xy
    assert H.left_regular("i") == H.left_regular(1)


def test_center():
    assert [z.flat for z in matrix_algebra(2).center()] == [(1, 0, 0, 1)]
    assert len(complex_numbers().center()) == 2
    assert len(diagonal(4).center()) == 4
    H = quaternions()
    assert H.center() == [H.unit()]


def test_is_homomorphism():
    C = complex_numbers()
    conjugation = [[1, 0], [0, -1]]
    assert C.is_homomorphism(conjugation, C)
    assert not C.is_homomorphism([[1, 0], [0, 2]], C)
    # C -> M_2(R), a + bi -> [[a, -b], [b, a]] (coefficients row-major)
    embedding = [[1, 0], [0, -1], [0, 1], [1, 0]]
    assert C.is_homomorphism(embedding, matrix_algebra(2))
    with pytest.raises(ValueError, match=r"matrix: expected shape \(4, 2\)"):
        C.is_homomorphism(conjugation, matrix_algebra(2))
    with pytest.raises(TypeError, match="other"):
        C.is_homomorphism(conjugation, "C")


# ---------------------------------------------------------------------- elements
def test_element_arithmetic_matches_brute_force():
    rng = np.random.default_rng(1)
    A = Algebra.from_structure_constants(rng.integers(-2, 3, size=(3, 3, 3)))
    x, y = A.element(rng.integers(-5, 5, 3)), A.element(rng.integers(-5, 5, 3))
    assert list((x * y).flat) == brute_product(A, x.flat, y.flat)
    assert (x + y - y) == x and (-x + x) == A.zero()
    assert 2 * x == x + x == x * 2
    assert (x / 2) * 2 == x
    assert x ** 2 == x * x


def test_element_indexing_and_display():
    H = quaternions()
    q = H.element([1, Fraction(-1, 2), 0, sympy.sqrt(2)])
    assert q["i"] == sympy.Rational(-1, 2) and q[3] == sympy.sqrt(2)
    assert repr(q) == "1 - 1/2*i + sqrt(2)*k"
    assert repr(H.zero()) == "0"
    assert q._repr_latex_() == "$\\mathrm{1} - \\frac{1}{2} \\mathrm{i} + \\sqrt{2} \\mathrm{k}$"
    assert H.element([0, -1, 1, 0])._repr_latex_() == "$-\\mathrm{i} + \\mathrm{j}$"
    assert clebsch_gordan(1).element([0, 1, 0, 0])._repr_latex_() == "$\\mathrm{e}^{1}_{-1}$"
    assert H.symbols("x").subs({sympy.Symbol("x_0", real=True): 3})[0] == 3


def test_symbols_show_the_product_formula():
    C = complex_numbers()
    z, w = C.symbols("z"), C.symbols("w")
    z0, z1, w0, w1 = sympy.symbols("z_0 z_1 w_0 w_1", real=True)
    assert (z * w).flat == (z0 * w0 - z1 * w1, z0 * w1 + z1 * w0)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("lam, error, message", [
    (np.zeros((2, 3, 3)), ValueError, r"lam: expected shape \(d, d, d\), got \(2, 3, 3\)"),
    (np.zeros((2, 2)), ValueError, r"lam: expected shape \(d, d, d\)"),
    ([[[1, 2], [3]], [[1], [2]]], ValueError, "lam"),
    ([[["1", 0], [0, 0]], [[0, 0], [0, 0]]], TypeError, r"lam\[0, 0, 0\].*got str"),
    (np.full((1, 1, 1), 0.1), TypeError, r"lam\[0, 0, 0\].*float 0.1"),
    (np.full((1, 1, 1), np.nan), TypeError, r"lam\[0, 0, 0\]"),
    ([[[sympy.I]]], ValueError, r"lam\[0, 0, 0\]: expected a real coefficient"),
    ("e_0 e_0 = e_0", TypeError, "lam"),
    ({(0, 5): {0: 1}}, ValueError, "out of range"),
    ({(0,): {0: 1}}, TypeError, r"lam: expected keys \(i, j\)"),
    ({(0, 0): [1]}, TypeError, r"lam\[\(0, 0\)\]: expected a mapping"),
    ({(0, 0): {2: 1}}, ValueError, r"key 2.*out of range"),
])
def test_bad_structure_constants(lam, error, message):
    kwargs = {"dim": 2} if isinstance(lam, dict) else {}
    with pytest.raises(error, match=message):
        Algebra.from_structure_constants(lam, **kwargs)


@pytest.mark.parametrize("basis, error, message", [
    (["a"], ValueError, "basis: expected 2 labels.*got 1"),
    (["a", "a"], ValueError, "basis: labels must be distinct, 'a'"),
    (["a", 3], TypeError, "basis: expected string labels, got int"),
    ("ab", TypeError, "basis: expected a sequence of 2 labels, got str"),
])
def test_bad_basis(basis, error, message):
    with pytest.raises(error, match=message):
        Algebra.from_structure_constants(np.zeros((2, 2, 2), dtype=int), basis=basis)


def test_bad_constructor_arguments():
    with pytest.raises(TypeError, match="mul: expected a callable"):
        Algebra.from_function(2, "not callable")
    with pytest.raises(TypeError, match=r"mul\(0, 0\): expected a mapping"):
        Algebra.from_function(2, lambda i, j: i + j)
    with pytest.raises(ValueError, match="dim: expected a positive int, got 0"):
        Algebra.from_function(0, lambda i, j: {})
    with pytest.raises(TypeError, match="dim: expected a positive int, got bool"):
        Algebra.from_function(True, lambda i, j: {})
    with pytest.raises(ValueError, match=r"matrices: expected d matrices of shape \(d, d\)"):
        Algebra.from_left_multiplication(np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="dim: lam has shape"):
        Algebra.from_structure_constants(np.zeros((2, 2, 2), dtype=int), dim=3)
    with pytest.raises(ValueError, match="needs dim= or basis="):
        Algebra.from_structure_constants({})


def test_bad_elements_and_mixing_algebras():
    H, C = quaternions(), complex_numbers()
    with pytest.raises(ValueError, match=r"coefficients: expected shape \(4,\) for quaternions, got \(3,\)"):
        H.element([1, 2, 3])
    with pytest.raises(TypeError, match=r"coefficients\[1\]"):
        H.element([1, "x", 0, 0])
    with pytest.raises(ValueError, match="cannot combine an element of quaternions with one of complex_numbers"):
        H.basis_element(1) * C.basis_element(1)
    with pytest.raises(ValueError, match="cannot combine"):
        H.basis_element(1) + C.basis_element(1)
    with pytest.raises(ValueError, match="'q' is not a basis label of quaternions"):
        H.basis_element("q")
    with pytest.raises(ValueError, match="index 7 out of range"):
        H.basis_element(7)
    with pytest.raises(ValueError, match="name: expected an identifier"):
        H.symbols("1x")
    with pytest.raises(TypeError, match="symbolic coefficients"):
        H.symbols("x").to_array()
    with pytest.raises(ZeroDivisionError, match="divisor"):
        H.basis_element(0) / 0


def test_dense_structure_constants_refuse_when_too_large():
    T = translation(8)
    with pytest.raises(ValueError, match=r"would take 4,096 bytes .* max_bytes = 1,000"):
        T.structure_constants(max_bytes=1000)
    assert T.structure_constants(dtype=np.float32).dtype == np.float32


def test_clifford_is_associative_and_graded():
    A = clifford(3, 0, 1)
    assert A.dim == 16 and A.is_associative() and not A.is_commutative()


@pytest.mark.parametrize("exponent", [-400, -30, -12, -9, 9, 12, 30, 400])
def test_unit_is_found_at_every_scale(exponent):
    scale = Fraction(10) ** exponent
    A = Algebra.from_structure_constants({(0, 0): {0: 1}, (1, 1): {1: scale}})
    assert A.unit() == A.element([1, 1 / scale])


def test_no_unit_is_still_none():
    assert Algebra.from_structure_constants({(0, 0): {0: 1}, (1, 1): {0: Fraction(1, 10**9)}}).unit() is None
