"""Under JAX's strict promotion settings, which some codebases choose for their own code
(``jax_numpy_rank_promotion="raise"``, ``jax_numpy_dtype_promotion="strict"``), the library's entry points run with
JAX's defaults (`kernels.arrays.with_jax_defaults`) and give the same numbers: eager, under jit and under grad.
Before, every architecture but two failed under the first, and the diagonal SSM under the second; so did every
product kernel ("Operands could not be broadcast together")."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from module_cases import MODELS

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, quaternions, translation
from product_interactions.interactions.feature_map import seq2tens, signature

jax = pytest.importorskip("jax")
jnp = jax.numpy


@contextlib.contextmanager
def strict():
    """Both strict settings at once (each alone had failed)."""
    with jax.numpy_rank_promotion("raise"), jax.numpy_dtype_promotion("strict"):
        yield


def results(function, params, *arguments):
    """`function`'s value, and under jit its value and gradient with respect to `params`."""
    def loss(p):
        value = function(p, *arguments)
        return jnp.sum(value ** 2), value
    return function(params, *arguments), jax.jit(jax.value_and_grad(loss, has_aux=True))(params)


def assert_same(got, expected):
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_every_architecture_runs_under_strict_promotion(model, inputs):
    params = {name: jnp.asarray(value, jnp.float32) for name, value in model.init(0).items()}
    arguments = [jnp.asarray(a, jnp.float32) for a in inputs]
    expected = results(model.apply, params, *arguments)
    with strict():
        assert_same(results(model.apply, params, *arguments), expected)


def test_kernels_and_entry_points_run_under_strict_promotion():
    rng = np.random.default_rng(0)
    cases = []
    for algebra, names in ((quaternions(), kernels.STRATEGIES), (translation(8), ["fft"]),
                           (clebsch_gordan(2), ["auto"])):
        for name in names:
            try:
                kernel = kernels.product(algebra, strategy=name)
            except ValueError:
                continue
            operand = jnp.asarray(rng.standard_normal((3, algebra.dim)), jnp.float32)
            cases.append((lambda p, y, kernel=kernel: kernel(p, y), operand, operand[0]))      # y broadcast
    u = jnp.asarray(rng.standard_normal((2, 6, 3)), jnp.float32)
    cases += [(lambda p, d: kernels.selective_scan(p, d, -jnp.ones((3, 2)), d[..., :2], d[..., 1:]), u, jnp.abs(u)),
              (lambda p, k: kernels.causal_convolution(p, k), jnp.swapaxes(u, 1, 2), jnp.ones(6)),
              (lambda p: kernels.softmax(p, axis=-1), u),
              (lambda p, a: kernels.linear_scan(a, p), u, jax.nn.sigmoid(u)),
              (lambda p: signature(p, 2), u), (lambda p: seq2tens(p, 2)[2], u)]
    for function, *arguments in cases:
        expected = results(function, *arguments)
        with strict():
            assert_same(results(function, *arguments), expected)
