"""`regulariser` (soft constraints, autograd) and `is_equivariant` (numeric checks), seeded."""
from __future__ import annotations

import autograd
import numpy as np
import pytest

from product_interactions.algebra import position, translation
from product_interactions.algebra.symmetry import (bilinear_map, equivariant_constraints, filter_of, is_equivariant, linear_map,
                              permutations, regulariser, solve, translations)

T = translations(4)
CASES = {
    "convolution": ((T.trivial_on(4), T, T), bilinear_map(4)),
    "truncated": ((translations(4, False).trivial_on(4), translations(4, False), translations(4, False)),
                  bilinear_map(4)),
    "position filter": (T, filter_of(position(4))),
    "permutations": (permutations(4), linear_map(4)),
}


def operator_of(target, unknowns):
    """The operator with the given unknowns, as a callable on arrays."""
    if target.symbol == "lam":
        return lambda x, y: np.einsum("i,j,ijk->k", x, y, unknowns)
    if target.symbol == "K":
        lam = target.algebra.structure_constants()
        return lambda x: np.einsum("i,j,ijk->k", unknowns, x, lam)
    return lambda x: unknowns @ x


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("over", ["generators", "elements"])
def test_regulariser_is_zero_on_the_solutions_and_positive_off_them(name, over):
    action, target = CASES[name]
    rng = np.random.default_rng(1)
    penalty = regulariser(action, target, over=over)
    solution = solve(equivariant_constraints(action, target))
    for _ in range(3):
        assert penalty(solution(rng.standard_normal(solution.dim))) < 1e-20
        assert penalty(rng.standard_normal(target.shape)) > 1e-3


def test_regulariser_gradient():
    action, target = CASES["convolution"]
    penalty = regulariser(action, target)
    matrix = equivariant_constraints(action, target).matrix()
    lam = np.random.default_rng(2).standard_normal(target.shape)
    expected = 2 * (matrix.T @ (matrix @ lam.reshape(-1)))          # d/du |A u|^2
    assert np.allclose(autograd.grad(penalty)(lam).reshape(-1), expected, atol=1e-12)


def test_the_parametrisation_is_differentiable():
    solution = solve(equivariant_constraints(*CASES["convolution"]))
    loss = lambda params: np.sum(solution(params) ** 2)  # noqa: E731
    params = np.random.default_rng(3).standard_normal(solution.dim)
    flat = solution.basis.reshape(solution.dim, -1)
    assert np.allclose(autograd.grad(loss)(params), 2 * flat @ (flat.T @ params))
    assert solution(np.ones((2, solution.dim))).shape == (2, 4, 4, 4)      # batches of parameters


@pytest.mark.parametrize("name", CASES)
def test_derived_operators_are_equivariant_and_random_ones_are_not(name):
    action, target = CASES[name]
    rng = np.random.default_rng(4)
    solution = solve(equivariant_constraints(action, target))
    derived = operator_of(target, solution(rng.standard_normal(solution.dim)))
    unconstrained = operator_of(target, rng.standard_normal(target.shape))
    assert is_equivariant(derived, action, seed=5)
    assert not is_equivariant(unconstrained, action, seed=5)


def test_translation_filters_are_convolutions():
    K = np.random.default_rng(6).standard_normal(4)
    lam = translation(4).structure_constants()
    assert is_equivariant(lambda x: np.einsum("i,j,ijk->k", K, x, lam), T, samples=4, seed=0)


@pytest.mark.parametrize("size", [1.0, 1e12])
def test_is_equivariant_scales_its_tolerance_with_the_output(size):
    """Issue 39: circular convolution by FFT commutes with every cyclic shift (a textbook fact), up to rounding of
    order eps times its output; scaled by 1e12 those rounding errors are about 1e-4 in absolute terms, far above
    the tolerance 1e-8, yet still an equivariant operator.  A relative defect of 1e-5 is not equivariant at
    either size."""
    rng = np.random.default_rng(3)
    n, kernel = 16, rng.standard_normal(16)
    convolve = lambda x: size * np.fft.ifft(np.fft.fft(x) * np.fft.fft(kernel)).real  # noqa: E731
    T = translations(n)
    x = rng.standard_normal(n)
    assert np.allclose(convolve(np.roll(x, 1)), np.roll(convolve(x), 1), rtol=1e-12, atol=1e-12 * size)
    if size > 1:    # the rounding error is far above the absolute tolerance: only a scaled one passes it
        assert np.max(np.abs(convolve(np.roll(x, 3)) - np.roll(convolve(x), 3))) > 1e-6
    assert is_equivariant(convolve, T, seed=4, tolerance=1e-8)
    assert not is_equivariant(lambda x: convolve(x) * (1 + 1e-5 * np.arange(n)), T, seed=4, tolerance=1e-8)
