"""Translations: convolution and the paper's filter constraint derived from the symmetry principle.

Index convention: lam[k, i, n] is the coefficient of e_n in B(e_k, e_i); k is the filter slot, i the signal, n the
output, so the paper's lam^n_{k,i} is lam[k, i, n].  All comparisons are exact.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy

from product_interactions.algebra import linear, position, tensor_product, translation
from product_interactions.algebra.symmetry import (bilinear_map, diagonal_action, equivariant_constraints, filter_of, linear_map,
                              product_action, solve, translations)

N = 4


def rank(vectors, ncols):
    """Exact rank of a list of flat vectors."""
    rows = [{c: sympy.sympify(v) for c, v in enumerate(vector) if v != 0} for vector in vectors]
    return ncols - len(linear.nullspace(rows, ncols)) if any(rows) else 0


def same_span(first, second, ncols):
    r = rank(first, ncols)
    return r == rank(second, ncols) == rank(list(first) + list(second), ncols)


def filter_slot_fixed(n, cyclic):
    """The convolution setting: the filter slot is left alone, signal and output are shifted."""
    T = translations(n, cyclic)
    return equivariant_constraints((T.trivial_on(n), T, T), bilinear_map(n))


@pytest.mark.parametrize("cyclic", [True, False])
def test_the_solutions_are_exactly_the_span_of_the_translation_algebra_products(cyclic):
    # Spanning set: the bilinear maps (x, y) -> x_i (e_m * y) of the translation algebra, one per (i, m): a
    # convolution of y with a filter that is any linear function of x.  Truncated: the causal convolutions.
    product = translation(N, cyclic).structure_constants(dtype=object)
    convolutions = []
    for i, m in itertools.product(range(N), repeat=2):
        lam = np.zeros((N, N, N), dtype=object)
        lam[i] = product[m]
        convolutions.append(list(lam.reshape(-1)))
    solution = solve(filter_slot_fixed(N, cyclic))
    assert solution.method == "exact" and solution.dim == N * N
    assert same_span([list(b.reshape(-1)) for b in solution.exact_basis], convolutions, N ** 3)


def paper_constraints(n, cyclic):
    """lam^n_{k,i+a} - lam^{n-a}_{k,i} = 0 for all k, i, n and shifts a; truncated: a >= 0 and entries
    outside the window 0..n-1 read as zero (the forward shift drops what leaves the window)."""
    index = lambda k, i, out: (k * n + i) * n + out  # noqa: E731
    rows = []
    for k, i, out, a in itertools.product(range(n), repeat=4):
        row = {}
        if cyclic or i + a < n:
            row[index(k, (i + a) % n, out)] = 1
        if cyclic or out - a >= 0:
            key = index(k, i, (out - a) % n)
            row[key] = row.get(key, 0) - 1
        rows.append({c: sympy.Integer(v) for c, v in row.items() if v})
    return rows


@pytest.mark.parametrize("cyclic", [True, False])
def test_the_filter_constraint_is_the_papers(cyclic):
    derived = solve(filter_slot_fixed(N, cyclic)).exact_basis
    paper = linear.nullspace(paper_constraints(N, cyclic), N ** 3)
    assert same_span([list(b.reshape(-1)) for b in derived], paper, N ** 3)


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("cyclic", [True, False])
def test_dimensions_match_the_hand_count(n, cyclic):
    T = translations(n, cyclic)
    # Filter slot fixed: for each filter component k, i -> lam[k, i, :] must commute with the shift, i.e. be a
    # circulant matrix (cyclic) or a lower-triangular Toeplitz matrix (truncated): n free entries, n * n in all.
    assert solve(filter_slot_fixed(n, cyclic)).dim == n * n
    # Every slot shifted.  Cyclic: Z_n acts freely on the n^3 triples (k, i, n), one free value per orbit:
    # n^3 / n = n^2.  Truncated: lam[k, i, m] = lam[k+1, i+1, m+1] along each diagonal chain; a chain is free
    # exactly when it starts with k = 0 or i = 0 (else S B = B(S., S.) at output 0 forces it to 0) and ends with
    # m = n - 1 (else its end is forced to 0).  Chains are fixed by their start (k0, i0, m0) with min(k0, i0) = 0
    # and m0 >= max(k0, i0): n starts with max 0 ... and 2 (n - c) with max c >= 1, n + n (n - 1) = n^2 in all.
    assert solve(equivariant_constraints(T, bilinear_map(n))).dim == n * n
    # Filters with lam fixed: L(K) of the translation algebra is a polynomial in the shift, so every K works (n);
    # in the position algebra diag(K) commutes with the shift only for constant K (1).
    assert solve(equivariant_constraints(T, filter_of(translation(n, cyclic)))).dim == n
    assert solve(equivariant_constraints(T, filter_of(position(n)))).dim == 1
    # Linear maps commuting with the shift: circulant / lower-triangular Toeplitz, n.
    assert solve(equivariant_constraints(T, linear_map(n))).dim == n


def test_two_dimensional_lattices():
    T = translations(3)
    for A in (translation(3), position(3)):
        lattice = tensor_product(A, A)
        # Z_3 x Z_3 shifting each axis: all 9 filters of the 2-D translation algebra, constants of the position one.
        expected = 9 if A == translation(3) else 1
        assert solve(equivariant_constraints(product_action(T, T), filter_of(lattice))).dim == expected
    # One Z_3 shifting both axes at once: K[a, b] may depend on b - a only (3 diagonals).
    lattice = tensor_product(position(3), position(3))
    assert solve(equivariant_constraints(diagonal_action(T, T), filter_of(lattice))).dim == 3
    # 2-D convolution: one 2-D circulant (9 values) per filter component (9): 81.
    P = product_action(T, T)
    assert solve(equivariant_constraints((P.trivial_on((3, 3)), P, P), bilinear_map((3, 3)))).dim == 81


def test_the_general_solution_is_a_convolution():
    general = solve(filter_slot_fixed(3, True)).symbolic("t")
    # lam[k, i, n] depends on (k, n - i) only: the same 3 x 3 table along every shift.
    for k, i, n, a in itertools.product(range(3), repeat=4):
        assert general[k, (i + a) % 3, (n + a) % 3] == general[k, i, n]
