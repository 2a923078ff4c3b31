"""Tests of the built-in algebras against hand-written references and brute force.

Covers `tensor_algebra` (Seq2Tens: lifts, Phi, exp, embed), `translation` (circular / truncated convolution),
`clifford` (signature, anticommutation, quaternions, complex numbers, centre), `diagonal` / `position`,
`matrix_algebra`, and the argument checks of every builder.  All randomness is seeded (numpy generators with
fixed seeds, hypothesis derandomized), all comparisons that can be exact are exact.
"""
from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
import time
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions import algebra
from product_interactions.algebra import (Algebra, clifford, complex_numbers, diagonal, matrix_algebra, position, quaternions,
                     tensor_algebra, translation)

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)

small_ints = st.integers(min_value=-4, max_value=4)


# ---------------------------------------------------------------------------------------------------- helpers
def random_exact(A, rng, rational=False):
    """A random element of A with small integer (or rational) coefficients."""
    if rational:
        values = [Fraction(int(n), int(d)) for n, d in zip(rng.integers(-5, 6, A.dim), rng.integers(1, 4, A.dim))]
    else:
        values = [int(v) for v in rng.integers(-3, 4, A.dim)]
    return A.element(values)


def dense_product(A, x, y):
    """x * y computed by brute force from the dense exact structure constants: sum_ij x_i y_j lam[i, j, :]."""
    lam = A.structure_constants(dtype=object)
    result = [sympy.Integer(0)] * A.dim
    for i, j, k in itertools.product(range(A.dim), repeat=3):
        result[k] += x.flat[i] * y.flat[j] * lam[i, j, k]
    return A.element(result)


def exact_dense(A):
    """The dense structure constants: an int64 array when they are all integers (fast, exact), else objects."""
    lam = A.structure_constants(dtype=object)
    if all(isinstance(v, (int, sympy.Integer)) for v in lam.reshape(-1)):
        return lam.astype(np.int64)
    return lam


def brute_associative(A) -> bool:
    """(e_i e_j) e_k == e_i (e_j e_k) for all basis triples, from the dense structure constants."""
    lam = exact_dense(A)
    left = np.einsum("ijp,pkm->ijkm", lam, lam)
    right = np.einsum("jkp,ipm->ijkm", lam, lam)
    if lam.dtype != object:
        return not (left - right).any()
    return all(sympy.simplify(v) == 0 for v in (left - right).reshape(-1))


def brute_commutative(A, sign=+1) -> bool:
    lam = exact_dense(A)
    if lam.dtype != object:
        return not (lam - sign * lam.transpose(1, 0, 2)).any()
    return all(sympy.simplify(v) == 0 for v in (lam - sign * lam.transpose(1, 0, 2)).reshape(-1))


def span_rank(vectors, dim):
    if not vectors:
        return 0
    return sympy.Matrix([list(v) for v in vectors]).rank()


def same_span(elements, vectors, dim):
    """The span of `elements` (Elements) equals the span of `vectors` (lists of coefficients)."""
    a = [list(e.flat) for e in elements]
    b = [list(v) for v in vectors]
    ra, rb = span_rank(a, dim), span_rank(b, dim)
    return ra == rb == span_rank(a + b, dim)


# ------------------------------------------------------------------------------------------- tensor algebra
def level_arrays(T, element):
    """The levels t_0..t_M of an element of T(R^d) as object arrays of shape (d,) * m."""
    d = T.width
    return [np.array(element.flat[T.level(m)], dtype=object).reshape((d,) * m) for m in range(T.degree + 1)]


def from_levels(T, levels):
    return T.element([c for level in levels for c in np.asarray(level, dtype=object).reshape(-1)])


def convolution_product(T, s, t):
    """(s . t)_m = sum_{i<=m} s_i (x) t_{m-i}, written out with np.multiply.outer."""
    S, U = level_arrays(T, s), level_arrays(T, t)
    out = []
    for m in range(T.degree + 1):
        acc = np.zeros((T.width,) * m, dtype=object)
        for i in range(m + 1):
            acc = acc + np.multiply.outer(S[i], U[m - i])
        out.append(acc)
    return from_levels(T, out)


def tensor_power(x, m):
    """x^{(x)m} as a flat object array, row-major."""
    result = np.array(sympy.Integer(1), dtype=object)
    for _ in range(m):
        result = np.multiply.outer(result, np.array(x, dtype=object))
    return list(np.asarray(result, dtype=object).reshape(-1))


def phi(T, sequence):
    """Phi(x_1..x_L) = phi(x_1) . ... . phi(x_L) with phi the lift (1, x, 0, ...)."""
    result = T.unit()
    for x in sequence:
        result = result * T.lift(x)
    return result


def phi_brute(T, sequence):
    """Phi_m as the sum over i_1 < ... < i_m of x_{i_1} (x) ... (x) x_{i_m} (non-contiguous subsequences)."""
    coefficients = []
    for m in range(T.degree + 1):
        level = [sympy.Integer(0)] * T.width**m
        for indices in itertools.combinations(range(len(sequence)), m):
            term = np.array(sympy.Integer(1), dtype=object)
            for i in indices:
                term = np.multiply.outer(term, np.array([sympy.Integer(v) for v in sequence[i]], dtype=object))
            level = [a + b for a, b in zip(level, np.asarray(term, dtype=object).reshape(-1))]
        coefficients += level
    return T.element(coefficients)


