"""The radial filter of the point-cloud layers away from its defaults (radius, basis, hidden): against its formula
written out here, and the radius as the edge of every neighbourhood; the models' gradients for the points."""
import functools

import numpy as np
import pytest
from cloud_support import cloud

from product_interactions.algebra.so3 import random_rotation, representation, spherical_harmonics
from product_interactions.interactions.architectures import se3_attention, tfn
from product_interactions.interactions.architectures.radial import RadialFilter


def written_out(params, radius, basis, lmax, channels_out, channels_in, r_ab):
    """R(|r|) cutoff(|r|) Y(r / |r|) for one edge vector r_ab, from the docstring's formula."""
    d = np.linalg.norm(r_ab)
    centres = np.linspace(0.0, radius, basis)
    features = np.exp(-((d - centres) * basis / radius) ** 2)
    pre = params["K_W_radial"] @ features + params["K_b_radial"]
    hidden = pre / (1 + np.exp(-pre))
    cutoff = 0.5 * (np.cos(np.pi * d / radius) + 1) if d < radius else 0.0
    R = (params["K_W_out"] @ hidden * cutoff).reshape(lmax + 1, channels_out, channels_in)
    degrees = np.repeat(np.arange(lmax + 1), 2 * np.arange(lmax + 1) + 1)
    return spherical_harmonics(lmax, r_ab)[:, None, None] * R[degrees]


@pytest.mark.parametrize("radius, basis, hidden", [(0.7, 3, 2), (3.0, 11, 6), (2.0, 8, 16)])
def test_the_filter_equals_its_formula_inside_and_is_zero_from_the_radius_out(radius, basis, hidden):
    lmax, channels_out, channels_in = 2, 2, 3
    radial = RadialFilter("K", lmax, channels_out, channels_in, radius, basis, hidden)
    rng = np.random.default_rng(int(10 * radius) + basis)
    params = {name: rng.standard_normal(shape) for name, shape in radial.parameters.items()}
    direction = rng.standard_normal(3)
    direction /= np.linalg.norm(direction)
    distances = radius * np.array([0.05, 0.3, 0.6, 0.99, 1.0, 1.4])
    points = np.stack([np.zeros((6, 3)), distances[:, None] * direction], axis=1)      # six clouds of two points
    K = radial(params, points)                                                          # (6, a, b, F, o, i)
    for cloud_index, d in enumerate(distances):
        expected = written_out(params, radius, basis, lmax, channels_out, channels_in, -d * direction)
        np.testing.assert_allclose(K[cloud_index, 0, 1], expected, rtol=1e-12, atol=1e-14)
        assert (np.abs(K[cloud_index, 0, 1]).max() == 0) == (d >= radius), d


@pytest.mark.parametrize("layer", [tfn, se3_attention])
@pytest.mark.parametrize("radius", [0.5, 3.0])
def test_a_point_is_a_neighbour_exactly_within_the_radius(layer, radius):
    """A point moved just beyond the radius of all others stops changing their outputs; just within, it changes them."""
    model = layer(lmax=1, channels_in=2, radius=radius, **({"channels_out": 2} if layer is tfn else {"channels": 2}))
    params = model.init(seed=0)
    points, features = cloud(1, 3, 2)
    points = np.zeros_like(points)
    points[0, 1, 0] = 0.1 * radius                                     # points 0 and 1 near the origin
    changed = features.copy()
    changed[0, 2] += 1.0
    for gap, apart in ((1.02, True), (0.9, False)):
        points[0, 2] = [0.1 * radius + gap * radius, 0.0, 0.0]         # point 2 on the x axis beyond point 1
        before, after = model.apply(params, points, features), model.apply(params, points, changed)
        assert np.allclose(before[0, :2], after[0, :2], rtol=0, atol=1e-14) is apart, (gap, radius)


