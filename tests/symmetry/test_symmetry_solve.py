"""How `solve` finishes: independent blocks solved apart, the cost estimated first, a feasible path chosen or a
clear refusal, a progress bar on long solves."""
from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest
import sympy

from product_interactions.algebra import clebsch_gordan, limits, linear, translation
from product_interactions.algebra.symmetry import (bilinear_map, equivariant_constraints, estimate, filter_of,
                                                   rotations_so3, solve, translations)
solve_module = importlib.import_module("product_interactions.algebra.symmetry._solve")   # `solve` is the function


def _reduced_reference(rows, ncols) -> list:
    """The reduced basis by sympy's dense elimination of the whole system, each vector ending in 1."""
    matrix = sympy.Matrix([[row.get(c, 0) for c in range(ncols)] for row in rows]) if rows else \
        sympy.zeros(1, ncols)
    basis = []
    for vector in matrix.nullspace():
        last = next(v for v in reversed(vector) if v != 0)
        basis.append([sympy.nsimplify(sympy.radsimp(v / last)) for v in vector])
    return basis


@pytest.mark.parametrize("seed", range(12))
def test_block_elimination_gives_the_reduced_basis_of_one_elimination(seed):
    rng = np.random.default_rng(seed)
    ncols = int(rng.integers(1, 9))
    values = [sympy.Integer(1), sympy.Integer(-2), sympy.Rational(1, 3), sympy.sqrt(2), 1 + sympy.sqrt(3)]
    rows = []
    for _ in range(int(rng.integers(0, 7))):
        columns = rng.choice(ncols, size=int(rng.integers(1, min(3, ncols) + 1)), replace=False)
        rows.append({int(c): values[int(rng.integers(len(values)))] for c in columns})
    found = linear.nullspace(rows, ncols)
    expected = _reduced_reference(rows, ncols)
    assert [[sympy.simplify(a - b) for a, b in zip(u, v)] for u, v in zip(found, expected)] == \
        [[0] * ncols] * len(expected) and len(found) == len(expected)


def test_translation_equivariant_bilinear_maps_on_32_points_solve_exactly_in_blocks():
    system = equivariant_constraints(translations(32), bilinear_map(32))
    cost = estimate(system)
    assert (cost.unknowns, cost.blocks, cost.largest_block, cost.rational) == (32**3, 1024, 32, True)
    solution = solve(system)                      # the dense path wanted 8 GiB; exact took 50 s in one piece
    assert solution.method == "exact" and solution.dim == 32 * 32
    matrix = system.matrix()
    assert abs(matrix @ solution.basis.reshape(solution.dim, -1).T).max() == 0
    assert sorted(np.count_nonzero(solution.basis.reshape(solution.dim, -1), axis=1)) == [32] * 1024  # orbits


def test_rotation_equivariant_products_on_lmax_3_go_numeric_and_find_every_path():
    system = equivariant_constraints(rotations_so3(3), bilinear_map(clebsch_gordan(3)))
    cost = estimate(system)
    assert not cost.rational and cost.work > solve_module.EXACT_ALGEBRAIC_WORK and cost.blocks > 100
    solution = solve(system)                      # took 126 s as one dense system
    paths = [t for t in itertools.product(range(4), repeat=3) if abs(t[0] - t[1]) <= t[2] <= t[0] + t[1]]
    assert solution.method == "numeric" and solution.dim == len(paths) == 34
    basis = solution.basis.reshape(solution.dim, -1)
    assert np.allclose(basis @ basis.T, np.eye(34), atol=1e-12)
    assert np.abs(system.matrix() @ basis.T).max() < 1e-12


def test_auto_refuses_before_any_work_when_no_path_fits(monkeypatch):
    system = equivariant_constraints(rotations_so3(3), bilinear_map(clebsch_gordan(3)))
    monkeypatch.setattr(limits, "MAX_DENSE_BYTES", 10**4)
    with pytest.raises(ValueError, match=r"constraints: the largest independent block has 86 unknowns with "
                                         r"irrational.*MAX_DENSE_BYTES = 10,000.*EXACT_ALGEBRAIC_WORK"):
        solve(system)
    with pytest.raises(ValueError, match="MAX_DENSE_BYTES"):
        solve(system, method="numeric")


def test_a_rational_system_too_large_for_dense_goes_exact(monkeypatch):
    system = equivariant_constraints(translations(6), bilinear_map(6))
    monkeypatch.setattr(solve_module, "EXACT_RATIONAL_LIMIT", 2)
    assert solve(system).method == "numeric"
    too_large = estimate(system)._replace(dense_bytes=limits.MAX_DENSE_BYTES + 1)
    assert too_large.choose() == "exact"
    with pytest.raises(ValueError, match=r"the numeric path needs 1,073,741,825 bytes.*MAX_DENSE_BYTES = "
                                         r"1,073,741,824; "):
        too_large.choose("numeric")


def test_a_basis_too_large_to_hold_is_refused_before_it_is_allocated(monkeypatch):
    system = equivariant_constraints(translations(6), bilinear_map(6))
    monkeypatch.setattr(limits, "MAX_DENSE_BYTES", 50_000)
    for method in ("exact", "numeric"):
        with pytest.raises(ValueError, match=r"constraints: the solution space has dimension 36; its basis over "
                                             r"216 unknowns needs"):
            solve(system, method=method)


@pytest.mark.parametrize("method", ["exact", "numeric"])
def test_a_progress_bar_shows_on_long_solves_only(method, monkeypatch, capsys):
    system = equivariant_constraints(translations(4), bilinear_map(4))
    solve(system, method=method)
    assert capsys.readouterr().err == ""                  # quicker than PROGRESS_DELAY: no bar
    monkeypatch.setattr(solve_module, "PROGRESS_DELAY", 0)
    solve(system, method=method, progress=False)
    assert capsys.readouterr().err == ""
    solve(system, method=method)
    assert f"solve ({method})" in capsys.readouterr().err


def test_bad_arguments_are_named():
    system = equivariant_constraints(translations(3), filter_of(translation(3)))
    with pytest.raises(TypeError, match="progress: expected a bool"):
        solve(system, progress="yes")
    with pytest.raises(TypeError, match="constraints: expected the result of equivariant_constraints"):
        estimate([[1, 2]])
