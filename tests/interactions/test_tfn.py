"""The Tensor Field Network layer: equivariance, a direct numpy reference, gradients, bad input."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from algebra.so3 import clebsch_gordan, random_rotation, representation
from interactions.architectures.tfn import tfn


def setup(lmax=2, n=6, seed=1):
    model = tfn(lmax=lmax, channels_in=2, channels_out=3, radius=2.5)
    params = model.init(seed=0)
    rng = np.random.default_rng(seed)
    return model, params, rng.standard_normal((2, n, 3)), rng.standard_normal((2, n, (lmax + 1) ** 2, 2))


def rotate(D, features):
    return np.einsum("fg,bngc->bnfc", D, features)


def test_equivariant_under_100_rotations_and_invariant_under_translations():
    model, params, points, features = setup()
    out = model.apply(params, points, features)
    assert np.abs(out).max() > 0.1
    worst = 0.0
    for seed in range(100):
        R = random_rotation(seed)
        D = representation(2, R)
        shift = np.random.default_rng(seed).standard_normal(3)
        moved = model.apply(params, points @ R.T + shift, rotate(D, features))
        worst = max(worst, np.abs(moved - rotate(D, out)).max())
    assert worst <= 1e-10


def test_float32_equivariance():
    model, params, points, features = setup(lmax=1)
    out = model.apply(params, points.astype(np.float32), features.astype(np.float32))
    R = random_rotation(7)
    D = representation(1, R)
    moved = model.apply(params, (points @ R.T).astype(np.float32), rotate(D, features).astype(np.float32))
    assert np.abs(moved - rotate(D, out)).max() <= 1e-4


def test_equals_a_direct_sum_over_neighbours():
    model, params, points, features = setup(lmax=1, n=4)
    lam = clebsch_gordan(1).structure_constants()
    K = model.filter(params, points)                          # (batch, a, b, F, o, i)
    expected = np.einsum("xabfoi,xbgi,fgh->xaho", K, features, lam)
    np.testing.assert_allclose(model.apply(params, points, features), expected, rtol=1e-12, atol=1e-12)


def test_order_and_gradients():
    model, params, points, features = setup(lmax=1, n=4)
    assert model.order() == 1
    loss = lambda p: anp.sum(anp.sin(model.apply(p, points, features)))  # noqa: E731
    gradient = autograd.grad(loss)(params)
    rng = np.random.default_rng(3)
    direction = {name: rng.standard_normal(value.shape) for name, value in params.items()}
    eps = 1e-6
    shifted = lambda s: {n: v + s * eps * direction[n] for n, v in params.items()}  # noqa: E731
    numeric = (loss(shifted(1)) - loss(shifted(-1))) / (2 * eps)
    assert sum(np.sum(gradient[n] * direction[n]) for n in params) == pytest.approx(numeric, rel=1e-6)


def test_bad_input():
    model, params, points, features = setup(lmax=1, n=4)
    with pytest.raises(ValueError, match=r"points: expected shape \(batch, n, 3\), got \(2, 4, 2\)"):
        model.apply(params, points[..., :2], features)
    with pytest.raises(ValueError, match=r"features: expected shape \(batch, 4, 4, 2\)"):
        model.apply(params, points, features[..., :1])
    with pytest.raises(ValueError, match="radius: expected a positive number"):
        tfn(radius=0)
    with pytest.raises(ValueError, match="lmax: expected a non-negative int, got -1"):
        tfn(lmax=-1)
