"""The Gaunt algebra: integrals of three real harmonics, pointwise products of functions on the sphere."""
import itertools

import numpy as np
import pytest
import sympy
from sympy.physics.wigner import real_gaunt

from product_interactions.algebra.so3 import basis_index, clebsch_gordan_tensor, gaunt, gaunt_tensor, spherical_harmonics
from product_interactions.algebra.so3.quadrature import sphere_quadrature
from so3_helpers import unit_points


def test_structure_constants_are_integrals_of_three_harmonics():
    lmax = 3
    points, weights = sphere_quadrature(3 * lmax)
    Y = spherical_harmonics(lmax, points)
    assert np.abs(np.einsum("n,ni,nj,nk->ijk", weights, Y, Y, Y) - gaunt_tensor(lmax)).max() < 1e-13


def test_matches_sympy_real_gaunt():
    # sympy's real harmonics keep the Condon-Shortley phase: Z_l^m = (-1)^m Y_l^m (ours), so the signs differ
    G = gaunt_tensor(2, dtype=object)
    for (l1, l2, l) in itertools.product(range(3), repeat=3):
        for m1, m2, m in itertools.product(range(-l1, l1 + 1), range(-l2, l2 + 1), range(-l, l + 1)):
            expected = (-1) ** (m1 + m2 + m) * real_gaunt(l1, l2, l, m1, m2, m)
            assert sympy.simplify(G[basis_index(l1, m1), basis_index(l2, m2), basis_index(l, m)] - expected) == 0


def test_pointwise_product_of_functions():
    # f, g of degree <= 1 have a product of degree <= 2: nothing is truncated at lmax = 2
    x, y = np.zeros(9), np.zeros(9)
    x[:4], y[:4] = np.random.default_rng(0).normal(size=(2, 4))
    product = np.einsum("i,j,ijk->k", x, y, gaunt_tensor(2))
    Y = spherical_harmonics(2, unit_points(20))
    assert np.allclose((Y @ x) * (Y @ y), Y @ product, atol=1e-13)


def test_positive_multiple_of_clebsch_gordan_per_path():
    G, C = gaunt_tensor(4), clebsch_gordan_tensor(4)
    nonzero = G != 0
    assert np.all(C[nonzero] != 0) and np.all(G[nonzero] / C[nonzero] > 0)


def test_algebra_queries():
    G = gaunt(1)
    assert G.is_commutative() and not G.is_associative()
    assert G.unit() == 2 * sympy.sqrt(sympy.pi) * G.basis_element("e^0_0")
    assert np.allclose(G.structure_constants(float), gaunt_tensor(1), rtol=0, atol=1e-15)
    assert gaunt(1) == G and gaunt(1) is not G          # equal, independent instances
    with pytest.raises(ValueError, match="lmax"):
        gaunt(-2)
