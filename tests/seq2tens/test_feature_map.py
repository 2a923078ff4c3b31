"""The Seq2Tens feature map: brute force over increasing index tuples, Chen's identity, the exp lift, signatures,
the expression form, the three kernels and masks."""
from itertools import combinations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

from product_interactions.algebra import tensor_algebra
from product_interactions.interactions import formula, order
from product_interactions.interactions.feature_map import flatten, seq2tens, seq2tens_expression, signature

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)
METHODS = ("sequential", "levelwise", "parallel")


def sequences(seed, batch, length, d):
    return np.random.default_rng(seed).standard_normal((batch, length, d))


def brute_force(x, degree):
    """Phi_m = sum over i_1 < ... < i_m of x_{i_1} (x) ... (x) x_{i_m}, one sequence (length, d)."""
    levels = [np.array(1.0)]
    for m in range(1, degree + 1):
        level = np.zeros((x.shape[1],) * m)
        for tuple_ in combinations(range(len(x)), m):
            term = np.array(1.0)
            for i in tuple_:
                term = np.multiply.outer(term, x[i])
            level += term
        levels.append(level)
    return levels


def product(s, t):
    """The convolution tensor product of two batched elements given as level tuples (level 0 of shape (batch,))."""
    batch = np.shape(s[0])
    out = []
    for m in range(len(s)):
        terms = [np.einsum("bi,bj->bij", np.reshape(s[i], batch + (-1,)), np.reshape(t[m - i], batch + (-1,)))
                 .reshape(batch + (-1,)) for i in range(m + 1)]
        out.append(np.reshape(sum(terms), np.shape(s[m])))
    return tuple(out)


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**16), st.sampled_from(METHODS))
def test_phi_is_the_sum_over_increasing_index_tuples(length, d, degree, seed, method):
    x = sequences(seed, 2, length, d)
    levels = seq2tens(x, degree, method=method)
    for b in range(2):
        for m, expected in enumerate(brute_force(x[b], degree)):
            np.testing.assert_allclose(levels[m][b], expected, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**16),
       st.sampled_from(["linear", "exp"]))
def test_concatenation_is_multiplication(n, k, d, degree, seed, lift):
    x, y = sequences(seed, 2, n, d), sequences(seed + 1, 2, k, d)
    joined = seq2tens(np.concatenate([x, y], axis=1), degree, lift=lift)
    expected = product(seq2tens(x, degree, lift=lift), seq2tens(y, degree, lift=lift))
    for got, want in zip(joined, expected):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("d, depth", [(1, 4), (2, 3), (3, 2)])
def test_exp_lift_of_a_straight_line_is_exp_of_its_increment(d, depth):
    start, increment = np.array([0.5, -1.0, 2.0])[:d], np.array([1.0, 0.5, -0.25])[:d]
    line = start + np.linspace(0, 1, 6)[:, None] * increment
    T = tensor_algebra(d, depth)
    expected = np.array(T.exp(increment.tolist()).coefficients[1:], dtype=float)
    np.testing.assert_allclose(signature(line[None], depth)[0], expected, rtol=1e-12)
    lifted = flatten(seq2tens(increment[None, None], depth, lift="exp"))[0]
    np.testing.assert_allclose(lifted, expected, rtol=1e-12)


@SETTINGS
@given(st.integers(2, 6), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**16), st.data())
def test_repeating_a_point_changes_nothing_for_the_exp_lift_on_increments(length, d, depth, seed, data):
    x = sequences(seed, 1, length, d)
    t = data.draw(st.integers(0, length - 1))
    repeated = np.concatenate([x[:, :t + 1], x[:, t:]], axis=1)
    np.testing.assert_allclose(signature(repeated, depth), signature(x, depth), rtol=1e-12, atol=1e-12)


def test_embedding_order_interpolates_between_the_lifts():
    x = sequences(3, 2, 5, 2)
    for lift, p in (("linear", 1), ("exp", 3)):
        np.testing.assert_allclose(flatten(seq2tens(x, 3, embedding_order=p)), flatten(seq2tens(x, 3, lift=lift)))
    step = seq2tens(x[:, :1], 3, embedding_order=2)          # one point: (1, x, x (x) x / 2, 0)
    np.testing.assert_allclose(step[2], np.einsum("bi,bj->bij", x[:, 0], x[:, 0]) / 2)
    np.testing.assert_array_equal(step[3], 0)


