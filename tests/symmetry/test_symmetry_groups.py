"""Permutations, finite groups given by matrices, and actions on tensor products."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

from product_interactions.algebra import diagonal, position, tensor_product, translation
from product_interactions.algebra.symmetry import (bilinear_map, diagonal_action, equivariant_constraints, filter_of, finite_group,
                              linear_map, permutations, product_action, solve, translations)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_permutation_equivariant_linear_maps_are_a_identity_plus_b_ones(n):
    solution = solve(equivariant_constraints(permutations(n), linear_map(n)))
    assert solution.method == "exact" and solution.dim == 2
    # The general solution t_0 W_0 + t_1 W_1 equals a I + b 11^T with a = W[0, 0] - W[0, 1], b = W[0, 1]; as I
    # and 11^T are independent for n >= 2 and the dimension is 2, the two spans are equal.
    general = solution.symbolic("t")
    a, b = general[0, 0] - general[0, 1], general[0, 1]
    expected = a * np.eye(n, dtype=int) + b * np.ones((n, n), dtype=int)
    assert all(sympy.expand(v) == 0 for v in (general - expected).reshape(-1))


def test_permutations_of_points_fix_the_product_up_to_two_constants():
    # S_3 on all three slots of a bilinear map R^3 x R^3 -> R^3: one value per orbit of index triples
    # (all equal, i = j != k, i = k != j, j = k != i, all distinct): 5.
    assert solve(equivariant_constraints(permutations(3), bilinear_map(3))).dim == 5
    # The position algebra's own product g_a g_b = delta_ab g_a is one of them.
    lam = position(3).structure_constants(dtype=object)
    rows = equivariant_constraints(permutations(3), bilinear_map(position(3))).rows
    assert all(sum(c * lam.reshape(-1)[i] for i, c in row.items()) == 0 for row in rows)


def test_a_finite_group_from_matrices():
    quarter_turn = [[0, -1], [1, 0]]                 # Z_4 rotating the plane
    solution = solve(equivariant_constraints(finite_group([quarter_turn]), linear_map(2)))
    assert solution.dim == 2                         # a I + b J: the complex numbers
    reflection = [[1, 0], [0, -1]]                   # with a reflection: the dihedral group D_4
    assert solve(equivariant_constraints(finite_group([quarter_turn, reflection]), linear_map(2))).dim == 1


def test_product_and_diagonal_actions_on_tensor_products():
    T, S = translations(3), permutations(2)
    both = product_action(T, S)
    assert both.shape == (3, 2) and len(both) == 2 and both.kind == "discrete"
    # W on R^3 (x) R^2 commuting with shifts of the first axis and swaps of the second: circulant (x) (aI + b11^T).
    assert solve(equivariant_constraints(both, linear_map((3, 2)))).dim == 3 * 2
    with pytest.raises(ValueError, match=r"actions\[1\]: expected generators of kinds"):
        diagonal_action(T, permutations(3))
    A = tensor_product(translation(3), diagonal(2))
    assert solve(equivariant_constraints(product_action(T, S), filter_of(A))).dim == 3   # K = k (x) (1, 1)


def test_matrices_are_exact_and_kronecker_ordered():
    T = translations(2)
    both = product_action(T, translations(3))
    first, second = both.matrices(dtype=object)
    assert first.tolist() == np.kron(T.matrices(dtype=object)[0], np.eye(3, dtype=int)).tolist()
    assert second.tolist() == np.kron(np.eye(2, dtype=int), translations(3).matrices(dtype=object)[0]).tolist()
