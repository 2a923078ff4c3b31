"""The feature basis, rotation matrices, Euler angles and seeded Haar-random rotations."""
import numpy as np
import pytest

from product_interactions.algebra.so3 import (ROTATION_ATOL, basis_index, basis_labels, check_rotation, feature_dim, irreps,
                         random_rotation, rotation_from_euler)


def test_basis_order_is_l_ascending_then_m():
    labels = basis_labels(2)
    assert len(labels) == feature_dim(2) == 9
    assert labels[basis_index(2, -2)] == "e^2_-2" and labels[basis_index(1, 1)] == "e^1_1"
    assert [basis_index(l, m) for l in range(3) for m in range(-l, l + 1)] == list(range(9))


def test_parity_basis_doubles_with_even_before_odd():
    labels = basis_labels(2, parity=True)
    assert len(labels) == feature_dim(2, parity=True) == 18
    assert irreps(1, parity=True) == ((0, 1), (0, -1), (1, 1), (1, -1))
    assert [labels[basis_index(l, m, p)] for l, p in irreps(2, True) for m in range(-l, l + 1)] == list(labels)
    assert labels[basis_index(1, 0, -1)] == "e^1o_0"


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), (True, TypeError), ("2", TypeError)])
def test_lmax_must_be_a_non_negative_int(bad, error):
    with pytest.raises(error, match="lmax"):
        feature_dim(bad)
    with pytest.raises(error, match="lmax"):
        basis_labels(bad)


def test_random_rotations_are_seeded_rotations():
    R = random_rotation(seed=3, size=50)
    assert R.shape == (50, 3, 3)
    assert np.allclose(np.swapaxes(R, 1, 2) @ R, np.eye(3), atol=1e-14)
    assert np.allclose(np.linalg.det(R), 1.0, atol=1e-14)
    assert np.array_equal(random_rotation(seed=3, size=50), R)
    assert np.array_equal(random_rotation(np.random.default_rng(3), size=50), R)
    assert random_rotation(seed=3).shape == (3, 3)


def test_random_rotations_look_haar_uniform():
    # for Haar measure E[R] = 0 and E[R_ij^2] = 1/3; the rotated axis is uniform on the sphere
    R = random_rotation(seed=0, size=20000)
    assert np.abs(R.mean(axis=0)).max() < 0.02
    assert np.abs((R**2).mean(axis=0) - 1 / 3).max() < 0.02
    assert abs(np.mean(R[:, 2, 2] > 0.5) - 0.25) < 0.02      # P(z . Rz > 1/2) = 1/4 on the sphere


@pytest.mark.parametrize("seed, error", [(1.5, TypeError), ("x", TypeError), (True, TypeError), (-1, ValueError)])
def test_bad_seed(seed, error):
    with pytest.raises(error, match="seed"):
        random_rotation(seed)


def test_bad_size():
    with pytest.raises(ValueError, match="size"):
        random_rotation(0, size=-1)
    with pytest.raises(TypeError, match="size"):
        random_rotation(0, size=2.0)


def test_euler_convention_is_zyz_active():
    a, b, c = 0.3, -1.1, 2.0
    Rz = lambda t: np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])  # noqa: E731
    Ry = lambda t: np.array([[np.cos(t), 0, np.sin(t)], [0, 1, 0], [-np.sin(t), 0, np.cos(t)]])  # noqa: E731
    assert np.allclose(rotation_from_euler(a, b, c), Rz(a) @ Ry(b) @ Rz(c), atol=1e-15)
    assert np.allclose(rotation_from_euler(0, np.pi / 2, 0) @ [0, 0, 1], [1, 0, 0], atol=1e-15)   # Ry: z -> x
    batch = rotation_from_euler(np.array([a, 0.0]), b, c)
    assert batch.shape == (2, 3, 3) and np.allclose(batch[0], Rz(a) @ Ry(b) @ Rz(c))


def test_check_rotation_tolerance():
    R = random_rotation(seed=1)
    assert check_rotation(R).dtype == np.float64
    check_rotation(R + ROTATION_ATOL / 10)                          # within the stated tolerance
    with pytest.raises(ValueError, match="rotation: expected a rotation matrix"):
        check_rotation(R + 10 * ROTATION_ATOL)
    with pytest.raises(ValueError, match="determinant -1"):
        check_rotation(-R)
    assert np.array_equal(check_rotation(-R, proper=False), -R)
    with pytest.raises(ValueError, match="orthogonal"):
        check_rotation(2 * R, proper=False)


@pytest.mark.parametrize("bad", [np.eye(2), np.eye(3)[0], np.ones((2, 3, 4)), [[np.nan] * 3] * 3])
def test_check_rotation_shape_and_values(bad):
    with pytest.raises(ValueError, match="rotation"):
        check_rotation(bad)


def test_check_rotation_type():
    with pytest.raises(TypeError, match="rotation"):
        check_rotation([["a"] * 3] * 3)
