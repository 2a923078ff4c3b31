"""The Tensor Field Network layer: equivariance, a direct numpy reference, gradients, bad input."""
import autograd.numpy as anp
import numpy as np
import pytest
from cloud_support import cloud, equivariance_error, gradient_error

from product_interactions.algebra.so3 import clebsch_gordan
from product_interactions.interactions.architectures import tfn


def test_equivariant_under_100_rotations_and_invariant_under_translations():
    model = tfn(lmax=2, channels_in=2, channels_out=3, radius=2.5)
    params = model.init(seed=0)
    points, features = cloud(2, 6, 2)
    error, size = equivariance_error(lambda r, s: model.apply(params, r, s), 2, points, features)
    assert size > 0.1 and error <= 1e-10
    error, _ = equivariance_error(lambda r, s: model.apply(params, r, s), 2, points, features, 3, np.float32)
    assert error <= 1e-4


def test_equals_a_direct_sum_over_neighbours():
    model = tfn(lmax=1, channels_in=2, channels_out=3, radius=2.5)
    params = model.init(seed=0)
    points, features = cloud(1, 4, 2)
    lam = clebsch_gordan(1).structure_constants()
    K = model.filter(params, points)                          # (batch, a, b, F, o, i)
    expected = np.einsum("xabfoi,xbgi,fgh->xaho", K, features, lam)
    np.testing.assert_allclose(model.apply(params, points, features), expected, rtol=1e-12, atol=1e-12)


def test_order_and_gradients():
    model = tfn(lmax=1, channels_in=2, channels_out=3, radius=2.5)
    params = model.init(seed=0)
    points, features = cloud(1, 4, 2)
    assert model.order() == 1
    assert gradient_error(lambda p: anp.sum(anp.sin(model.apply(p, points, features))), params) < 1e-6


def test_bad_input():
    model = tfn(lmax=1, channels_in=2, channels_out=3)
    params = model.init(seed=0)
    points, features = cloud(1, 4, 2)
    with pytest.raises(ValueError, match=r"points: expected shape \(batch, n, 3\), got \(2, 4, 2\)"):
        model.apply(params, points[..., :2], features)
    with pytest.raises(ValueError, match=r"features: expected shape \(batch, 4, 4, 2\)"):
        model.apply(params, points, features[..., :1])
    with pytest.raises(ValueError, match=r"radius: expected a real number in \(0, 1e\+100\], got 0"):
        tfn(radius=0)
    with pytest.raises(ValueError, match="lmax: expected a non-negative int, got -1"):
        tfn(lmax=-1)
