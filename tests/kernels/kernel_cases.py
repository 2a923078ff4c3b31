"""Algebras, random operands and the dense (Kronecker) reference shared by the kernels tests."""
import tracemalloc

import numpy as np

from product_interactions.algebra import (Algebra, clebsch_gordan, clifford, complex_numbers, diagonal, direct_sum, gaunt, matrix_algebra,
                     position, quaternions, tensor_algebra, tensor_product, translation)

from product_interactions.kernels import STRATEGIES

STRATEGY_NAMES = tuple(STRATEGIES)          # every registered strategy: a new one is tested without a change here


def random_dense(dim: int = 5, seed: int = 0) -> Algebra:
    """A dense algebra with random small integer structure constants (exact, as the algebra package needs)."""
    rng = np.random.default_rng(seed)
    return Algebra.from_structure_constants(rng.integers(-3, 4, (dim,) * 3), name=f"random dense d={dim}")


def builtin_algebras() -> dict:
    """Every built-in family, small: plain algebras, a direct sum and tensor products (with FFT-sized cyclic)."""
    plain = [diagonal(3), position(4), translation(5), translation(9), translation(6, cyclic=False), clifford(2),
             clifford(3, 0, 1), clifford(1, 1), complex_numbers(), quaternions(), matrix_algebra(2),
             tensor_algebra(2, 2), tensor_algebra(3, 3), direct_sum(complex_numbers(), diagonal(2)), random_dense(),
             clebsch_gordan(2), clebsch_gordan(1, parity=True), gaunt(1)]
    products = [tensor_product(position(3), quaternions()), tensor_product(translation(3), matrix_algebra(2)),
                tensor_product(clifford(1), diagonal(2), translation(4, cyclic=False)),
                tensor_product(translation(8), translation(4)), tensor_product(random_dense(3, seed=1), position(2)),
                tensor_product(tensor_algebra(2, 2), quaternions()), tensor_product(position(2), tensor_algebra(2, 2))]
    return {A.name: A for A in plain + products}


def operands(A, batch=(6,), seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((*batch, *A.shape)).astype(dtype) for _ in range(2))


def reference(A, x, y):
    """x * y through the dense structure constants; for a tensor product, the Kronecker product of its factors'
    (built by the algebra package), on flattened arrays.  Computed in float64."""
    lam = A.structure_constants()
    flat = [np.asarray(a, dtype=np.float64).reshape(*np.shape(a)[:np.ndim(a) - len(A.shape)], A.dim) for a in (x, y)]
    z = np.einsum("...i,...j,ijk->...k", *flat, lam)
    return z.reshape(*z.shape[:-1], *A.shape)


def with_non_finite(x, y):
    """Copies of x and y with an infinity, a NaN and a negative infinity in their first three batch rows."""
    x, y = x.copy(), y.copy()
    x[0].flat[0], y[1].flat[-1], x[2].flat[-1] = np.inf, np.nan, -np.inf
    return x, y


def term_by_term(A, x, y):
    """z_k = sum over the nonzero lam[i, j, k] of lam[i, j, k] x_i y_j, term by term in IEEE arithmetic (a
    structural zero never meets an infinity): finite exactly where all of an output's terms are."""
    lam = A.structure_constants()
    flat = [np.asarray(a, dtype=np.float64).reshape(*np.shape(a)[:np.ndim(a) - len(A.shape)], A.dim) for a in (x, y)]
    z = np.zeros(np.broadcast_shapes(flat[0].shape, flat[1].shape)[:-1] + (A.dim,))
    with np.errstate(invalid="ignore"):
        for i, j, k in zip(*np.nonzero(lam)):
            z[..., k] += lam[i, j, k] * flat[0][..., i] * flat[1][..., j]
    return z.reshape(*z.shape[:-1], *A.shape)


def same_values(z, expected, tolerance=1e-12) -> bool:
    """The same entries finite, those within `tolerance` of the largest (which of inf, -inf or NaN a non-finite
    entry is depends on how a strategy groups its terms: inf - inf against inf * 0)."""
    z = np.asarray(z, dtype=np.float64)
    finite = np.isfinite(expected)
    if not np.array_equal(np.isfinite(z), finite):
        return False
    return relative_error(z[finite], expected[finite]) <= tolerance if finite.any() else True


def relative_error(z, expected) -> float:
    return float(np.max(np.abs(np.asarray(z, dtype=np.float64) - expected)) / max(np.max(np.abs(expected)), 1e-300))


def numeric_gradient(f, arguments, index, eps=1e-6):
    """Central finite differences of the scalar f(*arguments) with respect to arguments[index]."""
    base = arguments[index]
    gradient = np.zeros_like(base)
    for entry in np.ndindex(base.shape):
        step = np.zeros_like(base)
        step[entry] = eps
        plus, minus = list(arguments), list(arguments)
        plus[index], minus[index] = base + step, base - step
        gradient[entry] = (f(*plus) - f(*minus)) / (2 * eps)
    return gradient


#: What a call may hold besides the arrays it is measured against: numpy's ufunc buffer (8,192 elements) and small
#: Python objects.
SLACK_BYTES = 80 * 2**10


def held_bytes(call, library="numpy"):
    """The most bytes `call()` holds at once beyond what was held before it, measured on a second call (the first
    builds constants, code and paths): numpy's allocations traced by tracemalloc, or torch's CPU allocations and
    frees in the order torch's profiler records them."""
    call()
    if library == "torch":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as recorded:
            call()
        held = peak = 0
        for event in sorted(recorded.profiler.function_events, key=lambda e: e.time_range.start):
            held += event.cpu_memory_usage if event.name == "[memory]" else event.self_cpu_memory_usage
            peak = max(peak, held)
        return peak
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
