"""Numpy arrays that crossed a process boundary: a pickled float64 array comes back with a dtype equal to float64
but not numpy's own instance of it (``isbuiltin`` 0), as parameters saved with pickle or ``torch.save`` and every
array a spawned worker (multiprocessing, a DataLoader's workers) receives do.  The checks had taken only numpy's
instances as numbers, so every model refused such parameters ("expected an array of numbers, got ndarray of dtype
float64").  Big-endian arrays (``'>f8'``, a file written on another machine) are numbers too; ml_dtypes' own dtypes
are still refused by name."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from module_cases import MODELS

from product_interactions import kernels
from product_interactions.algebra import quaternions


def crossed(a):
    """`a` as a process that unpickled it has it."""
    copy = pickle.loads(pickle.dumps(a))
    assert copy.dtype == a.dtype and (a.dtype.isbuiltin != 1 or copy.dtype.isbuiltin == 0)
    return copy


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_a_model_takes_parameters_and_inputs_that_crossed_a_process(model, inputs):
    params = model.init(seed=0)
    expected = model.apply(params, *inputs)
    got = model.apply({name: crossed(value) for name, value in params.items()}, *map(crossed, inputs))
    np.testing.assert_array_equal(got, expected)


def test_products_take_unpickled_and_big_endian_arrays():
    K = kernels.product(quaternions())
    x = np.random.default_rng(0).standard_normal((5, 4))
    expected = K(x, x)
    np.testing.assert_array_equal(K(crossed(x), crossed(x)), expected)
    np.testing.assert_array_equal(K(x.astype(">f8"), x), expected)


def test_ml_dtypes_own_dtypes_are_still_refused_by_name():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.ones((5, 4), ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="^a: expected an array of floats .*got bfloat16"):
        kernels.linear_scan(x, x)
