"""Structure queries (issue 17, items 3 and 4): derived algebra, ideals, radical, Killing form, semisimplicity and
derivations, against facts from the literature and brute force on random elements."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy

from basis_change import in_basis, unipotent
from product_interactions.algebra import Algebra, complex_numbers, diagonal, matrix_algebra, quaternions
from test_identity_queries import CROSS, _bracket, cayley_dickson


def upper_triangular(n: int) -> Algebra:
    """The n x n upper triangular matrices, basis E_ab (a <= b), E_ab E_cd = [b == c] E_ad."""
    units = [(a, b) for a in range(n) for b in range(a, n)]
    index = {u: k for k, u in enumerate(units)}
    return Algebra.from_function(len(units), lambda i, j: {index[units[i][0], units[j][1]]: 1}
                                 if units[i][1] == units[j][0] else {}, name=f"upper triangular {n}")


def group_algebra_s3() -> Algebra:
    """Q[S_3]: basis the six permutations of (0, 1, 2), e_g e_h = e_(g h)."""
    group = list(itertools.permutations(range(3)))
    compose = lambda g, h: tuple(g[h[i]] for i in range(3))  # noqa: E731
    return Algebra.from_function(6, lambda i, j: {group.index(compose(group[i], group[j])): 1})


HEISENBERG = Algebra.from_function(3, lambda i, j: {2: 1} if (i, j) == (0, 1) else {2: -1} if (i, j) == (1, 0)
                                   else {}, name="heisenberg")                     # [x, y] = z
SL2 = Algebra.from_function(3, lambda i, j: {(0, 1): {1: 2}, (1, 0): {1: -2}, (0, 2): {2: -2}, (2, 0): {2: 2},
                                             (1, 2): {0: 1}, (2, 1): {0: -1}}.get((i, j), {}), name="sl2")  # h, e, f
DUAL_NUMBERS = Algebra.from_function(2, lambda i, j: {i + j: 1} if i + j < 2 else {}, name="dual numbers")


@pytest.mark.parametrize("algebra, dimension", [
    (complex_numbers(), 0),             # C over R: no derivations
    (diagonal(3), 0),                   # a product of fields
    (quaternions(), 3),                 # so(3), all inner
    (cayley_dickson(8), 14),            # the octonions: g2 (Cartan)
    (matrix_algebra(2), 3),             # M_n: inner, n^2 - 1
    (matrix_algebra(3), 8),
    (upper_triangular(2), 2),           # triangular algebras: inner, n(n+1)/2 - 1
    (upper_triangular(3), 5),
    (CROSS, 3),                         # so(3) is semisimple: all derivations inner
    (SL2, 3),
    (HEISENBERG, 6),                    # the 3-dimensional Heisenberg algebra: Der has dimension 6
    (DUAL_NUMBERS, 1),                  # D(eps) = a eps
], ids=lambda a: getattr(a, "name", str(a)))
def test_derivation_algebras_have_their_known_dimensions(algebra, dimension):
    assert len(algebra.derivations()) == dimension


@pytest.mark.parametrize("algebra", [quaternions(), cayley_dickson(8), upper_triangular(3), HEISENBERG, SL2],
                         ids=lambda a: a.name)
def test_every_derivation_satisfies_the_leibniz_rule_on_random_elements(algebra):
    rng = np.random.default_rng(0)
    lam = algebra.structure_constants()
    mul = lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)  # noqa: E731
    basis = algebra.derivations()
    D = sum(float(rng.standard_normal()) * np.array(m, dtype=float) for m in basis)
    for _ in range(3):
        x, y = rng.standard_normal((2, algebra.dim))
        assert np.allclose(D @ mul(x, y), mul(D @ x, y) + mul(x, D @ y))
    assert sympy.Matrix.hstack(*[m.reshape(algebra.dim**2, 1) for m in basis]).rank() == len(basis)


def test_derivations_are_closed_under_the_commutator():
    basis = cayley_dickson(8).derivations()
    stacked = sympy.Matrix.hstack(*[m.reshape(64, 1) for m in basis])
    for a, b in [(0, 1), (2, 5), (3, 13)]:
        bracket = (basis[a] * basis[b] - basis[b] * basis[a]).reshape(64, 1)
        assert sympy.Matrix.hstack(stacked, bracket).rank() == len(basis)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_radical_of_upper_triangular_matrices_is_the_strictly_upper_part(n):
    T = upper_triangular(n)
    radical = T.radical()
    assert len(radical) == n * (n - 1) // 2
    units = [(a, b) for a in range(n) for b in range(a, n)]
    for x in radical:                                   # no diagonal part
        assert all(c == 0 for c, (a, b) in zip(x.flat, units) if a == b)
    assert not T.is_semisimple()


def test_radicals_and_semisimplicity_of_associative_algebras():
    for semisimple in (matrix_algebra(2), quaternions(), complex_numbers(), diagonal(4), group_algebra_s3()):
        assert semisimple.radical() == [] and semisimple.is_semisimple()      # Wedderburn, Maschke
    assert [list(x.flat) for x in DUAL_NUMBERS.radical()] == [[0, 1]]
    zero_product = Algebra.from_function(2, lambda i, j: {})
    assert len(zero_product.radical()) == 2                                  # no unit: the trace condition


def test_radical_elements_are_nilpotent_and_form_an_ideal():
    T = upper_triangular(3)
    rng = np.random.default_rng(1)
    for x in T.radical():
        y = T.element([int(v) for v in rng.integers(-3, 4, T.dim)])
        assert (x * y) ** 3 == 0 and (y * x) ** 3 == 0
    assert len(T.ideal(T.radical())) == len(T.radical())


def test_killing_forms_and_cartan_s_criterion():
    assert CROSS.killing_form() == -2 * sympy.eye(3)
    assert SL2.killing_form() == sympy.Matrix([[8, 0, 0], [0, 0, 4], [0, 4, 0]])        # h, e, f
    assert CROSS.is_semisimple() and SL2.is_semisimple() and not HEISENBERG.is_semisimple()
    assert HEISENBERG.killing_form() == sympy.zeros(3, 3)                              # nilpotent
    gl2 = _bracket(matrix_algebra(2), -1)
    assert not gl2.is_semisimple()                                                      # its centre


def test_derived_algebras_ideals_and_the_centre_of_a_group_algebra():
    assert [list(x.flat) for x in HEISENBERG.derived_algebra()] == [[0, 0, 1]]
    assert len(CROSS.derived_algebra()) == 3 and len(_bracket(matrix_algebra(2), -1).derived_algebra()) == 3
    assert len(upper_triangular(2).derived_algebra()) == 3                             # unital: all of it
    M2, T2 = matrix_algebra(2), upper_triangular(2)
    assert len(M2.ideal([M2.basis_element(1)])) == 4                                   # M_2 is simple
    assert len(T2.ideal([T2.basis_element(1)])) == 1                                   # E_12 spans an ideal
    assert len(group_algebra_s3().center()) == 3                                       # three conjugacy classes


def test_structure_queries_refuse_what_does_not_apply_by_name():
    with pytest.raises(ValueError, match="radical: applies to associative algebras; .* is not associative"):
        cayley_dickson(8).radical()
    with pytest.raises(ValueError, match="killing_form: applies to Lie algebras"):
        quaternions().killing_form()
    with pytest.raises(ValueError, match="is_semisimple: applies to associative or Lie algebras"):
        cayley_dickson(8).is_semisimple()
    with pytest.raises(TypeError, match=r"generators\[0\]: expected an element of quaternions, got int"):
        quaternions().ideal([1])
    with pytest.raises(TypeError, match="generators: expected a list of elements"):
        quaternions().ideal(quaternions().unit())


def _gl_action(n: int):
    """gl(n) acting on R^n: one Lie generator per matrix unit E_ij."""
    from product_interactions.algebra.symmetry import Action
    from product_interactions.algebra.symmetry.sparse import Sparse
    return Action([("lie", [Sparse((n, n), {(i, j): 1})]) for i in range(n) for j in range(n)], f"gl({n})")


@pytest.mark.parametrize("algebra", [quaternions(), matrix_algebra(2), HEISENBERG, DUAL_NUMBERS],
                         ids=lambda a: a.name)
def test_the_equivariant_part_of_gl_n_is_the_derivation_algebra(algebra):
    from product_interactions.algebra.symmetry import product_symmetries
    found = product_symmetries(algebra, _gl_action(algebra.dim))
    assert len(found.lie_part) == len(algebra.derivations()) and not found.equivariant
    rng = np.random.default_rng(2)
    lam = algebra.structure_constants()
    mul = lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)  # noqa: E731
    n = algebra.dim
    for vector in found.lie_part:                      # each combination is a derivation (brute force)
        J = np.array([float(c) for c in vector]).reshape(n, n)
        x, y = rng.standard_normal((2, n))
        assert np.allclose(J @ mul(x, y), mul(J @ x, y) + mul(x, J @ y))


def test_clebsch_gordan_products_respect_rotations_and_permutations_respect_coordinates():
    from product_interactions.algebra.so3 import clebsch_gordan
    from product_interactions.algebra.symmetry import permutations, product_symmetries, rotations_so3
    assert product_symmetries(clebsch_gordan(2), rotations_so3(2)).equivariant
    assert product_symmetries(diagonal(4), permutations(4)).equivariant
    Z3 = Algebra.from_function(3, lambda i, j: {(i + j) % 3: 1}, name="Q[Z3]")
    found = product_symmetries(Z3, permutations(3))            # brute force decides each generator
    rng = np.random.default_rng(3)
    lam = Z3.structure_constants()
    mul = lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)  # noqa: E731
    for T, respected in zip(permutations(3).matrices(), found.respected):
        x, y = rng.standard_normal((2, 3))
        assert np.allclose(T @ mul(x, y), mul(T @ x, T @ y)) == respected


def test_product_symmetries_checks_its_arguments():
    from product_interactions.algebra.symmetry import permutations, product_symmetries
    with pytest.raises(TypeError, match="action: expected an Action, got str"):
        product_symmetries(quaternions(), "rotations")
    with pytest.raises(TypeError, match="algebra: expected an Algebra, got int"):
        product_symmetries(4, permutations(4))
    with pytest.raises(ValueError, match="action: the action .* has 3 x 3 matrices"):
        product_symmetries(quaternions(), permutations(3))


def test_algebras_display_their_table_when_small_and_a_summary_when_large():
    from product_interactions.algebra import diagonal
    H = quaternions()
    html, latex = H._repr_html_(), H._repr_latex_()
    assert "not commutative, associative, unital" in html and "<td>-1</td>" in html and html.count("<tr>") == 5
    assert latex.startswith("$\\begin{array}{c|cccc}") and latex.count("\\\\") == 4
    big = diagonal(100)
    assert "<table>" not in big._repr_html_() and "dimension 100" in big._repr_latex_()


def _change_of_basis(A: Algebra, seed: int) -> tuple[Algebra, sympy.Matrix]:
    """A in the basis f = e P for a random unipotent integer P: an isomorphic algebra whose constants are dense
    integers, not the +-1 of the built-in tables."""
    P = unipotent(A.dim, seed)
    return in_basis(A, P), P


def _span(vectors) -> sympy.Matrix:
    return sympy.Matrix([[sympy.sympify(v) for v in vector] for vector in vectors]) if vectors else sympy.zeros(0, 1)


def _same_subspace(a, b) -> bool:
    """Two lists of coordinate vectors span the same subspace (exact ranks)."""
    if not a or not b:
        return not a and not b
    ra, rb = _span(a).rank(), _span(b).rank()
    return ra == rb == _span(list(a) + list(b)).rank()


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("algebra", [quaternions(), matrix_algebra(2), upper_triangular(3), HEISENBERG, SL2,
                                     _bracket(matrix_algebra(2), -1), DUAL_NUMBERS], ids=lambda a: a.name)
def test_every_structure_query_is_carried_by_an_isomorphism(algebra, seed):
    """In the basis f = e P: derivations are P^-1 D P, the radical, the derived algebra and ideals are the images
    (coordinates P^-1 v) of A's, the Killing form is P^T K P, semisimplicity is the same.  The new constants
    are dense integers, so each sum in the queries adds several terms of either sign."""
    B, P = _change_of_basis(algebra, seed)
    inverse = P.inv()
    image = lambda elements: [list(inverse * sympy.Matrix(list(x.flat))) for x in elements]  # noqa: E731
    coordinates = lambda elements: [list(x.flat) for x in elements]  # noqa: E731
    derivations_a, derivations_b = algebra.derivations(), B.derivations()
    assert len(derivations_a) == len(derivations_b)
    assert _same_subspace([list(inverse * D * P) for D in derivations_a], [list(D) for D in derivations_b])
    assert _same_subspace(image(algebra.derived_algebra()), coordinates(B.derived_algebra()))
    generator = algebra.basis_element(algebra.dim - 1)
    assert _same_subspace(image(algebra.ideal([generator])),
                          coordinates(B.ideal([B.element(list(inverse * sympy.Matrix(list(generator.flat))))])))
    if algebra.is_associative():
        assert _same_subspace(image(algebra.radical()), coordinates(B.radical()))
    if algebra.is_lie():
        assert B.killing_form() == P.T * algebra.killing_form() * P
    if algebra.is_associative() or algebra.is_lie():
        assert B.is_semisimple() == algebra.is_semisimple()


def test_the_leibniz_defect_of_a_map_that_is_no_derivation_by_brute_force():
    """J(e_a e_b) - J(e_a) e_b - e_a J(e_b) for every basis pair, with dense numpy products, against
    `structure.leibniz_defect` (zero entries left out)."""
    from product_interactions.algebra.structure import leibniz_defect
    B, _ = _change_of_basis(upper_triangular(2), 0)
    lam = np.array(B.structure_constants(), dtype=float)
    J = np.random.default_rng(3).integers(-2, 3, (B.dim, B.dim))
    expected = (np.einsum("abc,ic->abi", lam, J) - np.einsum("ka,kbc->abc", J, lam)
                - np.einsum("kb,akc->abc", J, lam))
    defect = leibniz_defect(B, {(i, j): sympy.Integer(int(J[i, j])) for i, j in zip(*np.nonzero(J))})
    assert defect and all(v != 0 for v in defect.values())
    got = np.zeros_like(expected)
    for key, value in defect.items():
        got[key] = float(value)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("query, count", [
    ("killing_form", lambda A: A.dim**2),                        # the form's entries
    ("derivations", lambda A: 3 * A.nnz * A.dim + A.dim**2),     # dim terms a side of the rule; dim^2 unknowns
    ("ideal", lambda A: 2 * A.dim**3),                           # each side, basis element and vector
])
def test_structure_queries_are_refused_just_beyond_their_size_limit(query, count, monkeypatch):
    from product_interactions.algebra import limits
    A = SL2
    ask = {"ideal": lambda: A.ideal([A.basis_element(0)])}.get(query, getattr(A, query))
    monkeypatch.setattr(limits, "MAX_ENTRIES", count(A))
    ask()
    monkeypatch.setattr(limits, "MAX_ENTRIES", count(A) - 1)
    with pytest.raises(ValueError, match=rf"{query}: {count(A):,} "):
        ask()