DEGREES = [(d, M) for d in (1, 2, 3) for M in (0, 1, 2, 3)]


@pytest.mark.parametrize("d, M", DEGREES)
def test_tensor_algebra_dimension_levels_and_graded_labels(d, M):
    T = tensor_algebra(d, M)
    assert T.dim == sum(d**m for m in range(M + 1))
    assert T.shape == (T.dim,)
    assert (T.width, T.degree) == (d, M)
    assert T.basis[0] == "1"
    assert len(set(T.basis)) == T.dim
    start = 0
    for m in range(M + 1):
        sl = T.level(m)
        assert (sl.start, sl.stop) == (start, start + d**m)
        expected = ["e" + "".join(str(c + 1) for c in word) for word in itertools.product(range(d), repeat=m)]
        if m == 0:
            expected = ["1"]
        assert list(T.basis[sl]) == expected      # graded, row-major inside a level
        start += d**m
    assert start == T.dim


def test_tensor_algebra_labels_with_ten_or_more_letters_are_separated():
    T = tensor_algebra(11, 2)
    assert T.dim == 1 + 11 + 121
    assert T.basis[1:12] == tuple(f"e{i}" for i in range(1, 12))
    assert T.basis[T.level(2)][:3] == ("e1,1", "e1,2", "e1,3")
    assert T.basis[-1] == "e11,11"
    assert len(set(T.basis)) == T.dim
    assert T.index("e1,11") == T.level(2).start + 10


def test_tensor_algebra_docstring_example():
    T = tensor_algebra(2, 2)
    assert T.basis == ("1", "e1", "e2", "e11", "e12", "e21", "e22")
    assert list((T.lift([1, 2]) * T.lift([3, 0])).coefficients[T.level(2)]) == [3, 0, 6, 0]


@pytest.mark.parametrize("d, M", DEGREES)
def test_tensor_algebra_is_associative_exact(d, M):
    T = tensor_algebra(d, M)
    assert T.is_associative() is True
    assert brute_associative(T)
    # commutative exactly when there is no room for a non-commuting word: d == 1 or M <= 1
    assert T.is_commutative() == (d == 1 or M <= 1) == brute_commutative(T)


@pytest.mark.parametrize("d, M", [(2, 2), (3, 2), (2, 3), (3, 3)])
def test_tensor_algebra_brute_force_associativity_on_random_exact_elements(d, M):
    T = tensor_algebra(d, M)
    rng = np.random.default_rng(100 * d + M)
    for _ in range(3):
        x, y, z = (random_exact(T, rng, rational=True) for _ in range(3))
        assert (x * y) * z == x * (y * z)
        assert convolution_product(T, convolution_product(T, x, y), z) == (x * y) * z


@pytest.mark.parametrize("d, M", [(1, 3), (2, 2), (2, 3), (3, 2), (3, 3)])
def test_tensor_algebra_product_is_the_convolution_tensor_product(d, M):
    T = tensor_algebra(d, M)
    rng = np.random.default_rng(7 + d + 10 * M)
    for _ in range(4):
        s, t = random_exact(T, rng), random_exact(T, rng)
        assert s * t == convolution_product(T, s, t)
    # and on basis words: e_u e_v = e_{uv} if |u| + |v| <= M, else 0
    for u, v in itertools.product(T.basis if T.dim <= 15 else T.basis[:15], T.basis):
        word = lambda label: "" if label == "1" else label[1:]  # noqa: E731
        product = T.basis_element(u) * T.basis_element(v)
        joined = word(u) + word(v)
        if len(joined) <= M:
            assert product == T.basis_element("e" + joined if joined else "1")
        else:
            assert product == T.zero()


def test_tensor_algebra_is_not_commutative_on_an_explicit_pair():
    T = tensor_algebra(2, 2)
    e1, e2 = T.basis_element("e1"), T.basis_element("e2")
    assert e1 * e2 == T.basis_element("e12")
    assert e2 * e1 == T.basis_element("e21")
    assert e1 * e2 != e2 * e1


@pytest.mark.parametrize("d, M", DEGREES)
def test_tensor_algebra_unit_is_one_followed_by_zeros(d, M):
    T = tensor_algebra(d, M)
    unit = T.unit()
    assert unit is not None
    assert unit.flat == (1,) + (0,) * (T.dim - 1)
    assert unit == T.basis_element("1")
    rng = np.random.default_rng(d * 31 + M)
    x = random_exact(T, rng, rational=True)
    assert unit * x == x == x * unit


@SETTINGS
@given(d=st.integers(1, 3), M=st.integers(1, 3),
       seq_x=st.lists(st.lists(small_ints, min_size=3, max_size=3), min_size=0, max_size=3),
       seq_y=st.lists(st.lists(small_ints, min_size=3, max_size=3), min_size=0, max_size=3))
