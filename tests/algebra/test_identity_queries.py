"""The identity queries of an algebra system (issue 17, item 3), against facts from the literature (the
Cayley-Dickson tower, Lie and Jordan algebras) and against brute force on random elements."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

from basis_change import in_basis, unipotent
from product_interactions.algebra import Algebra, matrix_algebra, quaternions


def _cayley_dickson_product(a, b):
    """(p, q)(r, s) = (p r - s* q, s p + q r*) on integer vectors of length 2^n."""
    if len(a) == 1:
        return a * b
    h = len(a) // 2
    p, q, r, s = a[:h], a[h:], b[:h], b[h:]
    return np.concatenate([_cayley_dickson_product(p, r) - _cayley_dickson_product(_conjugate(s), q),
                           _cayley_dickson_product(s, p) + _cayley_dickson_product(q, _conjugate(r))])


def _conjugate(a):
    c = -a
    c[0] = a[0]
    return c


def cayley_dickson(dim: int) -> Algebra:
    eye = np.eye(dim, dtype=np.int64)

    def product(i, j):
        v = _cayley_dickson_product(eye[i], eye[j])
        return {int(k): int(v[k]) for k in np.flatnonzero(v)}
    return Algebra.from_function(dim, product)


def _bracket(algebra, sign):
    """x y + sign * y x (sign -1: the commutator, a Lie algebra; +1 with 1/2: the Jordan product)."""
    scale = sympy.Rational(1, 2) if sign == 1 else 1

    def product(i, j):
        out = {}
        for (a, b, s) in ((i, j, 1), (j, i, sign)):
            for k, c in algebra.product_of_basis(a, b).items():
                out[k] = out.get(k, 0) + s * scale * sympy.sympify(c)
        return {k: v for k, v in out.items() if v != 0}
    return Algebra.from_function(algebra.dim, product)


CROSS = Algebra.from_function(3, lambda i, j: {} if i == j else {3 - i - j: 1 if (j - i) % 3 == 1 else -1})


@pytest.mark.parametrize("dim, associative, alternative, flexible, power_associative", [
    (4, True, True, True, True),          # quaternions
    (8, False, True, True, True),         # octonions: alternative, not associative
    (16, False, False, True, True),       # sedenions: flexible and power-associative only
])
def test_the_cayley_dickson_tower(dim, associative, alternative, flexible, power_associative):
    A = cayley_dickson(dim)
    assert (A.is_associative(), A.is_alternative(), A.is_flexible(), A.is_power_associative()) == \
        (associative, alternative, flexible, power_associative)
    assert not A.is_lie() and not A.is_jordan()


def test_lie_and_jordan_algebras():
    gl2, jordan2 = _bracket(matrix_algebra(2), -1), _bracket(matrix_algebra(2), +1)
    assert CROSS.is_lie() and gl2.is_lie() and _bracket(quaternions(), -1).is_lie()
    assert not CROSS.is_alternative() and CROSS.is_flexible()
    assert jordan2.is_jordan() and jordan2.is_commutative() and not jordan2.is_associative()
    assert jordan2.is_power_associative() and not jordan2.is_lie()
    assert not _bracket(cayley_dickson(8), -1).is_lie()          # the octonion commutator breaks Jacobi


def _holds(law, algebra, rng, trials=4):
    """The law on random numeric elements (brute force)."""
    lam = algebra.structure_constants()
    mul = lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)  # noqa: E731
    return all(np.allclose(*law(mul, rng.standard_normal(algebra.dim), rng.standard_normal(algebra.dim),
                                rng.standard_normal(algebra.dim)), atol=1e-9) for _ in range(trials))


LAWS = {
    "is_alternative": lambda m, x, y, z: (np.concatenate([m(m(x, x), y), m(y, m(x, x))]),
                                          np.concatenate([m(x, m(x, y)), m(m(y, x), x)])),
    "is_flexible": lambda m, x, y, z: (m(m(x, y), x), m(x, m(y, x))),
    "is_power_associative": lambda m, x, y, z: (np.concatenate([m(m(x, x), x), m(m(m(x, x), x), x)]),
                                                np.concatenate([m(x, m(x, x)), m(m(x, x), m(x, x))])),
    "is_lie": lambda m, x, y, z: (np.concatenate([m(x, y), m(m(x, y), z) + m(m(y, z), x) + m(m(z, x), y)]),
                                  np.concatenate([-m(y, x), np.zeros_like(x)])),
    "is_jordan": lambda m, x, y, z: (np.concatenate([m(x, y), m(m(m(x, x), y), x)]),
                                     np.concatenate([m(y, x), m(m(x, x), m(y, x))])),
}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("query", sorted(LAWS))
def test_queries_agree_with_brute_force(query, seed):
    rng = np.random.default_rng(seed)
    candidates = [cayley_dickson(4), cayley_dickson(8), CROSS, _bracket(matrix_algebra(2), 1),
                  Algebra.from_structure_constants(rng.integers(-1, 2, (3, 3, 3)))]
    algebra = candidates[seed % len(candidates)]
    assert getattr(algebra, query)() == _holds(LAWS[query], algebra, rng)


def test_generic_element_queries_are_bounded():
    with pytest.raises(ValueError, match="is_power_associative: .* MAX_GENERIC_DIM = 16"):
        cayley_dickson(32).is_power_associative()


@pytest.mark.parametrize("perturbation", [0, sympy.Rational(1, 10**13), sympy.sqrt(3) / 10**40])
def test_exact_queries_are_not_decided_by_floating_point(perturbation):
    """Quaternions rescaled by s = sqrt(2) 10^6 (e_i -> s e_i multiplies every constant by s): associative exactly,
    although their float associator entries carry rounding errors of order s^2 eps.  Perturbing one constant by
    1e-13, or by sqrt(3) 1e-40, far below any float resolution of these numbers, breaks associativity, and the
    exact query sees it."""
    s = sympy.sqrt(2) * 10**6
    table = {(i, j): {k: s * c for k, c in quaternions().product_of_basis(i, j).items()}
             for i in range(4) for j in range(4)}
    table[1, 1][0] += perturbation
    A = Algebra.from_structure_constants(table, dim=4)
    assert A.is_associative() == (perturbation == 0)
    assert A.is_commutative() is False and A.is_alternative() == (perturbation == 0)


# A nilpotent algebra found by brute force over sparse {0, +-1} tables (issue 39): e1 e0 = e2, e0 e2 = e2 e0 = e3.
# Its only nonzero associators are (e1, e0, e0) = e3 and (e0, e1, e0) = -e3, so (x, x, y) = 0 for all x, y (left
# alternative) while (y, x, x) is e3 at y = e1, x = e0 (not right alternative).  Its opposite (a b := b a)
# is right alternative and not left alternative.
ONE_SIDED = np.zeros((4, 4, 4), dtype=np.int64)
ONE_SIDED[1, 0, 2] = ONE_SIDED[0, 2, 3] = ONE_SIDED[2, 0, 3] = 1


def _one_sided_laws(lam, rng, trials=5):
    """(left, right) alternative laws on random integer elements, by brute force."""
    mul = lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)  # noqa: E731
    elements = [(rng.integers(-3, 4, 4), rng.integers(-3, 4, 4)) for _ in range(trials)]
    left = all(np.array_equal(mul(mul(x, x), y), mul(x, mul(x, y))) for x, y in elements)
    right = all(np.array_equal(mul(mul(y, x), x), mul(y, mul(x, x))) for x, y in elements)
    return left, right


@pytest.mark.parametrize("opposite", [False, True])
@pytest.mark.parametrize("exact", [True, False])
def test_alternative_needs_both_one_sided_laws(opposite, exact):
    """is_alternative() checks the left and the right law: an algebra with only one of them is not alternative,
    whichever side it has (a check of one law alone passes one of the two)."""
    lam = ONE_SIDED.transpose(1, 0, 2) if opposite else ONE_SIDED
    left, right = _one_sided_laws(lam, np.random.default_rng(0))
    assert (left, right) == ((False, True) if opposite else (True, False))
    assert _one_sided_laws(lam, np.random.default_rng(1)) == (left, right)
    A = Algebra.from_structure_constants(lam) if exact else Algebra.from_structure_constants(
        lam.astype(float), exact=False, tol=1e-9)
    assert A.is_alternative() is False
    assert not A.is_associative() and A.is_flexible() == _holds(LAWS["is_flexible"], A, np.random.default_rng(2))
    octonions = cayley_dickson(8) if exact else cayley_dickson(8).numeric(tol=1e-9)     # alternative (Artin)
    assert octonions.is_alternative() is True and octonions.is_associative() is False


def _random_sparse_table(rng, dim=5, density=0.3):
    lam = rng.integers(-2, 3, (dim, dim, dim)) * (rng.random((dim, dim, dim)) < density)
    return Algebra.from_structure_constants(lam)


def _associator_products(entries):
    """How many products of two constants the associator takes, pair by pair (brute force): a constant
    e_i e_j -> e_p meets every constant e_p e_k (left side) and every constant e_i' e_p (right side)."""
    return sum((a[2] == b[0]) + (a[2] == b[1]) for a in entries for b in entries)


