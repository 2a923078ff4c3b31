"""SE(3)-attention: equivariance, a direct numpy reference, neighbourhoods, gradients, bad input."""
import autograd.numpy as anp
import numpy as np
import pytest
from cloud_support import cloud, equivariance_error, gradient_error

from product_interactions.algebra.so3 import clebsch_gordan
from product_interactions.interactions.architectures import se3_attention


def reference(model, params, points, features):
    """The formulas of the module docstring written directly with einsum."""
    lam = clebsch_gordan(model.lmax).structure_constants()
    keys = np.einsum("xabfci,xbgi,fgh->xabhc", model.keys(params, points), features, lam)
    values = np.einsum("xabfci,xbgi,fgh->xabhc", model.values(params, points), features, lam)
    queries = np.einsum("ci,xahi->xahc", params["W_Q"][0], features)
    scores = np.einsum("xahc,xabgc,hg->xab", queries, keys, lam[:, :, 0])
    scores = np.where(model.keys.neighbours(points) > 0, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("xab,xabhc->xahc", weights, values)


def test_equals_the_formulas():
    model = se3_attention(lmax=2, channels_in=2, channels=3, radius=1.5)
    params = model.init(seed=0)
    points, features = cloud(2, 7, 2)
    assert 0 < model.keys.neighbours(points).mean() < 1                     # some pairs are out of reach
    np.testing.assert_allclose(model.apply(params, points, features), reference(model, params, points, features),
                               rtol=1e-12, atol=1e-12)


def test_equivariant_under_100_rotations_and_translations():
    model = se3_attention(lmax=2, channels_in=2, channels=3, radius=2.0)
    params = model.init(seed=0)
    points, features = cloud(2, 6, 2)
    error, size = equivariance_error(lambda r, s: model.apply(params, r, s), 2, points, features)
    assert size > 0.01 and error <= 1e-10
    params = model.init(seed=0, dtype=np.float32)
    error, _ = equivariance_error(lambda r, s: model.apply(params, r, s), 2, points, features, 3, np.float32)
    assert error <= 1e-4


def test_far_points_do_not_attend():
    model = se3_attention(lmax=1, channels_in=2, channels=2, radius=1.0)
    params = model.init(seed=0)
    points, features = cloud(1, 4, 2)
    points[:, 3] += 100.0                                                   # point 3 is nobody's neighbour
    changed = features.copy()
    changed[:, 3] += 1.0
    before, after = model.apply(params, points, features), model.apply(params, points, changed)
    np.testing.assert_allclose(before[:, :3], after[:, :3], rtol=1e-13, atol=1e-13)


def test_order_and_gradients():
    model = se3_attention(lmax=1, channels_in=2, channels=2, radius=2.0)
    params = model.init(seed=0)
    points, features = cloud(1, 4, 2)
    assert model.order() == 3
    assert gradient_error(lambda p: anp.sum(anp.sin(model.apply(p, points, features))), params) < 1e-6


def test_bad_input():
    model = se3_attention(lmax=1, channels_in=2, channels=2)
    params = model.init(seed=0)
    points, features = cloud(1, 4, 2)
    with pytest.raises(ValueError, match=r"points: expected shape \(batch, n, 3\)"):
        model.apply(params, points[..., :2], features)
    with pytest.raises(ValueError, match=r"features: expected shape \(batch, 4, 4, 2\)"):
        model.apply(params, points, features[..., :3, :])
    with pytest.raises(ValueError, match=r"params\['W_Q'\]: expected shape \(1, 2, 2\)"):
        model.apply(dict(params, W_Q=np.ones((2, 2))), points, features)
