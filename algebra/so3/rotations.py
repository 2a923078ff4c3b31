"""Rotation matrices: validation, Euler angles and seeded Haar-random rotations.

Rotations act actively on column vectors, ``x -> R @ x``, in a right-handed frame with axes (x, y, z).
Euler angles are **z-y-z**: ``rotation_from_euler(alpha, beta, gamma) = Rz(alpha) @ Ry(beta) @ Rz(gamma)``,
each factor a counter-clockwise rotation about the named fixed axis (so gamma is applied first).

A matrix counts as a rotation when ``max|R^T R - I| <= atol`` and ``|det R - 1| <= atol`` with
``atol = ROTATION_ATOL = 1e-6`` by default (loose enough for float32 input, tight enough that the Wigner-D
matrices built from it are orthogonal to about that accuracy).

>>> import numpy as np
>>> R = rotation_from_euler(np.pi / 2, 0.0, 0.0)
>>> np.round(R @ [1.0, 0.0, 0.0], 12) + 0.0
array([0., 1., 0.])
>>> Q = random_rotation(seed=0)
>>> bool(np.allclose(Q.T @ Q, np.eye(3))), bool(np.isclose(np.linalg.det(Q), 1.0))
(True, True)
>>> check_rotation(np.diag([1.0, 1.0, -1.0]))
Traceback (most recent call last):
...
ValueError: rotation: expected a rotation matrix (orthogonal with determinant 1) within atol = 1e-06, got max|R^T R - I| = 0 and determinant -1
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..algebra import check_count, check_flag, check_seed, check_tolerance
from ..limits import check_size

#: Tolerance on max|R^T R - I| and |det R - 1| for a matrix to be accepted as a rotation.
ROTATION_ATOL = 1e-6


def check_rotation(matrix: ArrayLike, argument: str = "rotation", proper: bool = True,
                   atol: float = ROTATION_ATOL) -> np.ndarray:
    """`matrix` as a float64 array of shape ``(..., 3, 3)`` after checking it is a rotation.

    ``proper=False`` accepts every orthogonal matrix (determinant +1 or -1: the group O(3)).
    """
    proper, atol = check_flag(proper, "proper"), check_tolerance(atol, "atol")
    try:
        array = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{argument}: expected a real array of shape (..., 3, 3), got {type(matrix).__name__} "
                        f"({error})") from None
    if array.ndim < 2 or array.shape[-2:] != (3, 3):
        raise ValueError(f"{argument}: expected an array of shape (..., 3, 3), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{argument}: expected finite entries, got inf or nan")
    gram = np.swapaxes(array, -1, -2) @ array - np.eye(3)
    determinant = np.linalg.det(array)
    deviation = float(np.max(np.abs(gram), initial=0.0))
    bad_det = np.abs(determinant - 1) if proper else np.abs(np.abs(determinant) - 1)
    if deviation > atol or np.any(bad_det > atol):
        worst = float(determinant.flat[np.argmax(bad_det)])
        what = "a rotation matrix (orthogonal with determinant 1)" if proper else \
            "an orthogonal matrix (determinant +1 or -1)"
        raise ValueError(f"{argument}: expected {what} within atol = {atol:g}, got max|R^T R - I| = "
                         f"{deviation:.3g} and determinant {worst:.6g}")
    return array


def random_rotation(seed: int | np.random.Generator | None = None, size: int | None = None) -> np.ndarray:
    """A Haar-uniform random rotation, shape (3, 3), or ``size`` of them, shape (size, 3, 3).

    Drawn as the rotation of a uniform unit quaternion (a normalised 4-D Gaussian); `seed` is None, an int
    or a ``numpy.random.Generator``.
    """
    rng = check_seed(seed, allow_none=True)
    count = 1 if size is None else check_count(size, "size", minimum=0)
    check_size(count, "size", "rotations", "draw them in batches")
    q = rng.standard_normal((count, 4))
    w, x, y, z = (q / np.linalg.norm(q, axis=-1, keepdims=True)).T
    matrices = np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
    ], axis=-2)
    return matrices[0] if size is None else matrices


def _axis_rotation(angle: ArrayLike, axes: tuple[int, int]) -> np.ndarray:
    """Counter-clockwise rotation by `angle` in the plane of `axes` = (a, b): e_a -> cos e_a + sin e_b."""
    angle = np.asarray(angle, dtype=np.float64)
    matrix = np.zeros(angle.shape + (3, 3))
    a, b = axes
    c, s = np.cos(angle), np.sin(angle)
    matrix[..., a, a] = matrix[..., b, b] = c
    matrix[..., b, a], matrix[..., a, b] = s, -s
    matrix[..., 3 - a - b, 3 - a - b] = 1.0
    return matrix


def rotation_from_euler(alpha: ArrayLike, beta: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """``Rz(alpha) @ Ry(beta) @ Rz(gamma)`` (z-y-z, active); angles (finite reals) broadcast, result shape
    (..., 3, 3)."""
    converted = []
    for argument, angle in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        try:
            array = np.asarray(angle)
            if array.dtype.kind not in "fiu":                # None, objects, bools, complex, strings
                raise TypeError(f"dtype {array.dtype}")
            array = array.astype(np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError(f"{argument}: expected real angles (an array of floats), got {type(angle).__name__} "
                            f"({error})") from None
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{argument}: expected finite angles, got inf or nan")
        converted.append(array)
    try:
        angles = np.broadcast_arrays(*converted)
    except ValueError as error:
        raise ValueError(f"alpha, beta, gamma: expected real angles that broadcast together ({error})") from None
    z, y = (0, 1), (2, 0)  # Ry turns z towards x
    return _axis_rotation(angles[0], z) @ _axis_rotation(angles[1], y) @ _axis_rotation(angles[2], z)
