"""Tests of `direct_sum` and `tensor_product` against brute force on explicitly built structure constants.

The reference for a tensor product is the Kronecker construction: lam[(a, b), (a', b'), (a'', b'')] =
lamA[a, a', a''] * lamB[b, b', b''] with row-major flattening (np.kron-style); the reference for a direct sum is
the block-diagonal table.  Inherited properties (associativity, commutativity, anticommutativity, unit, centre)
are checked against independent brute-force computations on those dense tables, including factors that are
non-unital, non-associative, anticommutative (cross product, sl2) or anti-associative.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions.algebra import (Algebra, DirectSum, TensorProduct, clifford, complex_numbers, diagonal, direct_sum,
                     matrix_algebra, position, quaternions, tensor_algebra, tensor_product, translation)

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)


# ------------------------------------------------------------------------------------------ a zoo of factors
def cross_product():
    """R^3 with the cross product: anticommutative, not associative, no unit (a Lie algebra, so(3))."""
    def mul(i, j):
        if i == j:
            return {}
        k = 3 - i - j
        return {k: 1 if (j - i) % 3 == 1 else -1}
    return Algebra.from_function(3, mul, basis=["x", "y", "z"], name="cross")


def sl2():
    """sl2 on h, e, f: [h, e] = 2e, [h, f] = -2f, [e, f] = h (anticommutative, Jacobi, not associative)."""
    table = {(0, 1): {1: 2}, (1, 0): {1: -2}, (0, 2): {2: -2}, (2, 0): {2: 2}, (1, 2): {0: 1}, (2, 1): {0: -1}}
    return Algebra.from_structure_constants(table, basis=["h", "e", "f"], name="sl2")


def anti_associative(a=1, b=-1):
    """e1 e1 = e2, e1 e2 = a e3, e2 e1 = b e3: (e1 e1) e1 = b e3, e1 (e1 e1) = a e3, all other triples zero.

    So the associator sides are proportional, (xy)z = (b/a) x(yz): anti-associative for b = -a (the default),
    associative for a = b.
    """
    table = {(0, 0): {1: 1}, (0, 1): {2: a}, (1, 0): {2: b}}
    return Algebra.from_structure_constants(table, dim=3, name=f"N({a},{b})")


def left_zero():
    """e0 e1 = e1 only: every (xy)z vanishes but x(yz) does not."""
    return Algebra.from_structure_constants({(0, 1): {1: 1}}, dim=2, name="L0")


def right_zero():
    """e1 e0 = e1 only: every x(yz) vanishes but (xy)z does not."""
    return Algebra.from_structure_constants({(1, 0): {1: 1}}, dim=2, name="R0")


def zero_algebra(d=2):
    return Algebra.from_structure_constants({}, dim=d, name=f"zero({d})")


def nilpotent():
    """e0 e0 = e1: associative, commutative, no unit."""
    return Algebra.from_structure_constants({(0, 0): {1: 1}}, dim=2, name="nil")


def jordan():
    """M_2 with x o y = (xy + yx)/2: commutative, unital, not associative."""
    M = matrix_algebra(2)
    lam = M.structure_constants(dtype=object)
    return Algebra.from_structure_constants((lam + lam.transpose(1, 0, 2)) * sympy.Rational(1, 2), name="J2")


ZOO = {
    "complex": complex_numbers, "quaternions": quaternions, "M2": lambda: matrix_algebra(2),
    "Z3": lambda: translation(3), "Z3trunc": lambda: translation(3, cyclic=False), "diag2": lambda: diagonal(2),
    "pos2": lambda: position(2), "Cl(1,0,1)": lambda: clifford(1, 0, 1), "T(1,2)": lambda: tensor_algebra(1, 2),
    "cross": cross_product, "sl2": sl2, "N": anti_associative, "L0": left_zero, "R0": right_zero,
    "zero": zero_algebra, "nil": nilpotent, "J2": jordan,
}


# -------------------------------------------------------------------------------------- brute-force references
def dense(A):
    """Exact dense structure constants: int64 when all integer, else sympy objects."""
    lam = A.structure_constants(dtype=object)
    if all(isinstance(v, (int, sympy.Integer)) for v in lam.reshape(-1)):
        return lam.astype(np.int64)
    return lam


def kron_constants(*algebras):
    """np.kron-style Kronecker structure constants of the factors (first factor most significant)."""
    lam = np.ones((1, 1, 1), dtype=object)
    for algebra in algebras:
        other = algebra.structure_constants(dtype=object)
        d0, d1 = lam.shape[0], other.shape[0]
        lam = np.einsum("ijk,lmn->iljmkn", lam, other).reshape(d0 * d1, d0 * d1, d0 * d1)
    return lam


def kron_constants_by_np_kron(A, B):
    """The same for two factors, slice by slice: lam[:, :, a * dB + b] = np.kron(lamA[:, :, a], lamB[:, :, b])."""
    la, lb = dense(A).astype(object), dense(B).astype(object)
    da, db = A.dim, B.dim
    lam = np.zeros((da * db,) * 3, dtype=object)
    for a, b in itertools.product(range(da), range(db)):
        lam[:, :, a * db + b] = np.kron(la[:, :, a], lb[:, :, b])
    return lam


def kron_algebra(*algebras):
    return Algebra.from_structure_constants(kron_constants(*algebras))


def is_zero_array(array) -> bool:
    if array.dtype != object:
        return not array.any()
    return all(sympy.simplify(v) == 0 for v in array.reshape(-1))


def as_exact(lam):
    """Rational constants scaled to int64 (the identities checked are homogeneous), else left as objects."""
    values = lam.reshape(-1)
    if lam.dtype == object and all(isinstance(v, (int, sympy.Rational)) for v in values):
        denominator = sympy.ilcm(*[sympy.Rational(v).q for v in values], 1)
        return np.array([int(sympy.Rational(v) * denominator) for v in values], dtype=np.int64).reshape(lam.shape)
    return lam


def brute_associative(lam) -> bool:
    lam = as_exact(lam)
    return is_zero_array(np.einsum("ijp,pkm->ijkm", lam, lam) - np.einsum("jkp,ipm->ijkm", lam, lam))


def brute_symmetric(lam, sign) -> bool:
    lam = as_exact(lam)
    return is_zero_array(lam - sign * lam.transpose(1, 0, 2))


def brute_unit(lam):
    """The unit from the linear system u e_j = e_j = e_j u (sympy Matrix solve), or None."""
    d = lam.shape[0]
    rows, rhs = [], []
    for j, k in itertools.product(range(d), repeat=2):
        rows.append([lam[i, j, k] for i in range(d)])        # (u e_j)_k
        rhs.append(int(j == k))
        rows.append([lam[j, i, k] for i in range(d)])        # (e_j u)_k
        rhs.append(int(j == k))
    try:
        solution, params = sympy.Matrix(rows).gauss_jordan_solve(sympy.Matrix(rhs))
    except ValueError:
        return None
    solution = solution.subs({p: 0 for p in params})
    return [sympy.nsimplify(v) if v.is_number else v for v in solution]


def brute_center(lam):
    """A basis of {z : z e_j = e_j z for all j} as a sympy nullspace of the stacked commutator matrices."""
    d = lam.shape[0]
    rows = [[lam[i, j, k] - lam[j, i, k] for i in range(d)] for j in range(d) for k in range(d)]
    return [list(v) for v in sympy.Matrix(rows).nullspace()]


def same_span(a, b) -> bool:
    a, b = [list(v) for v in a], [list(v) for v in b]
    rank = lambda vs: sympy.Matrix(vs).rank() if vs else 0  # noqa: E731
    return rank(a) == rank(b) == rank(a + b)


def random_element(A, rng, rational=False):
    if rational:
        values = [Fraction(int(n), int(d)) for n, d in zip(rng.integers(-4, 5, A.dim), rng.integers(1, 4, A.dim))]
    else:
        values = [int(v) for v in rng.integers(-3, 4, A.dim)]
    return A.element(values)


def product_from_constants(lam, x, y):
    d = lam.shape[0]
    out = [sympy.Integer(0)] * d
    for i, j in itertools.product(range(d), repeat=2):
        if x[i] != 0 and y[j] != 0:
            for k in range(d):
                if lam[i, j, k] != 0:
                    out[k] += x[i] * y[j] * lam[i, j, k]
    return [sympy.expand(v) for v in out]


def test_zoo_factors_have_the_advertised_properties():
    # guards the references below: if one of these changed, the combinator tests would test less
    cross, lie, n, jo = cross_product(), sl2(), anti_associative(), jordan()
    assert cross.is_anticommutative() and not cross.is_associative() and cross.unit() is None
    assert brute_symmetric(dense(cross), -1) and not brute_associative(dense(cross))
    x, y, z = (cross.basis_element(label) for label in "xyz")
    assert x * y == z and y * z == x and z * x == y
    assert lie.is_anticommutative() and not lie.is_associative()
    assert not n.is_associative() and not brute_associative(dense(n))
    e1 = n.basis_element(0)
    assert (e1 * e1) * e1 == -(e1 * (e1 * e1))
    assert jo.is_commutative() and not jo.is_associative() and jo.unit() == jo.element([1, 0, 0, 1])
    assert not brute_associative(dense(jo))
    assert left_zero().is_associative() is False and right_zero().is_associative() is False
    assert nilpotent().is_associative() and nilpotent().unit() is None


# ---------------------------------------------------------------------------------- Kronecker construction
KRON_CASES = [("Z3", "diag2"), ("complex", "quaternions"), ("cross", "M2"), ("N", "complex"), ("M2", "J2"),
              ("sl2", "Z3trunc"), ("L0", "R0")]


@pytest.mark.parametrize("a, b", KRON_CASES)
def test_tensor_product_structure_constants_are_the_kronecker_construction(a, b):
    A, B = ZOO[a](), ZOO[b]()
    P = tensor_product(A, B)
    assert isinstance(P, TensorProduct)
    assert P.shape == (A.dim, B.dim) and P.dim == A.dim * B.dim
    assert P.factors == (A, B)
    assert P.nnz == A.nnz * B.nnz
    reference = kron_constants_by_np_kron(A, B)
    assert np.array_equal(kron_constants(A, B), reference)
    got = P.structure_constants(dtype=object)
    assert got.shape == reference.shape
    assert all(sympy.simplify(u - v) == 0 for u, v in zip(got.reshape(-1), reference.reshape(-1)))
    np.testing.assert_allclose(P.structure_constants(), reference.astype(float), atol=0)
    expected_entries = sorted((i, j, k, reference[i, j, k]) for i, j, k in zip(*np.nonzero(reference != 0)))
    assert [(int(i), int(j), int(k)) for i, j, k, _ in P.entries()] == [e[:3] for e in expected_entries]


@pytest.mark.parametrize("a, b", KRON_CASES)
def test_tensor_product_products_agree_with_the_kronecker_algebra(a, b):
    A, B = ZOO[a](), ZOO[b]()
    P, K = tensor_product(A, B), kron_algebra(A, B)
    rng = np.random.default_rng(sum(map(ord, a + b)))
    for _ in range(3):
        x, y = random_element(P, rng, rational=True), random_element(P, rng, rational=True)
        product = x * y
        assert list(product.flat) == list((K.element(list(x.flat)) * K.element(list(y.flat))).flat)
        assert product.coefficients.shape == P.shape
    # pure tensors multiply factorwise: (a (x) b)(a' (x) b') = aa' (x) bb'
    a1, a2 = random_element(A, rng), random_element(A, rng)
    b1, b2 = random_element(B, rng), random_element(B, rng)
    pure = lambda u, v: P.element(np.multiply.outer(u.coefficients, v.coefficients))  # noqa: E731
    assert pure(a1, b1) * pure(a2, b2) == pure(a1 * a2, b1 * b2)


def test_tensor_product_symbolic_product_formula_matches_the_kronecker_algebra():
    A, B = complex_numbers(), cross_product()
    P, K = tensor_product(A, B), kron_algebra(A, B)
    x, y = P.symbols("x"), P.symbols("y")
    assert [str(s) for s in x.flat[:3]] == ["x_0_0", "x_0_1", "x_0_2"]
    product = (x * y).flat
    assert list(product) == [sympy.expand(v) for v in product_from_constants(K.structure_constants(dtype=object),
                                                                             x.flat, y.flat)]


def test_three_factor_product_and_nested_flattening():
    A, B, C = complex_numbers(), translation(3), diagonal(2)
    flat = tensor_product(A, B, C)
    left, right = tensor_product(tensor_product(A, B), C), tensor_product(A, tensor_product(B, C))
    for P in (flat, left, right):
        assert isinstance(P, TensorProduct)
        assert P.shape == (2, 3, 2) and P.dim == 12
        assert P.factors == (A, B, C)
        assert P.basis[0] == ("1", "e_0", "e_0") and P.basis[-1] == ("i", "e_2", "e_1")
        assert P.basis == tuple(itertools.product(A.basis, B.basis, C.basis))
    assert flat == left == right
    K = kron_algebra(A, B, C)
    assert np.array_equal(flat.structure_constants(dtype=object), K.structure_constants(dtype=object))
    rng = np.random.default_rng(3)
    x, y = random_element(flat, rng), random_element(flat, rng)
    assert list((x * y).flat) == list((K.element(list(x.flat)) * K.element(list(y.flat))).flat)
    assert list((left.element(list(x.flat)) * left.element(list(y.flat))).flat) == list((x * y).flat)


def test_tensor_product_of_one_algebra_is_that_algebra():
    A = quaternions()
    assert tensor_product(A) is A
    assert tensor_product(tensor_product(A)) is A


def test_tensor_product_element_access():
    P = tensor_product(diagonal(2), complex_numbers())
    assert P.basis == (("e_0", "1"), ("e_0", "i"), ("e_1", "1"), ("e_1", "i"))
    x = P.element([[1, 2], [3, 4]])
    assert x.coefficients.shape == (2, 2)
    assert x[(1, 0)] == 3 and x[("e_1", "i")] == 4 and x.flat == (1, 2, 3, 4)
    assert x.to_array().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert P.element([1, 2, 3, 4]) == x
    assert P.basis_element((1, 1)) == P.basis_element(("e_1", "i")) == P.basis_element(3)
    # (e_1 (x) i)(e_1 (x) i) = e_1 (x) -1
    assert P.basis_element((1, 1)) * P.basis_element((1, 1)) == -P.basis_element((1, 0))
    with pytest.raises(ValueError, match="coefficients"):
        P.element([[1, 2, 3], [4, 5, 6]])


def test_elements_of_a_tensor_product_and_of_its_kronecker_algebra_do_not_mix():
    A, B = complex_numbers(), diagonal(2)
    P, K = tensor_product(A, B), kron_algebra(A, B)
    with pytest.raises(ValueError):
        P.basis_element(0) * K.basis_element(0)
    with pytest.raises(ValueError):
        P.basis_element(0) + tensor_product(B, A).basis_element(0)


# --------------------------------------------------------------------------------------- inherited properties
def check_inherited(P, factors):
    """Compare every inherited query of the tensor product P with brute force on the Kronecker constants."""
    lam = kron_constants(*factors)
    assert P.is_associative() == brute_associative(lam), "is_associative"
    assert P.is_commutative() == brute_symmetric(lam, +1), "is_commutative"
    assert P.is_anticommutative() == brute_symmetric(lam, -1), "is_anticommutative"
    unit, expected = P.unit(), brute_unit(lam)
    assert (unit is None) == (expected is None), "unit exists"
    if unit is not None:
        assert all(sympy.simplify(u - v) == 0 for u, v in zip(unit.flat, expected)), "unit value"
    center = P.center()
    assert same_span([z.flat for z in center], brute_center(lam)), "center"
    assert len(center) == len(brute_center(lam))


INHERIT_CASES = [
    ("complex", "quaternions"), ("M2", "Z3"), ("quaternions", "quaternions"), ("Cl(1,0,1)", "diag2"),
    ("cross", "cross"),            # anticommutative (x) anticommutative is commutative
    ("cross", "sl2"), ("cross", "complex"), ("sl2", "M2"), ("cross", "zero"),
    ("N", "N"),                    # anti-associative (x) anti-associative is associative
    ("N", "complex"), ("N", "cross"), ("L0", "R0"), ("L0", "L0"), ("R0", "M2"), ("nil", "cross"),
    ("nil", "complex"), ("J2", "complex"), ("J2", "quaternions"), ("zero", "zero"), ("Z3trunc", "pos2"),
    ("T(1,2)", "J2"),
]


@pytest.mark.parametrize("a, b", INHERIT_CASES)
def test_tensor_product_inherits_properties_like_brute_force(a, b):
    factors = (ZOO[a](), ZOO[b]())
    check_inherited(tensor_product(*factors), factors)


@pytest.mark.parametrize("names", [("cross", "cross", "cross"), ("N", "N", "complex"), ("N", "N", "N"),
                                   ("complex", "diag2", "Z3trunc"), ("cross", "sl2", "complex")])
def test_three_factor_tensor_products_inherit_properties(names):
    factors = tuple(ZOO[n]() for n in names)
    check_inherited(tensor_product(*factors), factors)


def test_anticommutative_factors_give_a_commutative_product():
    P = tensor_product(cross_product(), cross_product())
    assert P.is_commutative() is True and P.is_anticommutative() is False
    assert brute_symmetric(kron_constants(cross_product(), cross_product()), +1)
    x, y = (P.element(v) for v in np.random.default_rng(0).integers(-3, 4, (2, 9)).tolist())
    assert x * y == y * x
    Q = tensor_product(cross_product(), sl2(), cross_product())
    assert Q.is_anticommutative() and not Q.is_commutative()
    R = tensor_product(cross_product(), complex_numbers())
    assert R.is_anticommutative() and not R.is_commutative()


def test_tensor_product_associativity_with_proportional_associator_sides():
    # N(a, b) has (xy)z = (b/a) x(yz); the product of two is associative exactly when the ratios multiply to 1
    r2 = sympy.sqrt(2)
    cases = [((r2, 1), (1, r2), True), ((r2, 1), (r2, 1), False), ((2, 1), (1, 2), True), ((2, 1), (2, 1), False),
             ((1, 1), (1, 1), True), ((1, -1), (1, -1), True), ((1, -1), (1, 1), False)]
    for (a1, b1), (a2, b2), expected in cases:
        A, B = anti_associative(a1, b1), anti_associative(a2, b2)
        P = tensor_product(A, B)
        assert P.is_associative() == expected == brute_associative(kron_constants(A, B)), (a1, b1, a2, b2)


def test_non_associative_factor_with_a_unital_associative_one_is_not_associative():
    for name in ("cross", "N", "J2", "L0", "R0", "sl2"):
        P = tensor_product(ZOO[name](), matrix_algebra(2))
        assert P.is_associative() is False
        assert brute_associative(kron_constants(ZOO[name](), matrix_algebra(2))) is False


def test_nilpotent_or_zero_factor_makes_any_product_associative():
    for other in ("cross", "N", "J2", "sl2"):
        for factor in (nilpotent, zero_algebra):
            P = tensor_product(factor(), ZOO[other]())
            assert P.is_associative() is True
            assert brute_associative(kron_constants(factor(), ZOO[other]()))


@pytest.mark.parametrize("a, b", [("complex", "quaternions"), ("M2", "complex"), ("Z3", "diag2"),
                                  ("quaternions", "M2"), ("Cl(1,0,1)", "Z3trunc"), ("J2", "diag2")])
def test_unit_and_centre_of_unital_factors(a, b):
    A, B = ZOO[a](), ZOO[b]()
    P = tensor_product(A, B)
    unit = P.unit()
    assert unit == P.element(np.multiply.outer(A.unit().coefficients, B.unit().coefficients))
    rng = np.random.default_rng(len(a) * 7 + len(b))
    x = random_element(P, rng, rational=True)
    assert unit * x == x == x * unit
    # the centre is the product of the centres, and agrees with the brute-force commutant
    products = [np.multiply.outer(za.coefficients, zb.coefficients).reshape(-1)
                for za, zb in itertools.product(A.center(), B.center())]
    assert len(P.center()) == len(A.center()) * len(B.center())
    assert same_span([z.flat for z in P.center()], products)
    assert same_span([z.flat for z in P.center()], brute_center(kron_constants(A, B)))


def test_centre_of_cl3_tensor_cl1_by_hand():
    P = tensor_product(clifford(3), clifford(1))
    expected = [P.basis_element((P.factors[0].index(a), P.factors[1].index(b))).flat
                for a, b in [("1", "1"), ("1", "e1"), ("e123", "1"), ("e123", "e1")]]
    assert same_span([z.flat for z in P.center()], expected)


# ------------------------------------------------------------------------------------- random factor algebras
@st.composite
def small_algebra(draw):
    if draw(st.booleans()):
        name = draw(st.sampled_from(["complex", "Z3trunc", "diag2", "cross", "N", "L0", "R0", "nil", "zero",
                                     "Cl(1,0,1)", "T(1,2)"]))
        return ZOO[name]()
    d = draw(st.integers(1, 2))
    values = draw(st.lists(st.integers(-1, 1), min_size=d**3, max_size=d**3))
    lam = np.array(values, dtype=np.int64).reshape(d, d, d)
    kind = draw(st.sampled_from(["any", "symmetric", "antisymmetric"]))
    if kind == "symmetric":
        lam = lam + lam.transpose(1, 0, 2)
    elif kind == "antisymmetric":
        lam = lam - lam.transpose(1, 0, 2)
    return Algebra.from_structure_constants(lam.tolist())


@SETTINGS
@given(factors=st.lists(small_algebra(), min_size=2, max_size=3), seed=st.integers(0, 2**16))
def test_random_tensor_products_match_brute_force(factors, seed):
    P = tensor_product(*factors)
    assert P.shape == tuple(f.dim for f in factors)
    check_inherited(P, factors)
    lam = kron_constants(*factors)
    rng = np.random.default_rng(seed)
    x, y = random_element(P, rng), random_element(P, rng)
    assert list((x * y).flat) == product_from_constants(lam, x.flat, y.flat)
    # the regular representations agree with multiplication
    assert list(P.left_regular(x) * sympy.Matrix(y.flat)) == list((x * y).flat)
    assert list(P.right_regular(x) * sympy.Matrix(y.flat)) == list((y * x).flat)


# ---------------------------------------------------------------------------------- left / right regular
@pytest.mark.parametrize("make", [
    lambda: tensor_product(complex_numbers(), cross_product()),
    lambda: tensor_product(matrix_algebra(2), translation(2), diagonal(2)),
    lambda: direct_sum(quaternions(), sl2()),
    lambda: clifford(2, 0, 1), lambda: tensor_algebra(2, 2), lambda: jordan(),
], ids=["complex(x)cross", "M2(x)Z2(x)diag2", "H(+)sl2", "Cl(2,0,1)", "T(2,2)", "J2"])
def test_left_and_right_regular_agree_with_multiplication(make):
    A = make()
    rng = np.random.default_rng(A.dim)
    for _ in range(2):
        x, y = random_element(A, rng, rational=True), random_element(A, rng, rational=True)
        L, R = A.left_regular(x), A.right_regular(x)
        assert L.shape == R.shape == (A.dim, A.dim)
        assert list(L * sympy.Matrix(y.flat)) == list((x * y).flat)
        assert list(R * sympy.Matrix(y.flat)) == list((y * x).flat)
    # column j of L(x) is x e_j
    x = random_element(A, rng)
    L = A.left_regular(x)
    for j in range(A.dim):
        assert list(L[:, j]) == list((x * A.basis_element(j)).flat)
    # a basis label works as the argument too
    assert A.left_regular(A.basis[0]) == A.left_regular(A.basis_element(0))


# --------------------------------------------------------------------------------------- size limits
def test_large_tensor_product_structure_constants_refuse_naming_the_size():
    P = tensor_product(matrix_algebra(6), matrix_algebra(6))
    assert P.dim == 1296 and P.shape == (36, 36)
    with pytest.raises(ValueError, match="structure_constants") as info:
        P.structure_constants()
    message = str(info.value)
    assert f"{1296**3 * 8:,}" in message and "bytes" in message
    with pytest.raises(ValueError, match=f"{1296**3 * 8:,}"):
        P.structure_constants(dtype=object)


def test_small_tensor_product_refuses_beyond_max_bytes():
    P = tensor_product(complex_numbers(), diagonal(3))
    with pytest.raises(ValueError, match=f"{6**3 * 8:,}"):
        P.structure_constants(max_bytes=100)
    assert P.structure_constants(max_bytes=6**3 * 8).shape == (6, 6, 6)


def test_huge_tensor_product_answers_queries_from_its_factors():
    # 2.56 million Kronecker entries: more than KRONECKER_LIMIT, so entries() refuses; the inherited queries must
    # still be answered from the factors without building it.
    P = tensor_product(translation(40), translation(40))
    assert P.nnz == 1600**2
    with pytest.raises(ValueError, match="2,560,000"):
        P.entries()
    assert P.is_associative() and P.is_commutative() and not P.is_anticommutative()
    assert P.unit() == P.basis_element((0, 0))
    Q = tensor_product(cross_product(), translation(40), translation(40))
    assert Q.is_anticommutative() and not Q.is_associative() and Q.unit() is None


# ------------------------------------------------------------------------------------------------- direct sum
def block_constants(*algebras):
    d = sum(a.dim for a in algebras)
    lam = np.zeros((d, d, d), dtype=object)
    offset = 0
    for a in algebras:
        n = a.dim
        lam[offset:offset + n, offset:offset + n, offset:offset + n] = a.structure_constants(dtype=object)
        offset += n
    return lam


DIRECT_CASES = [("complex", "diag2"), ("cross", "quaternions"), ("cross", "sl2"), ("M2", "L0"), ("J2", "complex"),
                ("N", "N"), ("Z3", "Z3trunc", "pos2"), ("nil", "complex"), ("zero", "cross")]


@pytest.mark.parametrize("names", DIRECT_CASES, ids=["+".join(c) for c in DIRECT_CASES])
def test_direct_sum_matches_block_diagonal_brute_force(names):
    summands = [ZOO[n]() for n in names]
    D = direct_sum(*summands)
    assert isinstance(D, DirectSum)
    assert D.dim == sum(s.dim for s in summands) and D.shape == (D.dim,)
    assert D.summands == tuple(summands)
    assert D.offsets == tuple(itertools.accumulate((s.dim for s in summands), initial=0))
    assert D.basis == tuple(f"{p}:{label}" for p, s in enumerate(summands) for label in s.basis)
    lam = block_constants(*summands)
    assert np.array_equal(D.structure_constants(dtype=object), lam)
    # inherited: associative / commutative / anticommutative iff every summand is; unit iff every summand has one
    assert D.is_associative() == all(s.is_associative() for s in summands) == brute_associative(lam)
    assert D.is_commutative() == all(s.is_commutative() for s in summands) == brute_symmetric(lam, +1)
    assert D.is_anticommutative() == all(s.is_anticommutative() for s in summands) == brute_symmetric(lam, -1)
    units = [s.unit() for s in summands]
    expected = brute_unit(lam)
    if None in units:
        assert D.unit() is None and expected is None
    else:
        assert D.unit() == D.element([c for u in units for c in u.flat])
        assert list(D.unit().flat) == expected
    # the centre is the direct sum of the centres
    blocks = []
    for b, s in enumerate(summands):
        for z in s.center():
            vector = [0] * D.dim
            vector[D.offsets[b]:D.offsets[b + 1]] = z.flat
            blocks.append(vector)
    assert same_span([z.flat for z in D.center()], blocks)
    assert same_span(blocks, brute_center(lam))
    # products are blockwise; cross terms vanish
    rng = np.random.default_rng(len(names))
    parts_x = [random_element(s, rng, rational=True) for s in summands]
    parts_y = [random_element(s, rng, rational=True) for s in summands]
    x = D.element([c for p in parts_x for c in p.flat])
    y = D.element([c for p in parts_y for c in p.flat])
    assert list((x * y).flat) == [c for a, b in zip(parts_x, parts_y) for c in (a * b).flat]
    for b1, b2 in itertools.permutations(range(len(summands)), 2):
        for i in range(D.offsets[b1], D.offsets[b1 + 1]):
            for j in range(D.offsets[b2], D.offsets[b2 + 1]):
                assert D.basis_element(i) * D.basis_element(j) == D.zero()


def test_direct_sum_projections_and_inclusions_are_homomorphisms():
    A, B = quaternions(), cross_product()
    D = direct_sum(A, B)
    for b, s in enumerate(D.summands):
        projection = np.zeros((s.dim, D.dim), dtype=int)
        projection[:, D.offsets[b]:D.offsets[b + 1]] = np.eye(s.dim, dtype=int)
        assert D.is_homomorphism(projection.tolist(), s)
        assert s.is_homomorphism(projection.T.tolist(), D)
    swap = np.zeros((D.dim, D.dim), dtype=int)      # swapping the blocks of H (+) cross is not a map onto itself
    swap[:, ::-1] = np.eye(D.dim, dtype=int)
    assert not D.is_homomorphism(swap.tolist(), D)


def test_direct_sum_docstring_example_and_nesting():
    A = direct_sum(complex_numbers(), diagonal(2))
    assert (A.dim, A.basis, A.offsets) == (4, ("0:1", "0:i", "1:e_0", "1:e_1"), (0, 2, 4))
    assert A.unit() == A.element([1, 0, 1, 1])
    nested = direct_sum(A, cross_product())
    assert nested.dim == 7 and nested.basis[0] == "0:0:1" and nested.basis[-1] == "1:z"
    flat = direct_sum(complex_numbers(), diagonal(2), cross_product())
    assert np.array_equal(nested.structure_constants(dtype=object), flat.structure_constants(dtype=object))
    assert nested.unit() is None


def test_tensor_product_of_a_direct_sum_is_multi_head():
    heads = direct_sum(complex_numbers(), complex_numbers())
    P = tensor_product(position(3), heads)
    assert P.shape == (3, 4)
    check_inherited(P, (position(3), heads))


def test_direct_sum_of_one_algebra():
    D = direct_sum(cross_product())
    assert D.dim == 3 and D.basis == ("0:x", "0:y", "0:z")
    assert D.is_anticommutative()


# --------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("combinator", [direct_sum, tensor_product])
def test_combinators_reject_bad_input_naming_the_argument(combinator):
    with pytest.raises(ValueError, match="algebras"):
        combinator()
    for bad in (1, "A", None, [complex_numbers()], diagonal):
        with pytest.raises(TypeError, match=r"algebras\[0\]"):
            combinator(bad)
    with pytest.raises(TypeError, match=r"algebras\[1\]"):
        combinator(complex_numbers(), 2)
    with pytest.raises(TypeError, match=r"algebras\[2\]"):
        combinator(complex_numbers(), diagonal(2), complex(1, 2))


def test_direct_sum_rejects_a_tensor_product_summand():
    with pytest.raises(ValueError, match=r"algebras\[1\]"):
        direct_sum(diagonal(2), tensor_product(diagonal(2), diagonal(2)))
