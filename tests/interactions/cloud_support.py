"""Shared helpers for the point-cloud layer tests: random clouds, rotations of features, equivariance."""
import numpy as np

from algebra.so3 import random_rotation, representation


def cloud(lmax, n, channels_in, seed=1, batch=2):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, n, 3)), rng.standard_normal((batch, n, (lmax + 1) ** 2, channels_in))


def rotate(D, features):
    return np.einsum("fg,bngc->bnfc", D, features)


def equivariance_error(apply, lmax, points, features, rotations=100, dtype=np.float64):
    """max |f(R r + t, D(R) s) - D(R) f(r, s)| over seeded random rotations R and shifts t."""
    out = apply(points.astype(dtype), features.astype(dtype))
    assert out.dtype == dtype
    worst = 0.0
    for seed in range(rotations):
        R = random_rotation(seed)
        D = representation(lmax, R)
        shift = np.random.default_rng(seed).standard_normal(3)
        moved = apply((points @ R.T + shift).astype(dtype), rotate(D, features).astype(dtype))
        worst = max(worst, float(np.abs(moved - rotate(D, out)).max()))
    return worst, float(np.abs(out).max())
