"""The scatter strategy's pieces: every engine's segmented sum against numpy's ``add.at``, and a program whose size
does not grow with the factor's terms (a jax.jit of a dense factor's fallback for values that are not finite had
once compiled one expression per term: minutes and gigabytes for 13,824 terms)."""
from __future__ import annotations

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import Algebra
from product_interactions.kernels.arrays import ENGINES


def _to(engine_name, a):
    if engine_name == "torch":
        return pytest.importorskip("torch").tensor(a)
    if engine_name == "jax":
        return pytest.importorskip("jax.numpy").asarray(a)
    return a


@pytest.mark.parametrize("engine_name", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("segments, count", [([0, 0, 2, 2, 2, 5], 7), ([0, 1, 2], 3), ([3, 3], 4), ([], 3)])
def test_segment_sum_adds_each_row_into_its_segment_and_leaves_zeros_elsewhere(engine_name, segments, count):
    rows = np.random.default_rng(len(segments)).standard_normal((len(segments), 2, 3))
    expected = np.zeros((count, 2, 3))
    np.add.at(expected, np.asarray(segments, dtype=np.int64), rows)
    engine = ENGINES[engine_name]
    got = engine.segment_sum(_to(engine_name, rows), np.asarray(segments, dtype=np.int64), count)
    np.testing.assert_allclose(np.asarray(engine.value(got)), expected, rtol=1e-14, atol=1e-14)


def test_segment_sum_differentiates_under_autograd():
    autograd = pytest.importorskip("autograd")
    segments = np.array([1, 1, 3])
    weights = np.arange(8.0).reshape(4, 2)
    gradient = autograd.grad(lambda a: (ENGINES["numpy"].segment_sum(a, segments, 4) * weights).sum())(np.ones((3, 2)))
    np.testing.assert_array_equal(gradient, weights[segments])


@pytest.mark.parametrize("strategy", ["scatter", "dense"])
def test_a_jitted_program_stays_small_whatever_the_terms(strategy):
    """Scatter's program, and dense's with its marks for values that are not finite, have about as many equations
    for 216 terms as for 13,824."""
    jax = pytest.importorskip("jax")
    sizes = []
    for d in (6, 24):
        lam = np.random.default_rng(d).standard_normal((d, d, d))          # d^3 terms, none of them zero
        kernel = kernels.product(Algebra.from_structure_constants(lam, exact=False), strategy=strategy)
        x = jax.numpy.ones((4, d))
        sizes.append(str(jax.make_jaxpr(kernel.compute)(x, x)).count("\n"))   # the primitive's program, by lines
    assert max(sizes) < 2 * min(sizes) < 120           # (the codegen fallback had 28,498 for 13,824 terms)
