"""Element arithmetic as an algebra system offers it: scalars on both sides (c stands for c 1), integer powers with
inverses, == against scalars, iteration, len and np.asarray; scalar operations on expressions."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy

from product_interactions.algebra import (Algebra, diagonal, matrix_algebra, quaternions, tensor_algebra,
                                          translation)
from product_interactions.interactions import Signal


def _random(algebra, rng, low=-3, high=4):
    return algebra.element([int(v) for v in rng.integers(low, high, algebra.dim)])


@pytest.mark.parametrize("seed", range(5))
def test_scalars_are_multiples_of_the_unit_on_both_sides(seed):
    H = quaternions()
    x, c = _random(H, np.random.default_rng(seed)), Fraction(seed + 1, 3)
    one = H.unit()
    assert x + c == x + c * one == c + x
    assert x - c == x - c * one and c - x == c * one - x
    assert x * c == c * x == x * (c * one)
    assert x / c == x * (1 / sympy.Rational(c.numerator, c.denominator))
    assert (x == c) is False and (c * one == c) is True
    assert H.zero() == 0 and H.unit() == 1 and 0 == H.zero()
    assert sum([x, x, -x]) == x                                     # sum() starts from 0


@pytest.mark.parametrize("seed", range(5))
def test_quaternion_inverse_is_the_conjugate_over_the_norm(seed):
    H = quaternions()
    x = _random(H, np.random.default_rng(seed))
    if x == 0:
        return
    a, b, c, d = x
    conjugate = H.element([a, -b, -c, -d]) / (a * a + b * b + c * c + d * d)
    assert x ** -1 == conjugate == 1 / x == x.inverse()
    assert x * x ** -1 == 1 == x ** -1 * x and x ** 0 == 1
    assert x ** -2 == (x * x).inverse() and x ** 3 == x * x * x
    assert (x / x) == 1


def test_matrix_algebra_inverse_is_the_matrix_inverse_and_singular_matrices_are_refused():
    M = matrix_algebra(2)
    x = M.element([2, 1, 1, 1])                  # [[2, 1], [1, 1]]: determinant 1
    expected = sympy.Matrix([[2, 1], [1, 1]]).inv()
    assert list(x.inverse()) == list(expected)
    with pytest.raises(ValueError, match="is not invertible in matrix_algebra\\(2\\)"):
        M.element([1, 1, 1, 1]).inverse()


def test_inverses_in_group_diagonal_and_truncated_tensor_algebras():
    T = translation(5)
    shift = T.basis_element(T.basis[1])
    assert shift ** -1 == T.basis_element(T.basis[4]) and shift ** 5 == 1
    D = diagonal(3)
    assert D.element([2, -4, Fraction(1, 3)]) ** -1 == D.element([Fraction(1, 2), Fraction(-1, 4), 3])
    with pytest.raises(ValueError, match="not invertible"):
        D.element([1, 0, 1]).inverse()
    A = tensor_algebra(1, 3)                    # R[t] / t^4: (1 + t)^-1 = 1 - t + t^2 - t^3
    t = A.basis_element(A.basis[1])
    assert (1 + t) ** -1 == 1 - t + t ** 2 - t ** 3
    with pytest.raises(ValueError, match="not invertible"):
        t.inverse()


def test_an_algebra_without_unit_says_so_but_adds_zero_and_compares():
    N = Algebra.from_structure_constants({(0, 0): {1: 1}}, dim=2)     # e0 e0 = e1: nilpotent, no unit
    e0 = N.basis_element(N.basis[0])
    assert N.unit() is None
    assert e0 + 0 == e0 and sum([e0, e0]) == 2 * e0 and (e0 == 1) is False and N.zero() == 0
    for call in (lambda: e0 + 1, lambda: e0 ** 0, lambda: e0.inverse(), lambda: 1 / e0):
        with pytest.raises(ValueError, match="has no unit"):
            call()


def test_iteration_len_and_numpy_arrays():
    H = quaternions()
    x = H.element([1, Fraction(1, 2), 0, -2])
    assert list(x) == [1, sympy.Rational(1, 2), 0, -2] and len(x) == 4
    assert np.asarray(x).tolist() == [1.0, 0.5, 0.0, -2.0] and np.asarray(x, dtype=np.float32).dtype == np.float32
    with pytest.raises(TypeError, match="symbolic coefficients"):
        np.asarray(H.symbols("y"))


@pytest.mark.parametrize("value", ["a", True, None, [1, 2]])
def test_things_that_are_not_scalars_are_refused(value):
    x = quaternions().basis_element("i")
    with pytest.raises(TypeError):
        x + value
    assert (x == value) is False


def test_expressions_take_scalars_and_differences():
    H = quaternions()
    X, Y = Signal("x", H), Signal("y", H)
    assert list((2 * X).formula()) == list((X * 2).formula()) == [2 * v for v in X.formula()]
    assert list((X - Y).formula()) == [a - b for a, b in zip(X.formula(), Y.formula())]
    assert list((X / 2).formula()) == [v / 2 for v in X.formula()] and list((-X).formula()) == [-v for v in X.formula()]
    with pytest.raises(TypeError, match="X: expected an expression"):
        X - 1
    with pytest.raises(ZeroDivisionError, match="divisor"):
        X / 0
