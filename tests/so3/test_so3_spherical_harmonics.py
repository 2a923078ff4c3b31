"""Real spherical harmonics: pinned conventions, the exact formulas, orthonormality, bad input."""
import numpy as np
import pytest
import sympy

from product_interactions.algebra.so3 import basis_index, spherical_harmonic_formula, spherical_harmonics
from product_interactions.algebra.so3.quadrature import sphere_quadrature
from so3_helpers import unit_points

X, Y, Z = sympy.symbols("x y z", real=True)


def test_low_degrees_pinned():
    u = unit_points(20)
    x, y, z = u.T
    c = 1 / np.sqrt(4 * np.pi)
    expected = np.stack([c + 0 * x, np.sqrt(3) * c * y, np.sqrt(3) * c * z, np.sqrt(3) * c * x,
                         np.sqrt(15) * c * x * y, np.sqrt(15) * c * y * z, np.sqrt(5) / 2 * c * (3 * z**2 - 1),
                         np.sqrt(15) * c * x * z, np.sqrt(15) / 2 * c * (x**2 - y**2)], -1)
    assert np.allclose(spherical_harmonics(2, u), expected, atol=1e-14)


def test_no_condon_shortley_phase_against_sympy_ynm():
    # ours: Y^m = sqrt(2) (-1)^m Re Ynm(l, m) and Y^-m = sqrt(2) (-1)^m Im Ynm(l, m) for m > 0, Ynm with CS phase
    theta, phi = 0.7, 2.1
    point = [np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)]
    values = spherical_harmonics(4, point)
    for l in range(5):
        for m in range(0, l + 1):
            ynm = complex(sympy.Ynm(l, m, theta, phi).expand(func=True).evalf(20))
            scale = 1 if m == 0 else np.sqrt(2) * (-1) ** m
            assert values[basis_index(l, m)] == pytest.approx(scale * ynm.real, abs=1e-13)
            if m:
                assert values[basis_index(l, -m)] == pytest.approx(scale * ynm.imag, abs=1e-13)


@pytest.mark.parametrize("lmax", [4])
def test_numeric_matches_the_exact_formulas(lmax):
    u = unit_points(30, seed=1)
    values = spherical_harmonics(lmax, u)
    for l in range(lmax + 1):
        for m in range(-l, l + 1):
            formula = sympy.lambdify((X, Y, Z), spherical_harmonic_formula(l, m), "numpy")
            assert np.allclose(np.broadcast_to(formula(*u.T), (30,)), values[:, basis_index(l, m)], atol=1e-13)


def test_formulas_are_exact_harmonic_polynomials():
    for l, m in [(2, 0), (3, -2), (4, 3)]:
        f = spherical_harmonic_formula(l, m)
        assert sympy.Poly(f, X, Y, Z).is_homogeneous and sympy.Poly(f, X, Y, Z).total_degree() == l
        assert sympy.simplify(sum(sympy.diff(f, v, 2) for v in (X, Y, Z))) == 0
        assert not f.atoms(sympy.Float)
    assert spherical_harmonic_formula(3, 3) == sympy.sqrt(70) * X * (X**2 - 3 * Y**2) / (8 * sympy.sqrt(sympy.pi))


def test_orthonormal_on_the_sphere():
    lmax = 8
    points, weights = sphere_quadrature(2 * lmax)
    values = spherical_harmonics(lmax, points)
    assert np.abs(values.T @ (weights[:, None] * values) - np.eye((lmax + 1) ** 2)).max() < 1e-12


def test_solid_harmonics_and_normalisation_of_points():
    u, r = unit_points(10, seed=2), np.linspace(0.5, 3, 10)[:, None]
    degrees = np.repeat(np.arange(4), 2 * np.arange(4) + 1)
    assert np.allclose(spherical_harmonics(3, r * u, normalize=False), r**degrees * spherical_harmonics(3, u))
    assert np.allclose(spherical_harmonics(3, r * u), spherical_harmonics(3, u))
    zero = spherical_harmonics(2, np.zeros(3))
    assert zero[0] == pytest.approx(1 / np.sqrt(4 * np.pi)) and not zero[1:].any()


def test_batch_shapes_and_dtypes():
    points = np.random.default_rng(0).normal(size=(2, 5, 3))
    out = spherical_harmonics(3, points)
    assert out.shape == (2, 5, 16) and out.dtype == np.float64
    assert np.allclose(out[1, 2], spherical_harmonics(3, points[1, 2]))
    single = spherical_harmonics(3, points.astype(np.float32))
    assert single.dtype == np.float32 and np.allclose(single, out, atol=1e-5)
    assert spherical_harmonics(1, [[0, 0, 1]]).shape == (1, 4)           # integers are promoted
    assert spherical_harmonics(0, np.ones((0, 3))).shape == (0, 1)


@pytest.mark.parametrize("points", [np.zeros(2), np.zeros((4, 2)), np.zeros(()), np.zeros((3, 3, 4))])
def test_points_of_the_wrong_shape(points):
    with pytest.raises(ValueError, match=r"points: expected an array of shape \(\.\.\., 3\)"):
        spherical_harmonics(2, points)


def test_bad_arguments():
    with pytest.raises(TypeError, match="points"):
        spherical_harmonics(2, ["a", "b", "c"])
    with pytest.raises(TypeError, match="points"):
        spherical_harmonics(2, np.zeros(3, dtype=complex))
    with pytest.raises(ValueError, match="lmax"):
        spherical_harmonics(-1, np.zeros(3))
    with pytest.raises(TypeError, match="lmax"):
        spherical_harmonics(2.0, np.zeros(3))
    with pytest.raises(TypeError, match="normalize"):
        spherical_harmonics(2, np.zeros(3), normalize="yes")
    with pytest.raises(ValueError, match="m: expected an int in -1..1"):
        spherical_harmonic_formula(1, 2)
