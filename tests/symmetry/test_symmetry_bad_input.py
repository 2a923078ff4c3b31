"""Bad input: clear errors naming the argument, what was expected and what came."""
from __future__ import annotations

import numpy as np
import pytest

from product_interactions.algebra import position, translation
from product_interactions.algebra.symmetry import (bilinear_map, equivariant_constraints, filter_of, finite_group, is_equivariant,
                              linear_map, permutations, product_action, regulariser, rotations_so3, solve,
                              translations)


def test_matrices_that_do_not_match_the_factor_dimension():
    with pytest.raises(ValueError, match=r"action: the action translations\(4\) has 4 x 4 matrices on factor 0, "
                                         r"but the algebra slot of the target \(translation\(5\)\) has dimension 5"):
        equivariant_constraints(translations(4), filter_of(translation(5)))
    with pytest.raises(ValueError, match=r"action\[1\]: .* 3 x 3 matrices on factor 0, .*y slot.* dimension 4"):
        equivariant_constraints((translations(4), translations(3), translations(4)), bilinear_map(4))
    with pytest.raises(ValueError, match=r"action: .* acts on 2 tensor factor\(s\) of shape \(4, 4\), "
                                         r"but .*has shape \(4,\)"):
        equivariant_constraints(product_action(translations(4), translations(4)), linear_map(4))
    with pytest.raises(ValueError, match=r"algebra: .* 4 x 4 matrices on factor 0, but the algebra"):
        translations(4).on(position(3))


def test_a_group_element_that_is_not_invertible():
    with pytest.raises(ValueError, match=r"generators\[1\]: expected an invertible matrix \(a group element\), "
                                         r"got a singular one \(rank 1 of 2\)"):
        finite_group([[[0, 1], [1, 0]], [[1, 2], [2, 4]]])
    with pytest.raises(ValueError, match=r"generators\[1\]: expected size 2 x 2 like generators\[0\], got shape"):
        finite_group([np.eye(2, dtype=int), np.eye(3, dtype=int)])
    with pytest.raises(ValueError, match=r"generators\[0\]: expected a square matrix, got shape \(2, 3\)"):
        finite_group([[[1, 0, 0], [0, 1, 0]]])
    with pytest.raises(TypeError, match=r"generators\[0\]\[0, 1\]: expected an exact number"):
        finite_group([[[1, 0.1], [0, 1]]])
    with pytest.raises(TypeError, match=r"generators: expected a non-empty sequence of square matrices"):
        finite_group([])


def test_a_target_in_another_algebra_than_the_actions():
    bound = translations(4).on(translation(4))
    assert bound.algebras == (translation(4),)
    with pytest.raises(ValueError, match=r"target: the algebra slot of the target is position\(4\) at factor 0, "
                                         r"but the action translations\(4\) acts on translation\(4\) there"):
        equivariant_constraints(bound, filter_of(position(4)))
    with pytest.raises(ValueError, match=r"target: the x slot of the target is position\(4\)"):
        regulariser(bound, bilinear_map(position(4)))
    assert solve(equivariant_constraints(bound, filter_of(translation(4)))).dim == 4
    assert solve(equivariant_constraints(bound, linear_map(4))).dim == 4            # a bare R^4 is fine
    # rotations_so3(lmax) acts on the Clebsch-Gordan factor of that lmax, dimension (lmax + 1)^2 = 9.
    with pytest.raises(ValueError, match=r"target: the algebra slot of the target is translation\(9\) at factor 0, "
                                         r"but the action rotations_so3\(2\) acts on clebsch_gordan\(2\) there"):
        equivariant_constraints(rotations_so3(2), filter_of(translation(9)))


def test_wrong_types_and_options():
    T = translations(3)
    with pytest.raises(TypeError, match=r"target: expected a target from linear_map, bilinear_map or filter_of, "
                                        r"got Translation"):
        equivariant_constraints(T, translation(3))
    with pytest.raises(ValueError, match=r"action: expected one Action or 3 \(one per slot: x, y, out\), got 2"):
        equivariant_constraints((T, T), bilinear_map(3))
    with pytest.raises(TypeError, match=r"action\[0\]: expected an Action, got ndarray"):
        equivariant_constraints((np.eye(3), T), linear_map(3))
    with pytest.raises(ValueError, match=r"action\[1\]: expected generators of kinds \('discrete',\) like "
                                         r"action\[0\]"):
        equivariant_constraints((T, permutations(3)), linear_map(3))
    with pytest.raises(TypeError, match=r"algebra: expected an Algebra \(its product is kept fixed\), got int"):
        filter_of(3)
    with pytest.raises(TypeError, match=r"x: expected an Algebra, a dimension \(int\) or a shape"):
        bilinear_map("R3")
    with pytest.raises(ValueError, match=r"n: expected a positive int, got 0"):
        translations(0)
    with pytest.raises(TypeError, match=r"cyclic: expected a bool"):
        translations(3, cyclic=1)
    system = equivariant_constraints(T, linear_map(3))
    with pytest.raises(ValueError, match=r"method: expected one of 'auto', 'exact', 'numeric', got 'fast'"):
        solve(system, method="fast")
    with pytest.raises(TypeError, match=r"constraints: expected the result of equivariant_constraints"):
        solve(system.rows)
    solution = solve(system)
    with pytest.raises(ValueError, match=r"params: expected a last axis of length 3"):
        solution(np.ones(4))
    with pytest.raises(ValueError, match=r"symbolic: needs an exact basis"):
        solve(system, method="numeric").symbolic()
    with pytest.raises(ValueError, match=r"over: expected one of 'generators', 'elements', got 'all'"):
        regulariser(T, linear_map(3), over="all")
    with pytest.raises(ValueError, match=r"unknowns: expected shape \(3, 3\)"):
        regulariser(T, linear_map(3))(np.ones(3))
    with pytest.raises(ValueError, match=r"limit: the group generated by permutations\(5\) has more than 100"):
        regulariser(permutations(5), linear_map(5), over="elements", limit=100)
    with pytest.raises(TypeError, match=r"operator: expected a callable"):
        is_equivariant(np.eye(3), T)
    with pytest.raises(ValueError, match=r"operator: expected an output of shape \(3,\) .*got shape \(2,\)"):
        is_equivariant(lambda x: x[:2], T)
    with pytest.raises(ValueError, match=r"samples: expected a positive int, got 0"):
        is_equivariant(lambda x: x, T, samples=0)
    with pytest.raises(ValueError, match=r"over: a Lie group has infinitely many elements"):
        regulariser(rotations_so3(1), linear_map(4), over="elements")
    with pytest.raises(ValueError, match=r"lmax: expected a non-negative int, got -1"):
        rotations_so3(-1)
    with pytest.raises(ValueError, match=r"lmax\[1\]: expected a non-negative int, got -2"):
        rotations_so3([1, -2])
    with pytest.raises(ValueError, match=r"lmax: expected an int or a non-empty sequence of degrees"):
        rotations_so3([])


def test_a_solution_refuses_torch_parameters_rather_than_dropping_their_gradient():
    torch = pytest.importorskip("torch")
    solution = solve(equivariant_constraints(translations(3), linear_map(3)))
    with pytest.raises(TypeError, match=r"params: expected a numpy array .* got torch.Tensor; for torch or JAX"):
        solution(torch.ones(3, requires_grad=True))
