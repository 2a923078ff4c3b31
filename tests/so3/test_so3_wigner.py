"""Wigner-D matrices: homomorphism, equivariance of the harmonics, Euler angles, exact matrices, parity."""
import numpy as np
import pytest
import sympy

from product_interactions.algebra.so3 import (basis_index, random_rotation, representation, rotation_from_euler, spherical_harmonics,
                         wigner_D, wigner_D_exact, wigner_D_from_euler)

LMAX = 6


def test_homomorphism():
    R1, R2 = random_rotation(seed=1, size=20), random_rotation(seed=2, size=20)
    for l in range(LMAX + 1):
        D1, D2, D12 = wigner_D(l, R1), wigner_D(l, R2), wigner_D(l, R1 @ R2)
        assert D12.shape == (20, 2 * l + 1, 2 * l + 1)
        assert np.abs(D12 - D1 @ D2).max() < 1e-12
        assert np.abs(np.swapaxes(D1, 1, 2) @ D1 - np.eye(2 * l + 1)).max() < 1e-12
    assert np.allclose(wigner_D(3, np.eye(3)), np.eye(7), atol=1e-14)


def test_harmonics_rotate_with_D_under_100_rotations():
    R = random_rotation(seed=7, size=100)
    points = np.random.default_rng(8).normal(size=(25, 3))
    D = representation(LMAX, R)
    rotated = spherical_harmonics(LMAX, np.einsum("rij,nj->rni", R, points))
    assert np.abs(rotated - np.einsum("rij,nj->rni", D, spherical_harmonics(LMAX, points))).max() < 1e-10


def test_rotation_about_z_mixes_m_and_minus_m():
    alpha = 0.4
    D = wigner_D(3, rotation_from_euler(alpha, 0.0, 0.0))
    for m in range(1, 4):
        c, s = np.cos(m * alpha), np.sin(m * alpha)
        # Y^m(Rz x) = cos(m a) Y^m - sin(m a) Y^-m and Y^-m(Rz x) = sin(m a) Y^m + cos(m a) Y^-m
        assert np.allclose(D[3 + m, [3 + m, 3 - m]], [c, -s]) and np.allclose(D[3 - m, [3 + m, 3 - m]], [s, c])
    assert D[3, 3] == pytest.approx(1.0)


def test_euler_angles():
    a, b, c = np.array([0.1, 2.0]), np.array([1.2, -0.3]), np.array([-0.7, 0.5])
    Dz = lambda t: wigner_D_from_euler(2, t, 0.0, 0.0)  # noqa: E731
    Dy = lambda t: wigner_D_from_euler(2, 0.0, t, 0.0)  # noqa: E731
    assert np.allclose(wigner_D_from_euler(2, a, b, c), Dz(a) @ Dy(b) @ Dz(c), atol=1e-13)


def test_exact_matrices_agree_and_are_exactly_orthogonal():
    A = sympy.Matrix([[0, -1, 2], [1, 0, -3], [-2, 3, 0]]) / 5
    R = (sympy.eye(3) - A) * (sympy.eye(3) + A).inv()          # Cayley transform: an exact rational rotation
    for l in range(4):
        D = wigner_D_exact(l, R)
        assert D.T * D == sympy.eye(2 * l + 1)
        assert np.allclose(np.array(D, dtype=float), wigner_D(l, np.array(R, dtype=float)), atol=1e-13)
    half_turn = sympy.Matrix([[1, 0, 0], [0, 0, -1], [0, 1, 0]])     # x-axis quarter turn: y -> z, z -> -y
    assert wigner_D_exact(1, half_turn) == sympy.Matrix([[0, -1, 0], [1, 0, 0], [0, 0, 1]])


def test_exact_input_checks():
    with pytest.raises(ValueError, match="exact rotation"):
        wigner_D_exact(1, sympy.diag(1, 1, -1))
    with pytest.raises(TypeError, match="floats"):
        wigner_D_exact(1, np.eye(3))
    with pytest.raises(ValueError, match="shape"):
        wigner_D_exact(1, sympy.eye(2))


def test_parity_representation():
    g = -random_rotation(seed=3)                          # improper: inversion times a rotation
    D = representation(2, g, parity=True)
    points = np.random.default_rng(0).normal(size=(5, 3))
    # harmonics are the irreps (l, (-1)^l): pick those blocks out of the O(3) basis and check equivariance
    picked = [basis_index(l, m, (-1) ** l) for l in range(3) for m in range(-l, l + 1)]     # 0e, 1o, 2e
    D_harmonics = D[np.ix_(picked, picked)]
    assert np.allclose(spherical_harmonics(2, points @ g.T), spherical_harmonics(2, points) @ D_harmonics.T)
    inversion = representation(2, -np.eye(3), parity=True)
    assert np.allclose(inversion, np.diag([1, -1, 1, 1, 1, -1, -1, -1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1]))
    with pytest.raises(ValueError, match="matrix: expected a rotation matrix"):
        representation(2, g)


@pytest.mark.parametrize("bad", [np.eye(3) * 1.01, np.diag([1.0, 1.0, -1.0]), np.eye(4), np.ones(3)])
def test_non_rotations_are_refused(bad):
    with pytest.raises(ValueError, match="rotation"):
        wigner_D(2, bad)
    with pytest.raises(ValueError, match="matrix"):
        representation(2, bad)
