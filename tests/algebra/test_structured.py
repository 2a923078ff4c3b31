"""Structured algebras answer every exact query as their materialised tables do, and cost nothing to build."""
from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest
import sympy

from product_interactions.algebra import (Algebra, clebsch_gordan, clifford, complex_numbers, diagonal, gaunt,
                                          matrix_algebra, position, quaternions, tensor_algebra, tensor_product,
                                          translation)
from product_interactions.algebra.structured import StructuredAlgebra

SMALL = {
    "diagonal(3)": lambda: diagonal(3), "position(4)": lambda: position(4), "translation(5)": lambda: translation(5),
    "translation(4, cyclic=False)": lambda: translation(4, cyclic=False),
    "tensor_algebra(2, 2)": lambda: tensor_algebra(2, 2), "tensor_algebra(1, 3)": lambda: tensor_algebra(1, 3),
    "tensor_algebra(3, 1)": lambda: tensor_algebra(3, 1), "clifford(2, 1, 0)": lambda: clifford(2, 1),
    "clifford(1, 0, 1)": lambda: clifford(1, 0, 1), "complex_numbers": complex_numbers, "quaternions": quaternions,
    "matrix_algebra(2)": lambda: matrix_algebra(2), "matrix_algebra(3)": lambda: matrix_algebra(3),
    "clebsch_gordan(1)": lambda: clebsch_gordan(1), "clebsch_gordan(1, parity)": lambda: clebsch_gordan(1, True),
    "gaunt(1)": lambda: gaunt(1),
    "position(2) ⊗ translation(3)": lambda: tensor_product(position(2), translation(3)),
}


def materialised(A) -> Algebra:
    """The same algebra as a plain table (no rule)."""
    table = {}
    for i, j, k, c in A.entries():
        table.setdefault((i, j), {})[k] = c
    return Algebra.from_structure_constants(table, basis=list(A.basis), dim=A.dim, name=A.name)


@pytest.mark.parametrize("name", SMALL)
def test_structured_and_materialised_algebras_answer_alike(name):
    A = SMALL[name]()
    assert isinstance(A, StructuredAlgebra)
    if len(A.shape) > 1:                          # a tensor product's table is over flat indices
        E = materialised(A)
        assert E.entries() == A.entries() and E.nnz == A.nnz
        assert all(A.product_of_basis(i, j) == E.product_of_basis(i, j)
                   for i, j in itertools.product(range(A.dim), repeat=2))
        return
    E = materialised(A)
    assert A == E and E == A and hash(A) == hash(E)
    assert A.nnz == E.nnz == len(A.entries()) and A.basis == E.basis
    assert [A.label(i) for i in range(A.dim)] == list(E.basis)
    assert all(A.index(label) == i for i, label in enumerate(E.basis))
    for i, j in itertools.product(range(A.dim), repeat=2):
        assert A.product_of_basis(i, j) == E.product_of_basis(i, j)
    for query in ("is_commutative", "is_anticommutative", "is_associative", "unit", "center"):
        mine, reference = getattr(A, query)(), getattr(E, query)()
        if query == "unit":
            assert (mine is None and reference is None) or mine.flat == reference.flat
        elif query == "center":
            assert sympy.Matrix([z.flat for z in mine]).rank() == sympy.Matrix([z.flat for z in reference]).rank()
        else:
            assert mine == reference, query
    x, y = A.symbols("x"), A.symbols("y")
    assert (x * y).flat == (E.element(list(x.flat)) * E.element(list(y.flat))).flat
    assert A.left_regular(x) == E.left_regular(E.element(list(x.flat)))


def test_labels_round_trip_through_the_rule():
    T = tensor_algebra(12, 2)                     # letters past 9 are separated by commas
    assert T.label(T.index("e3,11")) == "e3,11" and T.index("e12") == 12
    assert matrix_algebra(12).index("E1,12") == 11
    for bad in ("e0", "e13", "e1,2,3", "e01", "x"):
        with pytest.raises(ValueError, match="not a basis label"):
            T.index(bad)
    with pytest.raises(ValueError, match="not a basis label"):
        position(3).index("g_0")                  # g_0 is the unit, not a basis vector


BUILD_HUGE = r"""
import resource, time
resource.setrlimit(resource.RLIMIT_AS, (600 * 1024**2, 600 * 1024**2))
from product_interactions.algebra import diagonal, position, tensor_product, translation
start = time.perf_counter()
for n in (10**3, 10**9):
    A = tensor_product(position(n), position(n), diagonal(64))
    assert A.shape == (n, n, 64) and A.nnz == n * n * 64
    assert A.index(("g_7", "g_9", "e_3")) == (6 * n + 8) * 64 + 3 and A.label(5) == ("g_1", "g_1", "e_5")
    assert A.product_of_basis(5, 5) == {5: 1} and A.product_of_basis(5, 6) == {}
    assert translation(n).product_of_basis(n - 1, 1) == {0: 1}
print(f"{time.perf_counter() - start:.3f}")
"""


def test_huge_structured_algebras_build_without_materialising():
    # at n = 10^9 any table or label list would need terabytes: under a 600 MB cap this only passes if nothing is
    # stored (and it finishes in a moment, where anything linear in n would run for hours)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-c", BUILD_HUGE], cwd="/", capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-800:]


@pytest.mark.parametrize("algebra", [diagonal(4), position(3), translation(5), translation(5, cyclic=False),
                                     tensor_algebra(2, 3), clifford(2, 1), matrix_algebra(2), clebsch_gordan(1),
                                     clebsch_gordan(2)], ids=lambda A: A.name)
def test_the_sparsity_an_algebra_declares_holds_for_its_table(algebra):
    """Kernels trust `sparsity()` without reading the table (a factor of a million entries never builds one): each
    rule is checked here against the exact table, entry by entry."""
    import numpy as np
    rule, n = algebra.sparsity(), algebra.dim
    lam = np.asarray(algebra.structure_constants(), dtype=float)
    nonzero = {tuple(index) for index in np.argwhere(lam != 0)}
    pairs = list(itertools.product(range(n), repeat=2))
    if rule[0] == "diagonal":
        assert nonzero == {(i, i, i) for i in range(n)} and np.all(lam[lam != 0] == 1)
    elif rule[0] == "cyclic":
        assert nonzero == {(i, j, (rule[1] * i + rule[2] * j) % n) for i, j in pairs} and np.all(lam[lam != 0] == 1)
    elif rule[0] == "truncated":
        assert nonzero == {(i, j, i + j) for i, j in pairs if i + j < n} and np.all(lam[lam != 0] == 1)
    elif rule[0] == "graded":
        assert algebra == tensor_algebra(*rule[1:])
    elif rule[0] == "one per pair":
        assert np.all(np.count_nonzero(lam, axis=2) <= 1)
    else:
        assert rule == ("blocks",)
        rebuilt = np.zeros_like(lam)                   # the blocks placed at their offsets give the table back
        for block in algebra.blocks():
            (a, b, c), values = block.offsets, block.values
            rebuilt[a:a + values.shape[0], b:b + values.shape[1], c:c + values.shape[2]] += values
        np.testing.assert_allclose(rebuilt, lam, rtol=1e-14, atol=1e-14)


def test_an_algebra_without_a_rule_declares_none():
    assert quaternions().sparsity() == ("one per pair",)           # a Clifford algebra
    assert Algebra.from_function(3, lambda i, j: {(i + j) % 3: 1, 0: 1}).sparsity() is None
