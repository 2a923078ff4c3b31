"""product_layer (issue 38): O_K(x) = L1(K L2(x)) in a user's algebra, free, exact under a symmetry or penalised
toward it, against hand-written products and brute-force commutators; the engines agree."""
from __future__ import annotations

import autograd
import numpy as np
import pytest

from product_interactions.algebra import Algebra, quaternions
from product_interactions.algebra.symmetry import finite_group, translations
from product_interactions.interactions.architectures import product_layer

# The split-quaternions by their table: i^2 = -1, j^2 = k^2 = 1, ij = k = -ji, jk = -i = -kj, ki = j = -ik.
TABLE = {(0, 0): {0: 1}, (0, 1): {1: 1}, (0, 2): {2: 1}, (0, 3): {3: 1}, (1, 0): {1: 1}, (2, 0): {2: 1},
         (3, 0): {3: 1}, (1, 1): {0: -1}, (2, 2): {0: 1}, (3, 3): {0: 1}, (1, 2): {3: 1}, (2, 1): {3: -1},
         (2, 3): {1: -1}, (3, 2): {1: 1}, (3, 1): {2: 1}, (1, 3): {2: -1}}
SPLIT = Algebra.from_structure_constants(TABLE, basis=["1", "i", "j", "k"], name="split_quaternions")
# The same algebra as 2 x 2 real matrices: 1, i, j, k.
MATRICES = np.array([[[1, 0], [0, 1]], [[0, 1], [-1, 0]], [[0, 1], [1, 0]], [[1, 0], [0, -1]]], dtype=float)
# Conjugation by 1 + i: 1 -> 1, i -> i, j -> k, k -> -j (an automorphism of order 4).
ROTATION = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, -1], [0, 0, 1, 0]]


def split_product(p, q):
    """p q in the split-quaternions through 2 x 2 matrices (independent of the table)."""
    P, Q = np.einsum("...a,aij->...ij", p, MATRICES), np.einsum("...a,aij->...ij", q, MATRICES)
    return (P @ Q).reshape(*np.shape(P)[:-2], 4) @ np.linalg.inv(MATRICES.reshape(4, 4))


def left_matrix(K):
    """The matrix of x -> K x, column by column."""
    return np.stack([split_product(K, e) for e in np.eye(4)], axis=-1)


def test_the_table_is_the_matrix_algebra():
    rng = np.random.default_rng(0)
    p, q = rng.standard_normal(4), rng.standard_normal(4)
    np.testing.assert_allclose(np.einsum("i,j,ijk->k", p, q, SPLIT.structure_constants()), split_product(p, q),
                               atol=1e-12)


def test_a_free_layer_is_L1_K_L2_by_hand():
    layer = product_layer(SPLIT, d_in=3, d_out=2)
    params = layer.init(seed=1)
    assert layer.parameters == {"L1": (2, 4), "K": (4,), "L2": (4, 3)} and layer.order() == 1
    x = np.random.default_rng(2).standard_normal((5, 7, 3))
    expected = split_product(np.broadcast_to(params["K"], (5, 7, 4)), x @ params["L2"].T) @ params["L1"].T
    np.testing.assert_allclose(layer.apply(params, x), expected, rtol=1e-12, atol=1e-12)
    assert repr(layer) == "<ProductLayer: 3 parameters (24 numbers), input x in diagonal(3), order 1>"


def test_exact_symmetry_keeps_K_in_the_commutant_and_the_layer_equivariant():
    layer = product_layer(SPLIT, symmetry=finite_group([ROTATION]))
    assert layer.parameters == {"theta": (2,)}
    K = layer.element({"theta": np.array([2.0, 3.0])})
    R = np.array(ROTATION, dtype=float)
    np.testing.assert_allclose(R @ left_matrix(K), left_matrix(K) @ R, atol=1e-12)        # brute force
    x = np.random.default_rng(3).standard_normal((6, 4))
    out = layer.apply({"theta": np.array([2.0, 3.0])}, x)
    np.testing.assert_allclose(out, split_product(np.broadcast_to(K, x.shape), x), atol=1e-12)
    np.testing.assert_allclose(layer.apply({"theta": np.array([2.0, 3.0])}, x @ R.T), out @ R.T, atol=1e-12)
    assert abs(layer.penalty({"theta": np.array([2.0, 3.0])})) < 1e-24


