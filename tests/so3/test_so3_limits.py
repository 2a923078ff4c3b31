"""Numeric SO(3) functions refuse degrees whose arrays exceed algebra.limits.MAX_ENTRIES, before allocating."""
import time

import numpy as np
import pytest
import sympy

from product_interactions.algebra.so3 import (basis_labels, clebsch_gordan_coefficients, clebsch_gordan_path,
                                              random_rotation, representation, sphere_quadrature,
                                              spherical_harmonic_formula, spherical_harmonics, wigner_D,
                                              wigner_D_exact)

ROTATION = random_rotation(seed=0)


@pytest.mark.parametrize("call, argument", [
    (lambda degree: spherical_harmonics(degree, np.array([0.0, 0.0, 1.0])), "lmax"),
    (lambda degree: wigner_D(degree, ROTATION), "l"),
    (lambda degree: representation(degree, ROTATION), "lmax"),
    (lambda degree: sphere_quadrature(degree), "degree"),
    (lambda degree: basis_labels(degree), "lmax"),
])
def test_huge_degrees_are_refused_at_once(call, argument):
    start = time.perf_counter()
    for degree in (10**3 * 3, 10**6, 10**18):
        with pytest.raises(ValueError, match=f"^{argument}: .* more than algebra.limits.MAX_ENTRIES"):
            call(degree)
    assert time.perf_counter() - start < 1


def test_moderate_degrees_still_work():
    assert wigner_D(20, ROTATION).shape == (41, 41)
    assert spherical_harmonics(100, np.array([0.0, 0.0, 1.0])).shape == (101**2,)


@pytest.mark.parametrize("call, words", [
    (lambda: spherical_harmonic_formula(10**6, 0), "l: the exact formula is built for l <= MAX_FORMULA_DEGREE = 64"),
    (lambda: wigner_D_exact(65, sympy.eye(3)), "l: the exact formula"),
    (lambda: clebsch_gordan_coefficients(500, 500, 0), "l1, l2: the path (500, 500, 0) needs exact 3j symbols"),
    (lambda: clebsch_gordan_path(10**6, 10**6, 0), "l1, l2, l: the path (1000000, 1000000, 0) has a"),
])
def test_exact_so3_values_are_bounded(call, words):
    start = time.perf_counter()
    with pytest.raises(ValueError) as error:
        call()
    assert time.perf_counter() - start < 1
    assert words in str(error.value)