def test_phi_of_a_concatenation_is_the_product(d, M, seq_x, seq_y):
    T = tensor_algebra(d, M)
    xs = [v[:d] for v in seq_x]
    ys = [v[:d] for v in seq_y]
    assert phi(T, xs + ys) == phi(T, xs) * phi(T, ys)
    # against the brute-force Phi, which is not built from products at all
    assert phi_brute(T, xs + ys) == phi_brute(T, xs) * phi_brute(T, ys)
    assert phi(T, xs + ys) == phi_brute(T, xs + ys)


@pytest.mark.parametrize("d, M, L", [(1, 3, 5), (2, 2, 4), (2, 3, 5), (3, 2, 3), (3, 3, 4)])
def test_phi_levels_equal_sum_over_increasing_index_tuples(d, M, L):
    T = tensor_algebra(d, M)
    rng = np.random.default_rng(1000 + 100 * d + 10 * M + L)
    sequence = [[int(v) for v in rng.integers(-3, 4, d)] for _ in range(L)]
    Phi = phi(T, sequence)
    for m in range(M + 1):
        expected = [sympy.Integer(0)] * d**m
        for indices in itertools.combinations(range(L), m):
            expected = [a + b for a, b in zip(expected, tensor_power_product([sequence[i] for i in indices]))]
        assert list(Phi.flat[T.level(m)]) == expected, f"level {m}"
    assert Phi.flat[0] == 1


def tensor_power_product(vectors):
    """v_1 (x) ... (x) v_k, flat row-major, via explicit nested index loops (no numpy outer)."""
    if not vectors:
        return [sympy.Integer(1)]
    d = len(vectors[0])
    return [sympy.Integer(math.prod(v[i] for v, i in zip(vectors, idx)))
            for idx in itertools.product(range(d), repeat=len(vectors))]


def test_phi_level_two_of_a_two_step_sequence_by_hand():
    T = tensor_algebra(2, 2)
    Phi = phi(T, [[1, 2], [3, 5]])
    # level 1: x1 + x2; level 2: x1 (x) x2 only (i_1 < i_2), no x1 (x) x1
    assert list(Phi.flat[T.level(1)]) == [4, 7]
    assert list(Phi.flat[T.level(2)]) == [1 * 3, 1 * 5, 2 * 3, 2 * 5]


@pytest.mark.parametrize("d, M", [(2, 3), (3, 2)])
def test_phi_satisfies_the_time_recursion(d, M):
    # Phi_m(x_1..x_t) = Phi_m(x_1..x_{t-1}) + Phi_{m-1}(x_1..x_{t-1}) (x) x_t
    T = tensor_algebra(d, M)
    rng = np.random.default_rng(5 + d * M)
    sequence = [[int(v) for v in rng.integers(-2, 3, d)] for _ in range(4)]
    previous = phi(T, sequence[:-1])
    current = phi(T, sequence)
    last = sequence[-1]
    for m in range(1, M + 1):
        expected = [a + b for a, b in zip(previous.flat[T.level(m)],
                                          np.multiply.outer(np.array(previous.flat[T.level(m - 1)], dtype=object),
                                                            np.array(last, dtype=object)).reshape(-1))]
        assert list(current.flat[T.level(m)]) == expected


@pytest.mark.parametrize("d, M", [(1, 3), (2, 3), (3, 2), (3, 3)])
def test_exp_level_m_is_the_tensor_power_over_m_factorial(d, M):
    T = tensor_algebra(d, M)
    rng = np.random.default_rng(50 + d + M)
    x = [Fraction(int(a), int(b)) for a, b in zip(rng.integers(-4, 5, d), rng.integers(1, 4, d))]
    e = T.exp(x)
    for m in range(M + 1):
        expected = [sympy.Rational(v) / math.factorial(m) for v in tensor_power(
            [sympy.Rational(c.numerator, c.denominator) for c in x], m)]
        assert list(e.flat[T.level(m)]) == expected


@pytest.mark.parametrize("d, M", [(1, 3), (2, 3), (3, 2), (3, 3)])
def test_exp_of_parallel_vectors_multiplies(d, M):
    T = tensor_algebra(d, M)
    rng = np.random.default_rng(60 + d + M)
    for _ in range(3):
        a = [int(v) for v in rng.integers(-3, 4, d)]
        c = Fraction(int(rng.integers(-5, 6)), int(rng.integers(1, 4)))
        b = [c * v for v in a]
        assert T.exp(a) * T.exp(b) == T.exp([u + v for u, v in zip(a, b)])
        assert T.exp(a) * T.exp([-v for v in a]) == T.unit()      # exp(-a) is the inverse