@pytest.mark.parametrize("generator", [ROTATION, [[1, 0, 0, 0], [0, 0, -1, 0], [0, 1, -1, 0], [0, 0, 0, 1]]],
                         ids=["rotation", "order three"])
def test_the_penalty_is_the_brute_force_commutator_and_differentiable(generator):
    """The order-three generator mixes two components so that the residuals' columns are not orthogonal: a
    penalty summing the squares of the entries of K one by one would pass with the rotation alone."""
    R = np.array(generator, dtype=float)
    layer = product_layer(SPLIT, symmetry=finite_group([generator]), enforce="penalty")
    K = np.random.default_rng(4).standard_normal(4)
    brute = lambda K: np.sum((R @ left_matrix(K) - left_matrix(K) @ R) ** 2)      # noqa: E731
    assert np.isclose(layer.penalty({"K": K}), brute(K), rtol=1e-12)
    gradient = autograd.grad(lambda k: layer.penalty({"K": k}))(K)
    finite = [(brute(K + h) - brute(K - h)) / 2e-6 for h in 1e-6 * np.eye(4)]
    np.testing.assert_allclose(gradient, finite, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("enforce", ["exact", "penalty"])
def test_the_engines_agree(enforce):
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    layer = product_layer(SPLIT, d_in=3, d_out=2, symmetry=finite_group([ROTATION]), enforce=enforce)
    params = layer.init(seed=0)
    x = np.random.default_rng(1).standard_normal((4, 3))
    value, penalty = layer.apply(params, x), layer.penalty(params)
    for convert in (torch.tensor, jax.numpy.asarray):
        converted = {name: convert(array) for name, array in params.items()}
        np.testing.assert_allclose(np.asarray(layer.apply(converted, convert(x))), value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(float(layer.penalty(converted)), penalty, rtol=1e-12, atol=1e-24)
    module = layer.to_torch(seed=0)
    assert type(module).__name__ == "ProductLayerModule"
    np.testing.assert_allclose(module(torch.tensor(x)).detach().numpy(), value, rtol=1e-12)


def test_mistakes_are_refused_by_name():
    with pytest.raises(ValueError, match=r"symmetry: expected an action on the 4 components of split_quaternions, "
                                         r"got translations\(3\) on shape \(3,\)"):
        product_layer(SPLIT, symmetry=translations(3))
    bound = finite_group([ROTATION]).on(quaternions())
    with pytest.raises(ValueError, match="symmetry: expected an action on the 4 components of split_quaternions, "
                                         "got .* on quaternions"):
        product_layer(SPLIT, symmetry=bound)
    with pytest.raises(TypeError, match="symmetry: expected an algebra.symmetry.Action on split_quaternions, got str"):
        product_layer(SPLIT, symmetry="rotation")
    with pytest.raises(ValueError, match="enforce: expected one of 'exact', 'penalty', got 'soft'"):
        product_layer(SPLIT, enforce="soft")
    with pytest.raises(ValueError, match=r"symmetry: only K = 0 commutes with"):
        # e0 e0 = e1 e1 = e0: L(K) = [[K0, K1], [0, 0]] commutes with the swap only for K = 0
        product_layer(Algebra.from_structure_constants({(0, 0): {0: 1}, (1, 1): {0: 1}}),
                      symmetry=finite_group([[[0, 1], [1, 0]]]))
    with pytest.raises(ValueError, match=r"penalty: this layer has no symmetry; give product_layer\(\.\.\., "
                                         r"symmetry=action\)"):
        product_layer(SPLIT).penalty({"K": np.ones(4)})
    with pytest.raises(ValueError, match=r"x: expected shape \(\.\.\., 3\) \(d_in features\), got \(2, 4\)"):
        product_layer(SPLIT, d_in=3).apply({"K": np.ones(4), "L2": np.ones((4, 3))}, np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"params: missing \['theta'\]"):
        product_layer(SPLIT, symmetry=finite_group([ROTATION])).apply({"K": np.ones(4)}, np.ones((2, 4)))