@pytest.mark.parametrize("seed", range(3))
def test_the_associators_cost_is_counted_exactly_and_refused_just_above_the_limit(seed, monkeypatch):
    from product_interactions.algebra import identities
    A = _random_sparse_table(np.random.default_rng(seed))
    terms = _associator_products(A.entries())
    assert terms > 0
    monkeypatch.setattr(identities, "MAX_ASSOCIATOR_TERMS", terms)
    assert A.is_associative() in (True, False)                     # at the limit: answered
    monkeypatch.setattr(identities, "MAX_ASSOCIATOR_TERMS", terms - 1)
    for query in ("is_associative", "is_alternative", "is_flexible"):
        with pytest.raises(ValueError, match=rf"{query}: .* {A.dim}-dimensional algebra takes {terms:,} products"
                                             rf".* \(about 0 s\)"):                    # 25 million a second
            getattr(A, query)()


def _brute_force_associative(A):
    lam = np.array(A.structure_constants(), dtype=object)
    left = np.einsum("ijp,pkm->ijkm", lam, lam)
    right = np.einsum("jkp,ipm->ijkm", lam, lam)
    return bool((left == right).all())


@pytest.mark.parametrize("scale", [1, sympy.sqrt(2)])
@pytest.mark.parametrize("seed", range(4))
def test_associativity_in_many_chunks_agrees_with_brute_force(seed, scale, monkeypatch):
    """The sparse associator is computed in chunks of i bounded by _CHUNK_ENTRIES; at a bound of one entry each
    row is its own chunk, and the answers (integer and float-screened paths) equal the dense associator's."""
    from product_interactions.algebra import identities
    rng = np.random.default_rng(seed)
    candidates = [_random_sparse_table(rng), cayley_dickson(4), cayley_dickson(8), matrix_algebra(2)]
    A = candidates[seed]
    if scale != 1:
        A = Algebra.from_structure_constants({(i, j): {k: scale * c for k, c in A.product_of_basis(i, j).items()}
                                              for i in range(A.dim) for j in range(A.dim)}, dim=A.dim)
    expected = _brute_force_associative(A)
    monkeypatch.setattr(identities, "_CHUNK_ENTRIES", 1)
    assert A.is_associative() == expected