def test_exp_of_non_parallel_vectors_has_the_chen_cross_term():
    # exp(a) exp(b) at level 2 is a(x)a/2 + a(x)b + b(x)b/2, which differs from exp(a+b) by (a(x)b - b(x)a)/2
    T = tensor_algebra(2, 2)
    a, b = [1, 0], [0, 1]
    product = T.exp(a) * T.exp(b)
    assert list(product.flat[T.level(2)]) == [sympy.Rational(1, 2), 1, 0, sympy.Rational(1, 2)]
    assert product != T.exp([1, 1])
    difference = product - T.exp([1, 1])
    assert list(difference.flat) == [0, 0, 0, 0, sympy.Rational(1, 2), -sympy.Rational(1, 2), 0]


@pytest.mark.parametrize("d, M", [(2, 3), (3, 3), (1, 3)])
def test_embed_truncates_the_exponential_at_the_order(d, M):
    T = tensor_algebra(d, M)
    rng = np.random.default_rng(70 + d)
    x = [int(v) for v in rng.integers(-3, 4, d)]
    for p in range(1, M + 3):
        e = T.embed(x, order=p)
        for m in range(M + 1):
            expected = ([sympy.Rational(v, math.factorial(m)) for v in tensor_power(x, m)] if m <= p
                        else [0] * d**m)
            assert list(e.flat[T.level(m)]) == expected, (p, m)
    assert T.embed(x, order=1) == T.lift(x)
    assert T.lift(x).flat == (1, *x) + (0,) * (T.dim - 1 - d)
    assert T.embed(x, order=M) == T.exp(x)
    assert T.embed(x, order=M + 5) == T.exp(x)


def test_tensor_algebra_helpers_reject_bad_input():
    T = tensor_algebra(2, 3)
    for bad in (0, -1, True, 1.0, "1", None):
        with pytest.raises((ValueError, TypeError), match="order"):
            T.embed([1, 2], order=bad)
    for bad in ([1], [1, 2, 3], "ab", 3, None):
        with pytest.raises((ValueError, TypeError), match="x"):
            T.lift(bad)
        with pytest.raises((ValueError, TypeError), match="x"):
            T.exp(bad)
    with pytest.raises(TypeError, match=r"x\[1\]"):
        T.lift([1, 0.1])
    for bad in (-1, 4, True, 1.0, "1"):
        with pytest.raises((ValueError, TypeError), match="m"):
            T.level(bad)


def test_lift_accepts_exact_values():
    T = tensor_algebra(2, 2)
    x = T.lift([Fraction(1, 3), sympy.sqrt(2)])
    assert x.flat[:3] == (1, sympy.Rational(1, 3), sympy.sqrt(2))
    assert (x * x).flat[T.level(2)] == (sympy.Rational(1, 9), sympy.sqrt(2) / 3, sympy.sqrt(2) / 3, 2)
    assert T.lift(np.array([1, 2])) == T.lift([1, 2]) == T.lift((np.int64(1), 2))
    assert T.exp(np.array([0.5, -0.25])) == T.exp([Fraction(1, 2), Fraction(-1, 4)])


def test_tensor_algebra_accepts_numpy_integer_degree_like_dim():
    T = tensor_algebra(np.int64(2), np.int64(2))
    assert T.dim == 7
    assert T.level(np.int64(1)) == slice(1, 3)


# ------------------------------------------------------------------------------------------------ translation
@SETTINGS
@given(n=st.integers(1, 7), data=st.data())
def test_cyclic_translation_product_is_circular_convolution(n, data):
    A = translation(n)
    x = data.draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    y = data.draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    product = A.element(x) * A.element(y)
    fft = np.real(np.fft.ifft(np.fft.fft(x) * np.fft.fft(y)))
    np.testing.assert_allclose(product.to_array(), fft, rtol=0, atol=1e-9)
    full = np.convolve(x, y)
    folded = np.zeros(n, dtype=np.int64)
    for k, v in enumerate(full):
        folded[k % n] += v
    assert [int(c) for c in product.flat] == folded.tolist()


@SETTINGS
@given(n=st.integers(1, 7), data=st.data())
def test_truncated_translation_product_is_truncated_convolution(n, data):
    A = translation(n, cyclic=False)
    x = data.draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    y = data.draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    product = A.element(x) * A.element(y)
    assert [int(c) for c in product.flat] == np.convolve(x, y)[:n].tolist()


def test_translation_product_on_random_float_vectors_matches_fft():
    # non-integer values: dyadic rationals are exact inputs, the comparison is done in floats
    rng = np.random.default_rng(2024)
    for n in (3, 5, 8):
        A = translation(n)
        x = np.round(rng.normal(size=n) * 256) / 256
        y = np.round(rng.normal(size=n) * 256) / 256
        product = (A.element(list(x)) * A.element(list(y))).to_array()
        np.testing.assert_allclose(product, np.real(np.fft.ifft(np.fft.fft(x) * np.fft.fft(y))), atol=1e-9)


