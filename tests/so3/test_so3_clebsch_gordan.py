"""Real Clebsch-Gordan coefficients and the Clebsch-Gordan algebra."""
import importlib
import itertools

import numpy as np
import pytest
import sympy
from sympy.physics.wigner import clebsch_gordan as sympy_clebsch_gordan

from product_interactions.algebra import Algebra
from product_interactions.algebra.so3 import (basis_index, basis_labels, clebsch_gordan, clebsch_gordan_coefficients,
                         clebsch_gordan_path, clebsch_gordan_tensor, feature_dim, random_rotation, representation)
from product_interactions.algebra.so3 import cache
from product_interactions.algebra.so3._clebsch_gordan import complex_clebsch_gordan, paths

cg_module = importlib.import_module("product_interactions.algebra.so3._clebsch_gordan")   # the attribute is the function of that name

LMAX = 6


def test_complex_coefficients_match_sympy():
    # the 3j symmetry classes used to save sympy calls give sympy's own clebsch_gordan values
    for l1, l2, l in paths(3):
        for m1, m2 in itertools.product(range(-l1, l1 + 1), range(-l2, l2 + 1)):
            expected = sympy_clebsch_gordan(l1, l2, l, m1, m2, m1 + m2)
            assert complex_clebsch_gordan(l1, m1, l2, m2, l, m1 + m2).to_sympy() == expected


def test_real_coefficients_are_exact_real_numbers_obeying_the_selection_rule():
    for path in paths(LMAX):
        for (m1, m2, m), value in clebsch_gordan_coefficients(*path).items():
            assert value.is_real and value != 0 and not value.has(sympy.I) and not value.atoms(sympy.Float)
            assert abs(m) in (abs(m1) + abs(m2), abs(abs(m1) - abs(m2)))


def test_the_sign_part_of_the_selection_rule_loses_nothing():
    # the entries skipped by the sign rule (m >= 0 iff m1, m2 of one type, on even paths) are zero
    for l1, l2, l in paths(3):
        for m1, m2, m in itertools.product(range(-l1, l1 + 1), range(-l2, l2 + 1), range(-l, l + 1)):
            cosine = ((m1 >= 0) == (m2 >= 0)) != bool((l1 + l2 + l) % 2)
            if abs(m) in (abs(m1) + abs(m2), abs(abs(m1) - abs(m2))) and (m >= 0) != cosine:
                assert not cg_module._real_entry(l1, m1, l2, m2, l, m)


def test_orthonormal_columns_per_path():
    for l1, l2, l in paths(LMAX):
        C = clebsch_gordan_path(l1, l2, l).reshape(-1, 2 * l + 1)
        assert np.abs(C.T @ C - np.eye(2 * l + 1)).max() < 1e-13
    exact = clebsch_gordan_path(2, 1, 2, dtype=object).reshape(-1, 5)
    assert sympy.Matrix(exact.T @ exact).applyfunc(sympy.nsimplify) == sympy.eye(5)


def test_swapping_the_factors_gives_the_sign_of_the_path():
    for l1, l2, l in paths(LMAX):
        swapped = np.transpose(clebsch_gordan_path(l2, l1, l), (1, 0, 2))
        assert np.array_equal(swapped, (-1) ** (l1 + l2 - l) * clebsch_gordan_path(l1, l2, l))


def test_commutativity_per_path_through_the_algebra():
    C = clebsch_gordan(3)
    for i, j, k, value in C.entries():
        l1, l2, l = (int(C.basis[n].split("_")[0][2:]) for n in (i, j, k))
        assert C.product_of_basis(j, i)[k] == (-1) ** (l1 + l2 - l) * value


def test_vector_paths_are_dot_and_cross_product():
    x, y = np.random.default_rng(0).normal(size=(2, 3))
    lam = clebsch_gordan_tensor(1)
    xf, yf = np.r_[0, x[[1, 2, 0]]], np.r_[0, y[[1, 2, 0]]]       # l = 1 features are (y, z, x)
    product = np.einsum("i,j,ijk->k", xf, yf, lam)
    assert product[0] == pytest.approx(x @ y / np.sqrt(3))
    assert np.allclose(product[1:], np.cross(x, y)[[1, 2, 0]] / np.sqrt(2))
    C = clebsch_gordan(1)
    e = {axis: C.basis_element(f"e^1_{m}") for axis, m in zip("yzx", (-1, 0, 1))}
    assert e["x"] * e["y"] == e["z"] / sympy.sqrt(2) and e["x"] * e["x"] == C.basis_element("e^0_0") / sympy.sqrt(3)


def test_algebra_queries():
    C = clebsch_gordan(1)
    assert C.dim == 4 and C.basis == basis_labels(1)
    assert not C.is_commutative() and not C.is_anticommutative() and not C.is_associative()
    assert C.unit() == C.basis_element("e^0_0")
    assert clebsch_gordan(0).is_associative() and clebsch_gordan(0).is_commutative()
    P = clebsch_gordan(1, parity=True)
    assert P.dim == 8 and not P.is_associative() and P.unit() == P.basis_element("e^0e_0")
    again = clebsch_gordan(1)                   # the path tables are cached; instances are cheap and independent
    again.name = "renamed"
    assert again == C and C.name == "clebsch_gordan(1)"