@pytest.mark.parametrize("radius", [0.5, 2.0])
def test_a_point_exactly_at_the_radius_is_no_neighbour(radius):
    """Neighbours are strictly closer than the radius: a point at exactly that distance (a float-exact 2.0 or 0.5
    along x) leaves the attention of the others as if it were far away, although its softmax weight would change
    them were it counted (its message is zero there, the filter's cutoff)."""
    model = se3_attention(lmax=1, channels_in=2, channels=2, radius=radius)
    params = model.init(seed=0)
    points, features = cloud(1, 3, 2)
    points = np.zeros_like(points)
    points[0, 1, 0] = 0.25
    outputs = []
    for x in (0.25 + radius, 0.25 + 10 * radius):                  # exactly at the radius of point 1, then far
        points[0, 2] = [x, 0.0, 0.0]
        assert np.sum((points[0, 2] - points[0, 1]) ** 2) == radius**2 or x > radius
        outputs.append(model.apply(params, points, features)[0, :2])
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=0, atol=1e-14)


def test_points_given_as_nested_lists_are_read_as_floats():
    model = tfn(lmax=1, channels_in=2, channels_out=2)
    params = model.init(seed=0)
    points, features = cloud(1, 4, 2)
    as_lists = [[[float(v) for v in point] for point in cloud_points] for cloud_points in points]
    np.testing.assert_array_equal(model.apply(params, as_lists, features), model.apply(params, points, features))


def _energy(model, params, points, features, weights, engine):
    """A weighted sum of the model's outputs, its gradient for the points, on numpy (autograd), torch or JAX."""
    if engine == "numpy":
        import autograd
        return autograd.grad(lambda p: (model.apply(params, p, features) * weights).sum())(points)
    if engine == "torch":
        torch = pytest.importorskip("torch")
        p = torch.tensor(points, requires_grad=True)
        value = (model.apply({k: torch.tensor(v) for k, v in params.items()}, p, torch.tensor(features))
                 * torch.tensor(weights)).sum()
        return torch.autograd.grad(value, p)[0].numpy()
    jax = pytest.importorskip("jax")           # compiled: JAX's first calls compile every operation on its own
    return np.asarray(jax.jit(jax.grad(lambda p: (model.apply(params, p, features) * weights).sum()))(points))


CLOUD_MODELS = [tfn(lmax=2, channels_in=2, channels_out=2), se3_attention(lmax=2, channels_in=2, channels=2)]


@functools.cache
def _central_differences(case: int):
    """(params, points, features, weights, the central differences of the weighted outputs for the points) of
    `CLOUD_MODELS[case]`: the engine-free reference, computed once."""
    model = CLOUD_MODELS[case]
    params = model.init(seed=0)
    points, features = cloud(2, 5, 2, seed=4)
    weights = np.random.default_rng(6).standard_normal(model.apply(params, points, features).shape)
    numeric, step = np.zeros_like(points), 1e-6
    for index in np.ndindex(points.shape):
        shift = np.zeros_like(points)
        shift[index] = step
        energies = [(model.apply(params, points + sign * shift, features) * weights).sum() for sign in (1, -1)]
        numeric[index] = (energies[0] - energies[1]) / (2 * step)
    return params, points, features, weights, numeric


@pytest.mark.parametrize("engine", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("case", range(len(CLOUD_MODELS)), ids=[type(m).__name__ for m in CLOUD_MODELS])
def test_gradients_for_the_points_are_the_finite_differences_and_rotate_with_the_cloud(case, engine):
    """Forces, -dE/dr, of an energy read off the outputs: the central differences of the points, on every
    engine.  They had been NaN on torch and JAX (the distance's square root has an infinite slope at a point and
    itself, multiplied by 0), and numpy's autograd had failed inside numpy ("setting an array element with a
    sequence").  Of an invariant energy (the degree-0 outputs), they rotate with the cloud."""
    model = CLOUD_MODELS[case]
    params, points, features, weights, numeric = _central_differences(case)
    gradient = _energy(model, params, points, features, weights, engine)
    np.testing.assert_allclose(gradient, numeric, rtol=0, atol=1e-7 * np.abs(numeric).max())
    invariant = np.zeros_like(weights)
    invariant[..., 0, :] = weights[..., 0, :]                        # degree 0: the energy is invariant
    R = random_rotation(3)
    moved = points @ R.T + np.random.default_rng(7).standard_normal(3)
    rotated = np.einsum("fg,bngc->bnfc", representation(2, R), features)
    np.testing.assert_allclose(_energy(model, params, moved, rotated, invariant, engine),
                               _energy(model, params, points, features, invariant, engine) @ R.T, atol=1e-10)