@pytest.mark.parametrize("lift, embedding_order", [("linear", None), ("exp", None), ("linear", 2)])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_expression_form_equals_the_fast_path(lift, embedding_order, return_sequences):
    x = sequences(5, 3, 4, 2)
    expr, signal = seq2tens_expression(4, 2, 3, lift=lift, embedding_order=embedding_order,
                                       return_sequences=return_sequences)
    value = expr.compile()(x)
    expected = flatten(seq2tens(x, 3, lift=lift, embedding_order=embedding_order,
                                return_sequences=return_sequences))
    np.testing.assert_array_equal(value[..., 0], 0)                    # Phi - 1
    np.testing.assert_allclose(value[..., 1:], expected, rtol=1e-12, atol=1e-12)
    assert order(expr, signal) == {"linear": embedding_order or 1, "exp": 3}[lift]


def test_expression_formula_is_the_sum_over_increasing_tuples():
    expr, _ = seq2tens_expression(length=4, dim=2, degree=2)
    x = [[sympy.Symbol(f"x_{{{t},{a}}}", real=True) for a in range(2)] for t in range(4)]
    level2 = formula(expr)[tensor_algebra(2, 2).level(2)]
    for (a, b), value in zip([(0, 0), (0, 1), (1, 0), (1, 1)], level2):
        expected = sum(x[s][a] * x[t][b] for s, t in combinations(range(4), 2))
        assert sympy.expand(value - expected) == 0


@pytest.mark.parametrize("return_sequences", [False, True])
@pytest.mark.parametrize("order_", [1, 2, 4])
def test_prefix_scan_equals_the_sequential_scan(return_sequences, order_):
    x = sequences(7, 3, 13, 2)
    results = [flatten(seq2tens(x, 4, embedding_order=order_, return_sequences=return_sequences, method=method))
               for method in METHODS]
    for other in results[1:]:
        np.testing.assert_allclose(other, results[0], rtol=1e-11, atol=1e-11)


def test_return_sequences_gives_every_prefix():
    x = sequences(8, 2, 5, 2)
    every = seq2tens(x, 3, lift="exp", return_sequences=True)
    for t in range(5):
        for got, want in zip(every, seq2tens(x[:, :t + 1], 3, lift="exp")):
            np.testing.assert_allclose(got[:, t], want, rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_padding_changes_no_result(method):
    lengths = [5, 2, 1]
    x = sequences(9, 3, 5, 2)
    mask = np.arange(5)[None, :] < np.array(lengths)[:, None]
    padded = np.where(mask[:, :, None], x, np.nan)                    # NaN padding is ignored
    full = flatten(seq2tens(padded, 3, lift="exp", mask=mask, return_sequences=True, method=method))
    paths = signature(padded, 3, mask=mask, return_sequences=True, method=method)
    for b, n in enumerate(lengths):
        alone = flatten(seq2tens(x[b:b + 1, :n], 3, lift="exp", return_sequences=True, method=method))[0]
        np.testing.assert_allclose(full[b, :n], alone, rtol=1e-12)
        np.testing.assert_allclose(full[b, n:], np.broadcast_to(alone[-1], full[b, n:].shape), rtol=1e-12)
        np.testing.assert_allclose(paths[b, :n], signature(x[b:b + 1, :n], 3, return_sequences=True,
                                                           method=method)[0], rtol=1e-12, atol=1e-15)


def test_float32_stays_float32():
    x = sequences(1, 2, 6, 3).astype(np.float32)
    levels = seq2tens(x, 3, lift="exp")
    assert all(level.dtype == np.float32 for level in levels)
    np.testing.assert_allclose(flatten(levels), flatten(seq2tens(x.astype(float), 3, lift="exp")), rtol=1e-4,
                               atol=1e-5)


def test_gradients_flow_through_every_method():
    import autograd
    x = sequences(2, 1, 4, 2)
    grads = [autograd.grad(lambda a: np.sum(signature(a, 3, method=method) ** 2))(x) for method in METHODS]
    for other in grads[1:]:
        np.testing.assert_allclose(other, grads[0], rtol=1e-10)


@pytest.mark.parametrize("chunk_bytes", [1, 16, 640, 1000, 2**19])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_levelwise_chunks_of_the_batch_equal_the_brute_force_sum(chunk_bytes, return_sequences, monkeypatch):
    """The level-wise path cuts the batch into chunks of about LEVELWISE_CHUNK_BYTES: one row each (1 byte), two or
    more rows (640 and 1,000 bytes against 256 a row at length 4, d 2, degree 3 with every prefix, 128 without:
    the row count is rounded down), or the whole batch; every chunking gives the sum over increasing index tuples."""
    from product_interactions.kernels.scans import seq2tens as scans
    monkeypatch.setattr(scans, "LEVELWISE_CHUNK_BYTES", chunk_bytes)
    x = sequences(7, 7, 4, 2)
    levels = seq2tens(x, 3, method="levelwise", return_sequences=return_sequences)
    for b in range(7):
        for m, expected in enumerate(brute_force(x[b], 3)):
            got = levels[m][b][-1] if return_sequences and m else levels[m][b]
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