def test_a_non_associative_table_with_irrational_constants_is_settled_in_floating_point(monkeypatch):
    """Not associative is proved by a float associator entry beyond its rounding bound, before any exact
    arithmetic: with the exact domain made unavailable the answer is still False (and True needs it)."""
    from product_interactions.algebra import identities
    octonions = cayley_dickson(8)
    scaled = lambda A: Algebra.from_structure_constants(  # noqa: E731
        {(i, j): {k: sympy.sqrt(3) * c for k, c in A.product_of_basis(i, j).items()}
         for i in range(A.dim) for j in range(A.dim)}, dim=A.dim)

    def no_exact_domain(*args, **kwargs):
        raise AssertionError("the exact associator was built")
    monkeypatch.setattr(identities, "associator_tensors", no_exact_domain)
    assert scaled(octonions).is_associative() is False
    with pytest.raises(AssertionError, match="exact associator"):
        scaled(quaternions()).is_associative()


def test_proportionality_of_two_sparse_tensors_by_hand():
    from sympy.polys.domains import QQ, ZZ

    from product_interactions.algebra.identities import proportionality
    a, b, c = (0, 0, 0, 0), (0, 1, 2, 3), (1, 1, 1, 1)
    assert proportionality({a: ZZ(6), b: ZZ(-4)}, {a: ZZ(3), b: ZZ(-2)}, ZZ) == 2
    assert proportionality({a: ZZ(3), b: ZZ(-2)}, {a: ZZ(6), b: ZZ(-4)}, ZZ) == sympy.Rational(1, 2)
    assert proportionality({a: QQ(1, 3)}, {a: QQ(-1)}, QQ) == sympy.Rational(-1, 3)
    assert proportionality({a: ZZ(6), b: ZZ(-4)}, {a: ZZ(3), b: ZZ(2)}, ZZ) is None       # one ratio differs
    assert proportionality({a: ZZ(6), b: ZZ(-4)}, {a: ZZ(3), c: ZZ(-2)}, ZZ) is None      # other supports
    assert proportionality({a: ZZ(6)}, {a: ZZ(3), b: ZZ(1)}, ZZ) is None
    assert proportionality({}, {}, ZZ) is None                                         # no ratio at all


def _mixed_basis(A, seed):
    """A in the basis f = e P, P = 1 + sqrt(2) N (N strictly upper triangular in {-1, 0, 1}): isomorphic to A, with
    dense constants in Z[sqrt(2)]."""
    return in_basis(A, unipotent(A.dim, seed, entries=(-1, 1), scale=sympy.sqrt(2)))


@pytest.mark.parametrize("seed", range(2))
def test_associative_algebras_with_dense_irrational_constants_pass_the_float_screen(seed):
    """M_3 in a basis mixed by sqrt(2): every associator entry sums many irrational products, so its float value
    carries rounding errors of a few eps; the screen must allow them (its bound) and leave the proof to the exact
    domain.  Octonions mixed alike stay non-associative and alternative."""
    assert _mixed_basis(matrix_algebra(3), seed).is_associative() is True
    octonions = _mixed_basis(cayley_dickson(8), seed)
    assert octonions.is_associative() is False and octonions.is_alternative() is True
