"""``max_terms`` of `formula` and `derive`: results within the limit are unchanged, the first node beyond it is
refused (naming the argument, the limit, the count and the node) before the expansion goes on, bad limits are
named."""
import time

import numpy as np
import pytest
import sympy

from product_interactions.algebra import complex_numbers, diagonal, position, tensor_product, translation
from product_interactions.interactions import Parameter, Scan, Signal, formula
from product_interactions.interactions.derive import SMALL, derive


def terms(coefficients):
    """The summands over all components of a formula (0 counts none, a coefficient that is no sum one)."""
    return sum(len(sympy.Add.make_args(c)) for c in np.asarray(coefficients).flat if c != 0)


def power(X, k):
    """X^k, multiplied one factor at a time (a chain of k - 1 products)."""
    Y = X
    for _ in range(k - 1):
        Y = Y * X
    return Y


def test_a_generous_limit_changes_nothing():
    attention = SMALL["attention"](2).expr
    for softmax in ("expand", "symbolic"):
        assert np.array_equal(formula(attention, softmax=softmax, max_terms=10**6),
                              formula(attention, softmax=softmax))
    assert formula(attention, latex=True, max_terms=10**6) == formula(attention, latex=True)
    C = complex_numbers()
    K, X = Parameter("k", C), Signal("x", C)
    assert np.array_equal((K * X).formula(max_terms=4), formula(K * X))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_limit_is_the_term_count_of_the_largest_node(seed):
    rng = np.random.default_rng(seed)
    n, k = (int(v) for v in rng.integers(2, 5, size=2))
    X, K = Signal("x", translation(n)), Parameter("k", translation(n))
    expr = K * power(X, k)                   # every product is larger than its factors: the last node is the largest
    count = terms(formula(expr))
    assert count == n * int(sympy.binomial(n + k - 1, k))        # k_i times each monomial of degree k in n symbols
    assert np.array_equal(formula(expr, max_terms=count), formula(expr))
    with pytest.raises(ValueError, match=rf"max_terms: Mul\(k, .* holds {count:,} terms .* max_terms = {count - 1:,}"):
        formula(expr, max_terms=count - 1)


def test_the_limit_holds_inside_a_scan_body():
    X = Signal("x", tensor_product(position(4), diagonal(2)))
    H = Scan(lambda h, x_t: h * h + x_t, X, state=diagonal(2), return_sequences=False)  # h_3 = (...)^2 + x_3
    count = terms(formula(H))
    assert count == 2 * 10                    # (x_0^4 + 2 x_0^2 x_1 + x_1^2 + x_2)^2 + x_3: 9 monomials + 1, twice
    with pytest.raises(ValueError, match=r"max_terms: Add\(Mul\(h, h\), x_t\) holds 20 terms"):  # a step, not Scan
        formula(H, max_terms=count - 1)


def test_a_large_expansion_is_refused_early():
    X = Signal("x", translation(4))
    expr = power(X, 60)                       # 39,711 terms at the end (C(63, 3)); minutes of sympy to build
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"holds 120 terms .* max_terms = 100; use smaller sizes .*softmax=\"symbolic\""
                                         r".* or a larger max_terms"):
        formula(expr, max_terms=100)          # x^8 is the first power beyond 100 terms: C(10, 3) = 120
    assert time.perf_counter() - start < 2


def test_derive_takes_the_limit():
    count = terms(SMALL["tfn"](2).formula())
    assert derive("tfn", size=2, max_terms=count) == derive("tfn", size=2)
    with pytest.raises(ValueError, match=rf"max_terms: .* holds {count:,} terms .* max_terms = {count - 1:,}"):
        derive("tfn", size=2, max_terms=count - 1)
    start = time.perf_counter()                # seconds without a limit; refused at an early node with one
    with pytest.raises(ValueError, match=r"max_terms = 50;"):
        derive("se3_attention", size=4, max_terms=50)
    assert time.perf_counter() - start < 2


@pytest.mark.parametrize("value, error", [(0, ValueError), (-3, ValueError), (True, TypeError), (2.0, TypeError),
                                          ("100", TypeError), (None, TypeError), (np.float64(5), TypeError)])
def test_bad_limits_are_named(value, error):
    X = Signal("x", complex_numbers())
    model = SMALL["gating"]()
    for call in (lambda: formula(X * X, max_terms=value), lambda: (X * X).formula(max_terms=value),
                 lambda: model.formula(max_terms=value), lambda: derive("gating", max_terms=value)):
        with pytest.raises(error, match="^max_terms: expected a positive int"):
            call()


def test_numpy_ints_are_limits():
    X = Signal("x", complex_numbers())
    assert np.array_equal(formula(X * X, max_terms=np.int64(3)), formula(X * X))