def test_the_unit_holds_at_every_degree():
    C = clebsch_gordan_tensor(LMAX)
    assert np.array_equal(C[0], np.eye(feature_dim(LMAX))) and np.array_equal(C[:, 0], np.eye(feature_dim(LMAX)))


def test_not_associative_even_without_truncation():
    # three l = 1 elements only reach l <= 3, so at lmax = 3 nothing is truncated, and still (x y) z != x (y z)
    lam = clebsch_gordan_tensor(3)
    x, y, z = (np.r_[0, v, np.zeros(12)] for v in np.random.default_rng(1).normal(size=(3, 3)))
    mul = lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)  # noqa: E731
    assert np.abs(mul(mul(x, y), z) - mul(x, mul(y, z))).max() > 0.1


def test_the_bypassed_validation_agrees():
    C = clebsch_gordan(1, parity=True)
    table = {}
    for i, j, k, value in C.entries():
        table.setdefault((i, j), {})[k] = value
    assert Algebra.from_structure_constants(table, basis=C.basis, name=C.name) == C
    assert np.allclose(C.structure_constants(float), clebsch_gordan_tensor(1, parity=True), rtol=0, atol=1e-15)


def test_equivariance_under_100_rotations():
    lam = clebsch_gordan_tensor(4)
    D = representation(4, random_rotation(seed=11, size=100))
    x, y = np.random.default_rng(12).normal(size=(2, 25))
    for dtype, tolerance in ((np.float64, 1e-10), (np.float32, 1e-4)):
        Dc, xc, yc, lamc = (a.astype(dtype) for a in (D, x, y, lam))
        mul = lambda a, b: np.einsum("...i,...j,ijk->...k", a, b, lamc)  # noqa: E731
        assert np.abs(mul(Dc @ xc, Dc @ yc) - Dc @ mul(xc, yc)).max() <= tolerance


def test_equivariance_of_the_exact_algebra_numerically():
    C = clebsch_gordan(2)
    lam = C.structure_constants(float)
    assert np.allclose(lam, clebsch_gordan_tensor(2), rtol=0, atol=1e-15)
    D = representation(2, random_rotation(seed=5))
    x, y = np.random.default_rng(6).normal(size=(2, 9))
    assert np.allclose(np.einsum("i,j,ijk->k", D @ x, D @ y, lam), D @ np.einsum("i,j,ijk->k", x, y, lam))


def test_parity_odd_paths_change_sign_under_inversion():
    lmax = 2
    lam = clebsch_gordan_tensor(lmax, parity=True)
    g = -random_rotation(seed=9, size=10)                            # improper elements of O(3)
    D = representation(lmax, g, parity=True)
    x, y = np.random.default_rng(10).normal(size=(2, 18))
    mul = lambda a, b: np.einsum("...i,...j,ijk->...k", a, b, lam)  # noqa: E731
    assert np.abs(mul(D @ x, D @ y) - D @ mul(x, y)).max() < 1e-12
    odd, even = (np.array([basis_index(l, m, p) for l in range(lmax + 1) for m in range(-l, l + 1)])
                 for p in (-1, 1))
    xo, yo, xe = np.zeros(18), np.zeros(18), np.zeros(18)
    xo[odd], yo[odd], xe[even] = x[odd], y[odd], x[even]
    inversion = representation(lmax, -np.eye(3), parity=True)
    assert np.allclose(inversion @ xo, -xo) and np.allclose(inversion @ xe, xe)
    assert not mul(xo, yo)[odd].any() and not mul(xe, yo)[even].any()        # odd x odd is even, even x odd odd
    assert np.array_equal(lam[np.ix_(even, even, even)], clebsch_gordan_tensor(lmax))


def test_disk_cache_round_trip(monkeypatch, tmp_path):
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(tmp_path))
    cg_module.path_table.cache_clear()
    fresh = cg_module.path_table(2)
    files = list((tmp_path / "so3").glob("clebsch_gordan-lmax2-*.json"))
    assert len(files) == 1
    load = lambda: cache.load_table("clebsch_gordan", 2, max_entries=10**4, largest_prime=7)
    assert load() == fresh
    files[0].write_text("__import__('os')")
    with pytest.raises(ValueError, match="not valid JSON"):
        load()
    cg_module.path_table.cache_clear()
    with pytest.warns(RuntimeWarning, match="recomputing"):
        assert cg_module.path_table(2) == fresh                         # recomputed and rewritten
    assert load() == fresh
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", "off")
    assert cache.cache_dir() is None
    cg_module.path_table.cache_clear()


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2.0, TypeError), (None, TypeError)])
def test_bad_lmax(bad, error):
    with pytest.raises(error, match="lmax"):
        clebsch_gordan(bad)
    with pytest.raises(error, match="lmax"):
        clebsch_gordan_tensor(bad)
    with pytest.raises(TypeError, match="parity"):
        clebsch_gordan(1, parity=1)
    with pytest.raises(ValueError, match="l1"):
        clebsch_gordan_path(-1, 0, 0)
