"""Converters to and from e3nn's basis, checked against e3nn's published formulas (e3nn is not installed)."""
import numpy as np
import pytest

from product_interactions.algebra.so3 import from_e3nn, random_rotation, representation, spherical_harmonics, to_e3nn
from so3_helpers import unit_points


def e3nn_component_harmonics(u):
    """e3nn.o3.spherical_harmonics([0, 1, 2], u, True, normalization='component'), written out (y polar)."""
    x, y, z = u.T
    return np.stack([np.ones_like(x), np.sqrt(3) * x, np.sqrt(3) * y, np.sqrt(3) * z,
                     np.sqrt(15) * x * z, np.sqrt(15) * x * y, np.sqrt(5) * (y**2 - (x**2 + z**2) / 2),
                     np.sqrt(15) * y * z, np.sqrt(15) / 2 * (z**2 - x**2)], axis=-1)


def test_harmonics_convert_to_e3nn_formulas():
    u = unit_points(40)
    ours = spherical_harmonics(2, u)
    assert np.allclose(np.sqrt(4 * np.pi) * to_e3nn(ours), e3nn_component_harmonics(u), atol=1e-13)
    assert np.allclose(from_e3nn(e3nn_component_harmonics(u)) / np.sqrt(4 * np.pi), ours, atol=1e-13)


def test_vectors_become_xyz():
    v = np.random.default_rng(0).normal(size=3)
    ours = np.r_[0.0, v[1], v[2], v[0]]                        # our l = 1 components are (y, z, x)
    assert np.allclose(to_e3nn(ours), np.r_[0.0, v])


def test_orthogonal_and_intertwining():
    f = np.random.default_rng(1).normal(size=(5, 25))
    assert np.allclose(from_e3nn(to_e3nn(f)), f) and np.allclose(np.linalg.norm(to_e3nn(f), axis=-1),
                                                                np.linalg.norm(f, axis=-1))
    R = random_rotation(seed=2)
    P = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])   # e3nn's Y(u) = our Y(P u)
    e3nn_D = representation(4, P @ R @ P.T)
    assert np.allclose(to_e3nn(f @ representation(4, R).T), to_e3nn(f) @ e3nn_D.T)


def test_dtype_and_bad_input():
    assert to_e3nn(np.zeros((2, 4), dtype=np.float32)).dtype == np.float32
    assert to_e3nn([1, 0, 0, 0]).dtype == np.float64
    with pytest.raises(ValueError, match=r"features: the last axis must have \(lmax \+ 1\)\*\*2"):
        to_e3nn(np.zeros(5))
    with pytest.raises(ValueError, match="features"):
        from_e3nn(np.zeros((3, 0)))
    with pytest.raises(TypeError, match="features"):
        to_e3nn("abcd")
