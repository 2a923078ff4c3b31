"""The algebra builders of issue 17 (item 5), against facts from the literature and brute force."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

from product_interactions.algebra import (cayley_dickson, complex_numbers, cross_product, cyclic_generators,
                                          diagonal, dihedral_generators, dual_numbers, exterior_algebra, group_algebra, jordan,
                                          lie_algebra, matrix_algebra, octonions, symmetric_generators)
from test_identity_queries import cayley_dickson as independent_cayley_dickson


def _mul(algebra):
    lam = algebra.structure_constants()
    return lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)


def test_the_cayley_dickson_tower_matches_an_independent_doubling_and_hurwitz():
    quaternions_ = cayley_dickson(complex_numbers())
    sedenions = cayley_dickson(octonions())
    for algebra in (quaternions_, octonions(), sedenions):
        assert np.array_equal(algebra.structure_constants(),
                              independent_cayley_dickson(algebra.dim).structure_constants())
    rng = np.random.default_rng(0)
    for algebra, composition in ((octonions(), True), (sedenions, False)):   # Hurwitz: normed up to dimension 8
        mul, x, y = _mul(algebra), *rng.standard_normal((2, algebra.dim))
        assert np.isclose(np.linalg.norm(mul(x, y)), np.linalg.norm(x) * np.linalg.norm(y)) == composition
    assert octonions().is_alternative() and not sedenions.is_alternative() and sedenions.is_flexible()
    assert len(octonions().derivations()) == 14                                  # g2


@pytest.mark.parametrize("name, n, dim, semisimple, derivations", [
    ("gl", 2, 4, False, 4), ("gl", 3, 9, False, 9),          # Der(gl_n) = ad(sl_n) + maps onto the centre
    ("sl", 2, 3, True, 3), ("sl", 3, 8, True, 8),             # semisimple: every derivation inner
    ("so", 2, 1, False, 1), ("so", 3, 3, True, 3), ("so", 4, 6, True, 6),
])
def test_classical_lie_algebras(name, n, dim, semisimple, derivations):
    algebra = lie_algebra(name, n)
    assert (algebra.dim, algebra.is_lie(), algebra.is_semisimple()) == (dim, True, semisimple)
    assert len(algebra.derivations()) == derivations


def test_killing_forms_of_classical_lie_algebras():
    sl3 = lie_algebra("sl", 3)                                   # K(x, y) = 2 n tr(x y) on sl(n)
    h1 = sl3.index("H1")
    assert sl3.killing_form()[h1, h1] == 2 * 3 * 2
    assert lie_algebra("so", 3).killing_form() == -2 * sympy.eye(3) == cross_product().killing_form()


@pytest.mark.parametrize("generators, order, classes, abelian", [
    (symmetric_generators(3), 6, 3, False), (symmetric_generators(4), 24, 5, False),
    (dihedral_generators(4), 8, 5, False), (dihedral_generators(5), 10, 4, False),
    (cyclic_generators(6), 6, 6, True),
])
def test_group_algebras_have_one_central_dimension_per_conjugacy_class(generators, order, classes, abelian):
    algebra = group_algebra(generators)
    assert (algebra.dim, len(algebra.center()), algebra.is_commutative()) == (order, classes, abelian)
    assert algebra.is_associative() and algebra.is_semisimple()                 # Maschke


def test_a_group_algebra_multiplies_like_its_regular_representation():
    algebra = group_algebra(dihedral_generators(4))
    lam = algebra.structure_constants()
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, algebra.dim))
    regular = lambda v: np.einsum("i,ijk->kj", v, lam)  # noqa: E731   left multiplication by v
    assert np.allclose(regular(_mul(algebra)(x, y)), regular(x) @ regular(y))


def test_jordan_algebras_dual_numbers_and_exterior_algebras():
    J = jordan(matrix_algebra(3))
    assert J.is_jordan() and J.is_commutative() and not J.is_associative()
    commutative = group_algebra(cyclic_generators(3))
    assert np.array_equal(jordan(commutative).structure_constants(), commutative.structure_constants())
    D = dual_numbers()
    x = D.element([2, 1])                                          # 2 + eps: forward-mode derivative of x^3 at 2
    assert list((x * x * x).flat) == [8, 12]
    E = exterior_algebra(3)
    e1, e2 = E.basis_element("e1"), E.basis_element("e2")
    assert e1 * e1 == 0 and e1 * e2 == -(e2 * e1) and E.dim == 8
    assert len(E.radical()) == 7                                   # everything without a scalar part


def test_builders_refuse_bad_input_by_name():
    with pytest.raises(ValueError, match="A: expected an algebra whose first basis element is its unit"):
        cayley_dickson(matrix_algebra(2))
    with pytest.raises(TypeError, match="A: expected an Algebra, got int"):
        jordan(3)
    with pytest.raises(ValueError, match="name: expected 'gl', 'sl' or 'so', got 'sp'"):
        lie_algebra("sp", 2)
    with pytest.raises(ValueError, match="n: at most algebra.lie_algebra.MAX_N"):
        lie_algebra("gl", 10**6)
    with pytest.raises(ValueError, match=r"generators\[0\]: expected a permutation of 0..1"):
        group_algebra([[0, 0]])
    with pytest.raises(ValueError, match="generators: the group they generate has more than"):
        group_algebra(symmetric_generators(8))
    with pytest.raises(TypeError, match="generators: expected a non-empty list"):
        group_algebra("S3")
    with pytest.raises(ValueError, match="n: at most 10 generators"):
        exterior_algebra(11)
    with pytest.raises(ValueError, match="A: the doubling of diagonal.* has dimension 128"):
        cayley_dickson(diagonal(64))


def _quickly_refused(call, pattern, seconds=2.0):
    import re
    import time
    start = time.perf_counter()
    with pytest.raises(ValueError) as error:
        call()
    assert time.perf_counter() - start < seconds, f"took {time.perf_counter() - start:.1f} s"
    assert re.search(pattern, str(error.value)), str(error.value)


def test_groups_too_large_are_refused_before_building_saying_the_size():
    """Issue 36: group_algebra(cyclic_generators(10**6)) ran 50 s into a MemoryError (1,024 permutations of
    degree 10^6 built before MAX_ORDER was checked); symmetric_generators(10**9) raised a raw MemoryError."""
    _quickly_refused(lambda: group_algebra(cyclic_generators(10**6)),
                     r"generators: the cyclic group they generate has 1,000,000 elements of degree 1,000,000")
    _quickly_refused(lambda: group_algebra(cyclic_generators(2000)), r"has 2,000 elements .*MAX_ENTRIES")
    for build in (symmetric_generators, cyclic_generators, dihedral_generators):
        _quickly_refused(lambda: build(10**9), r"n: permutations of 1,000,000,000 points, more than "
                                               r"algebra.group_algebra.MAX_DEGREE = 1,048,576", seconds=0.5)
    _quickly_refused(lambda: group_algebra([[1, 0, 2], list(range(2 * 10**6))]), r"generators\[1\]: permutations of "
                                                                                 r"2,000,000 points")
    assert group_algebra([[1, 0] + list(range(2, 5000))]).dim == 2        # many points, a small group: fine


def test_an_associativity_check_too_large_says_its_cost_before_starting():
    """Issue 36: group_algebra(symmetric_generators(6)).radical() took 32 s and 850 MB."""
    from product_interactions.algebra import identities
    S6 = group_algebra(symmetric_generators(6))
    for query in ("radical", "is_associative", "is_alternative", "is_semisimple"):
        _quickly_refused(getattr(S6, query), rf"{query}: .*746,496,000 products of structure constants, more than "
                                            r"algebra.identities.MAX_ASSOCIATOR_TERMS = 67,108,864 \(about 30 s\)",
                         seconds=10)                # reading the 518,400 entries: 0.5-3 s, under load; the check: 30 s
    assert identities.MAX_ASSOCIATOR_TERMS == 2**26
    assert group_algebra(symmetric_generators(4)).radical() == []
