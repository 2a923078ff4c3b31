"""Seq2Tens numerics: products of truncated tensor-algebra elements level by level, and rank-1 functionals.

A *group-like* element of T(R^d) truncated at degree M, t = (1, t_1, ..., t_M), is held as the tuple of its
levels (t_1, ..., t_M), level m an array (..., d^m) (row-major words; level 0 is the implicit 1).  Products are
sums of outer products, (s . t)_m = s_m + t_m + sum_{0<i<m} s_i (x) t_{m-i}: never the (D, D, D) structure
constants.  A sequence x (..., L, d) is lifted step by step to sum_{k<=p} x_t^{(x)k} / k! (p = `order`: 1 is the
Seq2Tens lift (1, x, 0, ...), p >= M the exponential) and `scan` returns the product over time, three ways:

* ``"sequential"``: a loop over time multiplying the state by each lift (Horner's rule per level);
* ``"levelwise"``: the same recursion solved one level at a time for all times at once,
  Phi_m(t) = sum_{s<=t} sum_{k=1..p} Phi_{m-k}(s-1) (x) x_s^{(x)k} / k!, a cumulative sum over time per level;
* ``"parallel"``: an associative prefix scan of the lifts (`kernels.prefix_scan`), log depth in L.

`low_rank` evaluates rank-1 functionals <v^1 (x) ... (x) v^m, Phi(x)> without forming tensors (the LS2T layer).

>>> import numpy as np
>>> x = np.array([[[1., 0.], [0., 2.]]])                        # one sequence of two points in R^2
>>> [level[0] for level in scan(x, degree=2, order=1, method="levelwise")]     # (1, x1) (1, x2)
[array([1., 2.]), array([0., 2., 0., 0.])]
"""
from __future__ import annotations

import autograd.numpy as anp

from .prefix_scan import prefix_scan, tree_reduce

METHODS = ("sequential", "levelwise", "parallel")


def _merge_last(a):
    shape = anp.shape(a)
    return anp.reshape(a, shape[:-2] + (shape[-2] * shape[-1],))


def outer(a, b):
    """Batched outer product flattened row-major: (..., p), (..., q) -> (..., p q)."""
    return _merge_last(a[..., :, None] * b[..., None, :])


def _times(acc, x):
    """acc (x) x, where acc None stands for the scalar 1."""
    return x if acc is None else outer(acc, x)


def _horner(lower, x, m: int, order: int):
    """sum_{k=1..min(m, order)} lower[m-k] (x) x^{(x)(k-1)} / k!, so that (lower . lift(x))_m - lower_m is this
    (x) x.  `lower[j]` holds level j (lower[0] is None, the 1); the result is None when it is the scalar 1."""
    q = min(m, order)
    acc = lower[m - q]
    for k in range(q, 1, -1):
        acc = _times(acc, x) / k + lower[m - k + 1]
    return acc


def lift(x, degree: int, order: int) -> tuple:
    """Levels 1..degree of sum_{k<=order} x^{(x)k} / k! for x (..., d)."""
    levels, power = [], x
    for m in range(1, degree + 1):
        if m > 1:
            power = outer(power, x) / m
        levels.append(power if m <= order else anp.zeros_like(power))
    return tuple(levels)


def multiply(s: tuple, t: tuple) -> tuple:
    """The product of two group-like elements given by their levels 1..M."""
    return tuple(s[m] + t[m] + sum(outer(s[i], t[m - 1 - i]) for i in range(m)) for m in range(len(s)))


def _sequential(x, degree, order, return_sequences):
    state = [None] + [anp.zeros(anp.shape(x)[:-2] + (anp.shape(x)[-1] ** m,), x.dtype) for m in range(1, degree + 1)]
    states = []
    for t in range(anp.shape(x)[-2]):
        step = x[..., t, :]
        state = [None] + [state[m] + _times(_horner(state, step, m, order), step) for m in range(1, degree + 1)]
        states.append(tuple(state[1:]))
    if not return_sequences:
        return states[-1]
    return tuple(anp.stack(level, axis=-2) for level in zip(*states))


def _levelwise(x, degree, order, return_sequences):
    exclusive, levels = [None], []                  # exclusive[j]: level j of the product over times < t
    for m in range(1, degree + 1):
        inner = _horner(exclusive, x, m, order)
        if m == degree and not return_sequences:    # the top level is only summed: contract over time
            levels.append(anp.sum(x, axis=-2) if inner is None else
                          _merge_last(anp.matmul(anp.swapaxes(inner, -1, -2), x)))
            break
        increment = _times(inner, x)
        prefix = anp.cumsum(increment, axis=-2)
        levels.append(prefix if return_sequences else prefix[..., -1, :])
        exclusive.append(prefix - increment)
    return tuple(levels)


def _parallel(x, degree, order, return_sequences):
    lifts = lift(x, degree, order)
    axis = anp.ndim(x) - 2
    return (prefix_scan if return_sequences else tree_reduce)(multiply, lifts, axis)


_SCANS = {"sequential": _sequential, "levelwise": _levelwise, "parallel": _parallel}


def scan(x, degree: int, order: int, method: str = "levelwise", return_sequences: bool = False) -> tuple:
    """Levels 1..degree of prod_t lift(x_t) for x (..., L, d), L >= 1: each (..., d^m), or (..., L, d^m) (every
    prefix) with `return_sequences`.  A zero step lifts to the unit, so zeroed steps are left out."""
    return _SCANS[method](x, degree, order, return_sequences)


def low_rank(z, degree: int, independent: bool, return_sequences: bool = False):
    """<l_m, Phi(x)> for rank-1 functionals l_m = v^1_m (x) ... (x) v^m_m, from the projections z_t = <v, x_t>.

    z is (..., L, K, N): N functionals; with ``independent=False`` K = degree and slot k-1 holds <v^k, x_t>,
    shared by all levels (l_m = v^1 (x) ... (x) v^m); with ``independent=True`` K = degree (degree + 1) / 2 and
    the slots come in groups k = 1..degree, group k holding <v^k_m, x_t> for m = k..degree.  The recursion
    R_1 = z^1, R_k(t) = z^k_t sum_{s<t} R_{k-1}(s), level k = sum_t R_k(t), costs O(K L N).  Returns
    (..., degree, N), or (..., L, degree, N) over the expanding windows [0, t] with `return_sequences`.

    >>> import numpy as np
    >>> z = np.array([[[1.], [2.]], [[3.], [4.]], [[5.], [6.]]])  # L = 3, v^1 and v^2 of one functional
    >>> low_rank(z, 2, independent=False)[:, 0]                   # 1 + 3 + 5, 1*4 + 1*6 + 3*6
    array([ 9., 28.])
    """
    running, levels, start = None, [], 0
    for k in range(1, degree + 1):
        width = degree - k + 1 if independent else 1
        slots = z[..., start:start + width, :]
        start += width
        step = slots if running is None else slots * running
        if k == degree and not return_sequences:
            levels.append(anp.sum(step[..., 0, :], axis=-2))
            break
        prefix = anp.cumsum(step, axis=-3)
        levels.append(prefix[..., 0, :] if return_sequences else prefix[..., -1, 0, :])
        running = (prefix - step)[..., 1:, :] if independent else prefix - step
    return anp.stack(levels, axis=-2)
