"""SO(3): the Clebsch-Gordan product derived from infinitesimal equivariance on real irreps."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg
import sympy

from product_interactions.algebra.so3 import clebsch_gordan, wigner_D
from product_interactions.algebra.symmetry import (bilinear_map, equivariant_constraints, filter_of, is_equivariant, linear_map,
                              product_action, regulariser, rotations_so3, solve, translations)

LMAX = 3
CG = clebsch_gordan(LMAX).structure_constants(dtype=object)


def block(l):
    return slice(l * l, (l + 1) ** 2)


def irreps(l1, l2, l):
    return rotations_so3([l1]), rotations_so3([l2]), rotations_so3([l])


def on_triangle(l1, l2, l):
    return abs(l1 - l2) <= l <= l1 + l2


@pytest.mark.parametrize("l1, l2, l", list(itertools.product(range(3), repeat=3)))
def test_exact_solutions_are_the_clebsch_gordan_paths(l1, l2, l):
    solution = solve(equivariant_constraints(irreps(l1, l2, l), bilinear_map(2 * l1 + 1, 2 * l2 + 1, 2 * l + 1)))
    assert solution.method == "exact"
    assert solution.dim == (1 if on_triangle(l1, l2, l) else 0)
    if solution.dim:
        [vector] = solution.exact_basis
        path = CG[block(l1), block(l2), block(l)]
        pivot = next(index for index, value in np.ndenumerate(vector) if value != 0)
        scale = path[pivot] / vector[pivot]
        assert scale != 0
        assert all(sympy.radsimp(scale * v - c) == 0 for v, c in zip(vector.reshape(-1), path.reshape(-1)))


@pytest.mark.parametrize("l1, l2, l", [t for t in itertools.product(range(LMAX + 1), repeat=3) if LMAX in t])
def test_numeric_solutions_are_the_clebsch_gordan_paths(l1, l2, l):
    solution = solve(equivariant_constraints(irreps(l1, l2, l), bilinear_map(2 * l1 + 1, 2 * l2 + 1, 2 * l + 1)),
                     method="numeric")
    assert solution.method == "numeric"
    assert solution.dim == (1 if on_triangle(l1, l2, l) else 0)
    if solution.dim:
        vector = solution.basis[0].reshape(-1)
        path = CG[block(l1), block(l2), block(l)].astype(float).reshape(-1)
        assert abs(abs(vector @ path) - np.linalg.norm(vector) * np.linalg.norm(path)) < 1e-10


def test_the_generators_integrate_to_the_wigner_d_matrices():
    rng = np.random.default_rng(0)
    L = [np.array([[0, 0, 0], [0, 0, -1], [0, 1, 0]]), np.array([[0, 0, 1], [0, 0, 0], [-1, 0, 0]]),
         np.array([[0, -1, 0], [1, 0, 0], [0, 0, 0]])]
    for l in range(LMAX + 1):
        J = rotations_so3([l]).matrices()
        t = rng.standard_normal(3)
        rotation = scipy.linalg.expm(sum(a * g for a, g in zip(t, L)))
        assert np.allclose(scipy.linalg.expm(sum(a * g for a, g in zip(t, J))), wigner_D(l, rotation), atol=1e-12)


def test_the_clebsch_gordan_algebra_is_equivariant_and_its_filters_are_scalars():
    R = rotations_so3(2)
    A = clebsch_gordan(2)
    # Products on V_0 + V_1 + V_2 commuting with rotations: one per path (l1, l2, l), all degrees <= 2.
    solution = solve(equivariant_constraints(R, bilinear_map(A)))
    assert solution.method == "exact"        # 729 unknowns with square roots, in 102 blocks of at most 32
    paths = [t for t in itertools.product(range(3), repeat=3) if on_triangle(*t)]
    assert solution.dim == len(paths) == 15
    lam = A.structure_constants()
    assert regulariser(R, bilinear_map(A))(lam) < 1e-24
    assert is_equivariant(lambda x, y: np.einsum("i,j,ijk->k", x, y, lam), (R, R, R), seed=1)
    # O_K(x) = K x commutes with rotations only for K = c e^0_0 (the unit).
    [K] = solve(equivariant_constraints(R, filter_of(A))).exact_basis
    assert list(K) == [1] + [0] * 8


def test_derived_and_random_bilinear_maps():
    actions = irreps(1, 2, 2)
    target = bilinear_map(3, 5, 5)
    solution = solve(equivariant_constraints(actions, target))
    rng = np.random.default_rng(2)
    derived, unconstrained = solution(rng.standard_normal(1)), rng.standard_normal(target.shape)
    penalty = regulariser(actions, target)
    assert penalty(derived) < 1e-24 and penalty(unconstrained) > 1e-2
    as_operator = lambda lam: lambda x, y: np.einsum("i,j,ijk->k", x, y, lam)  # noqa: E731
    assert is_equivariant(as_operator(derived), actions, seed=3)
    assert not is_equivariant(as_operator(unconstrained), actions, seed=3)


def test_rotations_times_translations():
    # SO(3) on V_1 (Lie) times Z_3 shifting 3 points (discrete), on R^3 (x) V_1: a mixed product action.  The
    # linear maps commuting with both are circulant (x) c I (3 values): V_1 is absolutely irreducible.
    action = product_action(translations(3), rotations_so3([1]))
    assert action.kind == "mixed" and action.shape == (3, 3)
    solution = solve(equivariant_constraints(action, linear_map((3, 3))))
    assert solution.dim == 3
    W = solution(np.array([1.0, -2.0, 0.5])).reshape(9, 9)
    assert is_equivariant(lambda x: (W @ x.reshape(-1)).reshape(3, 3), action, seed=7)
    assert not is_equivariant(lambda x: (W @ x.reshape(-1)).reshape(3, 3) + x ** 2, action, seed=7)
