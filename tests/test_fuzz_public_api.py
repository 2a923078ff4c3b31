"""Fuzzing the public entry points one argument at a time (hypothesis, derandomised, 2 s per case): with every other
argument valid, any value of one argument either works all the way (the object it builds runs on a small valid
input and gives finite numbers of the right shape) or raises a ValueError / TypeError whose message names that
argument.  Never an internal exception, a hang, or an object that fails later."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from product_interactions import kernels
from product_interactions.algebra import quaternions, translation
from product_interactions.algebra.so3 import random_rotation, spherical_harmonics, wigner_D
from product_interactions.algebra.symmetry import is_equivariant, permutations, translations
from product_interactions.interactions import signature
from product_interactions.interactions.architectures import (attention, convolution, dynamical, gating, ls2t,
                                                             mamba, se3_attention, ssm, tfn)

VALUES = st.one_of(st.integers(-3, 6), st.integers(2**40, 10**30), st.integers(-(10**30), -(2**40)),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4), st.none(), st.booleans(),
                   st.lists(st.integers(-2, 3), max_size=3), st.complex_numbers(max_magnitude=2))
RNG = np.random.default_rng(0)


def _sequence_model(build, width_argument):
    def run(**kwargs):
        model = build(**kwargs)
        width = kwargs.get(width_argument, 4)
        return model.apply(model.init(0), RNG.standard_normal((2, 5, width)))
    return run


def _cloud_model(build):
    def run(**kwargs):
        model = build(**kwargs)
        lmax, channels = kwargs.get("lmax", 1), kwargs.get("channels_in", 2)
        return model.apply(model.init(0), RNG.standard_normal((1, 4, 3)),
                           RNG.standard_normal((1, 4, (lmax + 1) ** 2, channels)))
    return run


def _product(**kwargs):
    kernel = kernels.product(quaternions(), **kwargs)
    return kernel(np.ones((3, 4)), np.ones((3, 4)))


def _equivariance(**kwargs):
    return float(is_equivariant(lambda x: 2 * x, translations(4), **kwargs))


#: name -> (call, valid keyword arguments); each call returns numbers to check for finiteness.
ENTRY_POINTS = {
    "attention": (_sequence_model(attention, "d_model"), {"d_model": 4, "heads": 2, "causal": True, "rank": 1,
                                                          "d_head": None, "length": 3}),
    "convolution": (_sequence_model(convolution, "channels_in"), {"channels_in": 1, "channels_out": 1, "size": 3,
                                                                  "cyclic": True}),
    "gating": (_sequence_model(gating, "channels"), {"channels": 4, "function": "sigmoid", "length": 4}),
    "ssm": (_sequence_model(ssm, "channels"), {"channels": 4, "d_state": 4, "step_min": 1e-3, "step_max": 1e-1}),
    "mamba": (_sequence_model(mamba, "d_model"), {"d_model": 4, "d_state": 2, "expand": 2, "d_conv": 2,
                                                  "dt_rank": None, "dt_min": 1e-3, "dt_max": 1e-1}),
    "dynamical": (_sequence_model(dynamical, "d_model"), {"d_model": 4, "input_order": 2, "hidden_order": 1}),
    "ls2t": (_sequence_model(ls2t, "d_in"), {"d_in": 4, "width": 4, "order": 2}),
    "tfn": (_cloud_model(tfn), {"lmax": 1, "channels_in": 2, "channels_out": 2, "radius": 2.0, "basis": 4,
                                "hidden": 4}),
    "se3_attention": (_cloud_model(se3_attention), {"lmax": 1, "channels_in": 2, "channels": 2, "radius": 2.0,
                                                    "basis": 4, "hidden": 4}),
    "kernels.product": (_product, {"strategy": "auto", "dtype": np.float64, "layout": "batch-first"}),
    "signature": (lambda **k: signature(RNG.standard_normal((2, 5, 2)), **k),
                  {"depth": 2, "return_sequences": False, "method": "auto"}),
    "spherical_harmonics": (lambda **k: spherical_harmonics(**k), {"lmax": 2, "points": RNG.standard_normal((3, 3)),
                                                                   "normalize": True}),
    "wigner_D": (lambda **k: wigner_D(**k), {"l": 2, "rotation": random_rotation(seed=0)}),
    "random_rotation": (lambda **k: random_rotation(**k), {"seed": 0, "size": 2}),
    "translation": (lambda **k: translation(**k).structure_constants(), {"n": 3, "cyclic": True}),
    "translations": (lambda **k: translations(**k).matrices()[0], {"n": 3, "cyclic": True}),
    "permutations": (lambda **k: permutations(**k).matrices()[0], {"n": 3}),
    "is_equivariant": (_equivariance, {"samples": 2, "seed": 0, "tolerance": 1e-8}),
}


def _cases():
    return st.sampled_from(sorted((name, argument) for name, (_, valid) in ENTRY_POINTS.items()
                                  for argument in valid)).flatmap(
        lambda case: st.tuples(st.just(case[0]), st.just(case[1]), VALUES))


def _arrays(result):
    if isinstance(result, (tuple, list)):
        return [a for part in result for a in _arrays(part)]
    return [np.asarray(result)]


@settings(max_examples=400, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_one_bad_argument_is_named_or_the_call_works(case):
    name, argument, value = case
    call, valid = ENTRY_POINTS[name]
    try:
        result = call(**{**valid, argument: value})
    except (ValueError, TypeError) as error:
        assert argument in str(error), (name, argument, value, str(error))
        return
    arrays = _arrays(result)
    assert arrays and all(np.all(np.isfinite(a)) for a in arrays if a.dtype.kind in "fc"), (name, argument, value)