@pytest.mark.parametrize("cyclic", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_translation_is_commutative_associative_with_unit_e0(n, cyclic):
    A = translation(n, cyclic=cyclic)
    assert A.dim == n and A.basis == tuple(f"e_{i}" for i in range(n))
    assert A.nnz == (n * n if cyclic else n * (n + 1) // 2)
    assert A.is_commutative() and A.is_associative()
    assert brute_commutative(A) and brute_associative(A)
    assert A.unit() == A.basis_element(0) == A.basis_element("e_0")
    rng = np.random.default_rng(n + 10 * cyclic)
    x, y, z = (random_exact(A, rng, rational=True) for _ in range(3))
    assert x * y == y * x
    assert (x * y) * z == x * (y * z)
    assert A.basis_element(0) * x == x
    for i, j in itertools.product(range(n), repeat=2):
        product = A.basis_element(i) * A.basis_element(j)
        if cyclic:
            assert product == A.basis_element((i + j) % n)
        elif i + j < n:
            assert product == A.basis_element(i + j)
        else:
            assert product == A.zero()


def test_translation_docstring_example():
    assert translation(4).basis_element(3) * translation(4).basis_element(2) == translation(4).basis_element(1)
    T = translation(4, cyclic=False)
    assert T.basis_element(3) * T.basis_element(2) == T.zero()


# -------------------------------------------------------------------------------------------------- clifford
def clifford_reference(p, q, r):
    """Independent Clifford product on blades (sorted generator tuples) by bubble sort and contraction."""
    n = p + q + r
    squares = [1] * p + [-1] * q + [0] * r
    blades = [g for grade in range(n + 1) for g in itertools.combinations(range(n), grade)]

    def multiply(a, b):
        word, sign = list(a) + list(b), 1
        for end in range(len(word) - 1, 0, -1):               # bubble sort, counting swaps
            for i in range(end):
                if word[i] > word[i + 1]:
                    word[i], word[i + 1] = word[i + 1], word[i]
                    sign = -sign
        out = []
        for g in word:                                         # contract equal neighbours
            if out and out[-1] == g:
                out.pop()
                sign *= squares[g]
            else:
                out.append(g)
        return sign, tuple(out)

    return blades, multiply


def blade_label(blade, n):
    if not blade:
        return "1"
    return "e" + ("," if n >= 10 else "").join(str(g + 1) for g in blade)


SIGNATURES = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (2, 0, 0), (1, 1, 0), (0, 2, 0), (3, 0, 0), (0, 3, 0),
              (1, 0, 1), (2, 1, 0), (3, 0, 1), (1, 2, 1), (2, 0, 2), (4, 0, 0)]


@pytest.mark.parametrize("p, q, r", SIGNATURES)
def test_clifford_generators_square_by_signature_and_anticommute(p, q, r):
    A = clifford(p, q, r)
    n = p + q + r
    assert A.dim == 2**n
    assert len(A.basis) == len(set(A.basis)) == 2**n
    one = A.basis_element("1")
    assert A.unit() == one
    generators = [A.basis_element(f"e{g + 1}") for g in range(n)]
    for g, e in enumerate(generators):
        expected = 1 if g < p else (-1 if g < p + q else 0)
        assert e * e == expected * one, f"e{g + 1}^2"
    for a, b in itertools.combinations(range(n), 2):
        ea, eb = generators[a], generators[b]
        assert ea * eb == -(eb * ea)
        assert ea * eb != A.zero()
        assert ea * eb == A.basis_element(f"e{a + 1}{b + 1}")


@pytest.mark.parametrize("p, q, r", SIGNATURES)
def test_clifford_structure_constants_match_a_reference_blade_product(p, q, r):
    A = clifford(p, q, r)
    n = p + q + r
    blades, multiply = clifford_reference(p, q, r)
    assert A.basis == tuple(blade_label(b, n) for b in blades)    # grade, then lexicographic
    for a, b in itertools.product(blades, repeat=2):
        sign, blade = multiply(a, b)
        got = A.product_of_basis(blade_label(a, n), blade_label(b, n))
        expected = {A.index(blade_label(blade, n)): sign} if sign else {}
        assert got == expected, (a, b)


@pytest.mark.parametrize("p, q, r", [(0, 0, 0), (2, 0, 0), (1, 1, 0), (3, 0, 0), (0, 3, 0), (3, 0, 1), (1, 2, 1),
                                     (2, 0, 2), (4, 0, 0), (2, 2, 0)])
def test_clifford_is_associative_exact(p, q, r):
    A = clifford(p, q, r)
    assert A.is_associative() is True
    if A.dim <= 16:
        assert brute_associative(A)
    rng = np.random.default_rng(p * 100 + q * 10 + r)
    x, y, z = (random_exact(A, rng, rational=True) for _ in range(3))
    assert (x * y) * z == x * (y * z)
    assert x * y == dense_product(A, x, y)
    assert A.is_commutative() == (p + q + r <= 1) == brute_commutative(A)


@pytest.mark.parametrize("p, q", [(0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (3, 0), (2, 1), (0, 3), (4, 0),
                                  (1, 3)])
def test_clifford_pseudoscalar_square(p, q):
    # I^2 = (-1)^{n(n-1)/2} (-1)^q for Cl(p, q)
    A = clifford(p, q)
    n = p + q
    I = A.basis_element(A.dim - 1)
    assert I * I == (-1) ** (n * (n - 1) // 2) * (-1) ** q * A.unit()


def test_quaternions():
    H = quaternions()
    assert H.basis == ("1", "i", "j", "k")
    one, i, j, k = (H.basis_element(label) for label in H.basis)
    minus_one = -one
    assert i * i == j * j == k * k == i * j * k == minus_one
    assert (i * j, j * k, k * i) == (k, i, j)
    assert (j * i, k * j, i * k) == (-k, -i, -j)
    assert H.unit() == one
    assert H.is_associative() and not H.is_commutative()


def hamilton(a, b):
    a1, b1, c1, d1 = a
    a2, b2, c2, d2 = b
    return [a1 * a2 - b1 * b2 - c1 * c2 - d1 * d2,
            a1 * b2 + b1 * a2 + c1 * d2 - d1 * c2,
            a1 * c2 - b1 * d2 + c1 * a2 + d1 * b2,
            a1 * d2 + b1 * c2 - c1 * b2 + d1 * a2]


@SETTINGS
@given(a=st.lists(small_ints, min_size=4, max_size=4), b=st.lists(small_ints, min_size=4, max_size=4))
def test_quaternion_product_matches_hamilton_formula(a, b):
    H = quaternions()
    assert list((H.element(a) * H.element(b)).flat) == hamilton(a, b)


@SETTINGS
@given(a=st.tuples(st.integers(-50, 50), st.integers(-50, 50)),
       b=st.tuples(st.integers(-50, 50), st.integers(-50, 50)))
def test_complex_numbers_match_python_complex(a, b):
    C = complex_numbers()
    assert C.basis == ("1", "i")
    z = complex(*a) * complex(*b)
    product = C.element(list(a)) * C.element(list(b))
    assert product.to_array().tolist() == [z.real, z.imag]
    assert product["1"] == int(z.real) and product["i"] == int(z.imag)


def test_complex_numbers_on_random_non_integer_values():
    rng = np.random.default_rng(11)
    C = complex_numbers()
    for _ in range(20):
        a, b = (np.round(rng.normal(size=2) * 64) / 64 for _ in range(2))
        z = complex(*a) * complex(*b)
        np.testing.assert_allclose((C.element(list(a)) * C.element(list(b))).to_array(), [z.real, z.imag],
                                   atol=1e-12)
    assert C.is_commutative() and C.is_associative() and C.unit() == C.basis_element("1")


def brute_center_of_clifford(p, q, r):
    """Blades commuting with every generator (the commutator maps distinct blades to distinct blades)."""
    blades, multiply = clifford_reference(p, q, r)
    n = p + q + r
    central = []
    for blade in blades:
        if all(multiply(blade, (g,)) == multiply((g,), blade) for g in range(n)):
            central.append(blade)
    return central


@pytest.mark.parametrize("p, q, r, expected", [
    (2, 0, 0, ["1"]),                # even dimension: scalars only
    (3, 0, 0, ["1", "e123"]),        # odd dimension: the pseudoscalar is central
    (0, 3, 0, ["1", "e123"]),
    (1, 1, 0, ["1"]),
    (0, 1, 0, ["1", "e1"]),          # the complex numbers are commutative
    (1, 0, 0, ["1", "e1"]),
    (4, 0, 0, ["1"]),
    (2, 0, 1, ["1", "e123"]),        # degenerate, odd: pseudoscalar still central
    (3, 0, 1, ["1"]),                # 3-D PGA: e1234 anticommutes with e1
    (0, 0, 2, ["1", "e12"]),         # Grassmann algebra on 2 generators
])
def test_clifford_center(p, q, r, expected):
    A = clifford(p, q, r)
    center = A.center()
    assert same_span(center, [A.basis_element(label).flat for label in expected], A.dim)
    brute = [blade_label(b, p + q + r) for b in brute_center_of_clifford(p, q, r)]
    assert sorted(brute) == sorted(expected)
    for z in center:
        for label in A.basis:
            e = A.basis_element(label)
            assert z * e == e * z


# ------------------------------------------------------------------------------------------ diagonal / position
@pytest.mark.parametrize("builder, prefix, start", [(diagonal, "e", 0), (position, "g", 1)])
@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_diagonal_and_position(builder, prefix, start, n):
    A = builder(n)
    assert A.dim == n
    assert A.basis == tuple(f"{prefix}_{i + start}" for i in range(n))
    g0 = A.element([1] * n)
    assert A.unit() == g0
    total = A.zero()
    for label in A.basis:
        total = total + A.basis_element(label)
    assert A.unit() == total
    assert A.is_commutative() and A.is_associative()
    assert brute_commutative(A) and brute_associative(A)
    for i, j in itertools.product(range(n), repeat=2):
        assert A.basis_element(i) * A.basis_element(j) == (A.basis_element(i) if i == j else A.zero())
    rng = np.random.default_rng(n)
    x, y = random_exact(A, rng, rational=True), random_exact(A, rng, rational=True)
    assert list((x * y).flat) == [a * b for a, b in zip(x.flat, y.flat)]     # elementwise (gating)
    assert g0 * x == x == x * g0
    # the centre is everything
    assert len(A.center()) == n
    assert same_span(A.center(), [A.basis_element(i).flat for i in range(n)], n)


def test_position_docstring_example():
    B = position(3)
    assert B.basis == ("g_1", "g_2", "g_3")
    assert B.unit() == B.basis_element("g_1") + B.basis_element("g_2") + B.basis_element("g_3")


# ----------------------------------------------------------------------------------------------- matrix algebra
@pytest.mark.parametrize("n", [1, 2, 3])
def test_matrix_algebra_structure(n):
    M = matrix_algebra(n)
    assert M.dim == n * n
    assert M.basis == tuple(f"E{i + 1}{j + 1}" for i in range(n) for j in range(n))
    assert M.is_associative() and brute_associative(M)
    assert M.is_commutative() == (n == 1) == brute_commutative(M)
    identity = M.element(np.eye(n, dtype=int).reshape(-1).tolist())
    assert M.unit() == identity
    center = M.center()
    assert len(center) == 1
    assert same_span(center, [identity.flat], M.dim)
    for i, j, k, l in itertools.product(range(n), repeat=4):
        product = M.basis_element(f"E{i + 1}{j + 1}") * M.basis_element(f"E{k + 1}{l + 1}")
        assert product == (M.basis_element(f"E{i + 1}{l + 1}") if j == k else M.zero())


def test_matrix_algebra_two_is_not_commutative_on_an_explicit_pair():
    M = matrix_algebra(2)
    E12, E21 = M.basis_element("E12"), M.basis_element("E21")
    assert E12 * E21 == M.basis_element("E11")
    assert E21 * E12 == M.basis_element("E22")


@SETTINGS
@given(n=st.integers(1, 4), data=st.data())
def test_matrix_algebra_product_matches_numpy_matmul(n, data):
    M = matrix_algebra(n)
    X = np.array(data.draw(st.lists(st.integers(-9, 9), min_size=n * n, max_size=n * n))).reshape(n, n)
    Y = np.array(data.draw(st.lists(st.integers(-9, 9), min_size=n * n, max_size=n * n))).reshape(n, n)
    product = M.element(X.reshape(-1).tolist()) * M.element(Y.reshape(-1).tolist())
    assert [int(c) for c in product.flat] == (X @ Y).reshape(-1).tolist()
    assert product.coefficients.shape == (n * n,)


def test_matrix_algebra_labels_with_ten_or_more_rows():
    M = matrix_algebra(10)
    assert M.dim == 100
    assert M.basis[0] == "E1,1" and M.basis[9] == "E1,10" and M.basis[-1] == "E10,10"
    assert len(set(M.basis)) == 100


# ------------------------------------------------------------------------------------------ builder bad input
BAD_INPUTS = [
    # (builder, args, kwargs, argument name that the message must mention)
    (tensor_algebra, ("2", 2), {}, "dim"),
    (tensor_algebra, (2.0, 2), {}, "dim"),
    (tensor_algebra, (None, 2), {}, "dim"),
    (tensor_algebra, (True, 2), {}, "dim"),
    (tensor_algebra, (0, 2), {}, "dim"),
    (tensor_algebra, (-3, 2), {}, "dim"),
    (tensor_algebra, (2, "2"), {}, "degree"),
    (tensor_algebra, (2, 2.0), {}, "degree"),
    (tensor_algebra, (2, None), {}, "degree"),
    (tensor_algebra, (2, True), {}, "degree"),
    (tensor_algebra, (2, -1), {}, "degree"),
    (tensor_algebra, (2, 12), {}, "degree"),            # 8191 > 4096: too large
    (tensor_algebra, (4096, 1), {}, "dim"),             # 4097 > 4096: too large
    (tensor_algebra, (100, 3), {}, "dim"),
    (translation, ("3",), {}, "n"),
    (translation, (3.0,), {}, "n"),
    (translation, (None,), {}, "n"),
    (translation, (True,), {}, "n"),
    (translation, (0,), {}, "n"),
    (translation, (-1,), {}, "n"),
    (translation, (3,), {"cyclic": 1}, "cyclic"),
    (translation, (3,), {"cyclic": "no"}, "cyclic"),
    (translation, (3,), {"cyclic": None}, "cyclic"),
    (clifford, ("1",), {}, "p"),
    (clifford, (1.0,), {}, "p"),
    (clifford, (None,), {}, "p"),
    (clifford, (True,), {}, "p"),
    (clifford, (-1,), {}, "p"),
    (clifford, (1, -1), {}, "q"),
    (clifford, (1, True), {}, "q"),
    (clifford, (1, 0.5), {}, "q"),
    (clifford, (1, 0, -1), {}, "r"),
    (clifford, (1, 0, False), {}, "r"),
    (clifford, (1, 0, "0"), {}, "r"),
    (clifford, (11,), {}, "p + q + r"),                 # too large
    (clifford, (4, 4, 3), {}, "p + q + r"),
    (clifford, (2,), {"basis": ["1", "a", "b", 4]}, "basis"),
    (clifford, (1,), {"basis": ["1", "1"]}, "basis"),
    (diagonal, ("3",), {}, "n"),
    (diagonal, (3.0,), {}, "n"),
    (diagonal, (True,), {}, "n"),
    (diagonal, (0,), {}, "n"),
    (diagonal, (-2,), {}, "n"),
    (position, ("3",), {}, "n"),
    (position, (2.5,), {}, "n"),
    (position, (False,), {}, "n"),
    (position, (0,), {}, "n"),
    (position, (-2,), {}, "n"),
    (matrix_algebra, ("2",), {}, "n"),
    (matrix_algebra, (2.0,), {}, "n"),
    (matrix_algebra, (True,), {}, "n"),
    (matrix_algebra, (0,), {}, "n"),
    (matrix_algebra, (-1,), {}, "n"),
]


@pytest.mark.parametrize("builder, args, kwargs, argument", BAD_INPUTS,
                         ids=[f"{b.__name__}{a}{k or ''}" for b, a, k, _ in BAD_INPUTS])
def test_builders_reject_bad_input_naming_the_argument(builder, args, kwargs, argument):
    with pytest.raises((ValueError, TypeError)) as info:
        builder(*args, **kwargs)
    assert argument in str(info.value)


@pytest.mark.parametrize("builder, argument", [(tensor_algebra, "dim"), (translation, "n"), (diagonal, "n"),
                                               (position, "n"), (matrix_algebra, "n")])
def test_bool_sizes_are_type_errors(builder, argument):
    args = (True, 1) if builder is tensor_algebra else (True,)
    with pytest.raises(TypeError, match=argument):
        builder(*args)


def test_too_large_tensor_algebra_mentions_the_dimension():
    with pytest.raises(ValueError, match="8191"):
        tensor_algebra(2, 12)
    assert tensor_algebra(2, 11).dim == 4095          # the limit itself is fine


@pytest.mark.parametrize("builder", [translation, diagonal, position, matrix_algebra])
def test_numpy_integer_sizes_are_accepted(builder):
    assert builder(np.int64(3)) == builder(3)


def test_clifford_accepts_numpy_integers():
    assert clifford(np.int64(2), np.int64(1)) == clifford(2, 1)


@pytest.mark.parametrize("labels", [["1", "a", "b"], ["1", "a", "b", "ab", "extra"]])
def test_clifford_basis_of_the_wrong_length_is_rejected_naming_basis(labels):
    with pytest.raises(ValueError, match="basis"):
        clifford(2, basis=labels)


_BUILD_UNDER_MEMORY_LIMIT = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (400 * 1024**2, 400 * 1024**2))
from product_interactions import algebra
builder = getattr(algebra, sys.argv[1])
A = builder(int(sys.argv[2]))           # a rule: nothing is stored
for query in (lambda: A.entries(), lambda: A.basis, lambda: A.structure_constants()):
    try:
        query()
    except ValueError as error:
        print(error)
    else:
        sys.exit(5)                     # materialised something absurd
print(A.product_of_basis(A.dim - 1, A.dim - 1), A.nnz)
"""


@pytest.mark.parametrize("builder, n", [("matrix_algebra", 10**4), ("translation", 10**7), ("diagonal", 10**10),
                                        ("position", 10**12)])
def test_absurdly_large_structured_algebras_build_instantly_and_refuse_their_tables(builder, n):
    # a subprocess capped at 400 MB: building is free, materialising refuses before it allocates
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-c", _BUILD_UNDER_MEMORY_LIMIT, builder, str(n)], cwd="/",
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-500:]}"
    lines = result.stdout.splitlines()
    assert all("MAX_ENTRIES" in line or "max_bytes" in line for line in lines[:3]), lines
    A = getattr(algebra, builder)(n)
    assert lines[3] == f"{A.product_of_basis(A.dim - 1, A.dim - 1)} {A.nnz}"


def test_smallest_builders():
    assert clifford(0).dim == 1 and clifford(0).unit() == clifford(0).basis_element("1")
    assert tensor_algebra(3, 0).dim == 1 and tensor_algebra(3, 0).basis == ("1",)
    assert translation(1).unit() == translation(1).basis_element(0)
    assert matrix_algebra(1).is_commutative()
    assert isinstance(diagonal(1), Algebra)


@pytest.mark.parametrize("dim, degree", [(2, 10**6), (2, 10**18), (1, 10**18), (10**100, 1), (4096, 1), (1, 4096), (2, 12)])
def test_tensor_algebra_size_is_bounded_before_it_is_computed(dim, degree):
    start = time.perf_counter()
    with pytest.raises(ValueError, match="MAX_DIM = 4096"):
        tensor_algebra(dim, degree)
    assert time.perf_counter() - start < 0.1


def test_tensor_algebra_at_the_size_limit_is_built_lazily():
    start = time.perf_counter()
    T = tensor_algebra(1, 4095)
    assert T.dim == 4096 and T.label(4095) == "e" + "1" * 4095 and T.index(T.label(4095)) == 4095
    assert time.perf_counter() - start < 0.5
    with pytest.raises(ValueError, match="more than algebra.limits.MAX_ENTRIES"):
        T.entries()
