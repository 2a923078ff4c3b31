"""Shared helpers for the point-cloud layer tests: random clouds, rotations of features, equivariance."""
import autograd
import numpy as np

from product_interactions.algebra.so3 import random_rotation, representation


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


def gradient_error(loss, params, seed=3, eps=1e-6):
    """|autograd's directional derivative of loss at params - the central finite difference| / |the latter|."""
    gradient = autograd.grad(loss)(params)
    rng = np.random.default_rng(seed)
    direction = {name: rng.standard_normal(np.shape(value)) for name, value in params.items()}
    shifted = lambda s: {n: v + s * eps * direction[n] for n, v in params.items()}  # noqa: E731
    numeric = (loss(shifted(1)) - loss(shifted(-1))) / (2 * eps)
    analytic = sum(np.sum(gradient[n] * direction[n]) for n in params)
    return abs(analytic - numeric) / max(abs(numeric), 1e-12)
