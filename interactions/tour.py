"""The tour run by ``python -m interactions tour``: an algebra, attention derived from the cubic interaction,
compiled and checked against numpy, convolution derived from translation symmetry, and the quick copy experiment.

Each step checks what it prints; `run` returns the figures and ``passed``.

>>> report = run(print=lambda *args: None, experiment=False)
>>> report["passed"], report["attention_order"], report["convolution_taps"]
(True, 3, 3)
"""
from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy

from ..algebra import quaternions
from ..algebra.symmetry import bilinear_map, equivariant_constraints, solve, translations

from .architectures import attention

TOLERANCE = 1e-12


def _algebra(print: Callable[..., object]) -> dict[str, Any]:
    H = quaternions()
    x, y = H.symbols("x"), H.symbols("y")
    print(f"1. An algebra from its structure constants e_i e_j = sum_k lam_ij^k e_k: the quaternions, basis "
          f"{', '.join(H.basis)}, "  # type: ignore[arg-type]  # the quaternions' labels are strings
          f"{H.nnz} nonzero constants;\n   associative {H.is_associative()}, commutative "
          f"{H.is_commutative()}, unit {H.unit()}.  The product x * y, component by component:")
    for label, value in zip(H.basis, (x * y).flat):
        print(f"     {label}: {value}")
    return {"quaternions_associative": H.is_associative()}


def _textbook_attention(x: Sequence[sympy.Symbol], W_Q: sympy.Symbol, W_K: sympy.Symbol, W_V: sympy.Symbol,
                        W_O: sympy.Symbol, query: int) -> sympy.Expr:
    """softmax_l(<W_Q x_query, W_K x_l>) over keys l <= query, applied to W_V x_l, then W_O (one head, d = 1)."""
    scores = [W_Q * x[query] * W_K * x[key] for key in range(query + 1)]
    weights = [sympy.exp(s) / sum(sympy.exp(t) for t in scores) for s in scores]
    return W_O * sum(w * W_V * x[key] for key, w in enumerate(weights))


def _attention_formula(print: Callable[..., object], length: int = 3) -> dict[str, Any]:
    model = attention(d_model=1, heads=1, causal=True, length=length)
    query = length - 1
    output = model.formula()[query, 0, 0]
    names = {"W_Q_{0,0}": "q", "W_K_{0,0}": "k", "W_V_{0,0}": "v", "W_O_{0,0}": "o",
             **{f"x_{{{i},0}}": f"x{i}" for i in range(length)}}
    output = output.subs({symbol: sympy.Symbol(names[symbol.name]) for symbol in output.free_symbols})
    textbook = _textbook_attention(sympy.symbols(f"x:{length}"),  # type: ignore[misc]  # four symbols: W_Q..W_O
                                   *sympy.symbols("q k v o"), query=query)
    matches = sympy.expand(sympy.numer(sympy.together(output - textbook))) == 0
    print(f"\n2. Attention derived from the cubic interaction P^c(F(P^0(X T(X))) T(X)) on position({length}) (x) "
          f"position({length}) (x) R, with W_Q, W_K, W_V, W_O = q, k, v, o:\n   self-interaction order "
          f"{model.order()}; the last token's output\n     z{query} = {output}\n   equals the textbook "
          f"o sum_l softmax_l(q x{query} k x_l) v x_l: {matches}")
    return {"attention_order": model.order(), "attention_formula_matches": matches}


def _numpy_attention(params: dict[str, np.ndarray], x: np.ndarray, heads: int) -> np.ndarray:
    """Causal multi-head softmax attention written directly in numpy."""
    batch, n, _ = x.shape
    d_head = params["W_Q"].shape[0] // heads
    q, k, v = ((x @ params[name].T).reshape(batch, n, heads, d_head) for name in ("W_Q", "W_K", "W_V"))
    scores = np.einsum("bkhe,blhe->bhkl", q, k) / np.sqrt(d_head)
    scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("bhkl,blhe->bkhe", weights, v).reshape(batch, n, -1) @ params["W_O"].T


def _attention_numeric(print: Callable[..., object], seed: int) -> dict[str, Any]:
    model = attention(d_model=16, heads=4, causal=True)
    params = model.init(seed=seed)
    x = np.random.default_rng(seed).standard_normal((4, 64, 16))
    error = float(np.max(np.abs(model.apply(params, x) - _numpy_attention(params, x, heads=4))))
    print(f"\n3. The same expression compiled (one fused contraction per stage) at length 64, 4 heads of 4: max "
          f"|compiled - numpy| = {error:.1e}")
    return {"attention_max_error": error}


def _convolution(print: Callable[..., object], n: int = 3) -> dict[str, Any]:
    shifts = translations(n)
    solution = solve(equivariant_constraints((shifts.trivial_on(n), shifts, shifts), bilinear_map(n)))
    lam = solution.symbolic("t")                          # lam[a, i, k]: filter a, input position i, output k
    K, x = sympy.symbols(f"K:{n}"), sympy.symbols(f"x:{n}")
    z = [sympy.expand(sum(lam[a, i, k] * K[a] * x[i] for a in range(n) for i in range(n))) for k in range(n)]
    taps = [z[0].coeff(x[-m % n]) for m in range(n)]   # z_0 = sum_m c_m x_{-m}
    convolution = all(sympy.expand(z[k] - sum(taps[m] * x[(k - m) % n] for m in range(n))) == 0 for k in range(n))
    print(f"\n4. Convolution from translation symmetry: O_K(x) = K x on position({n}) with unknown lam, and "
          f"O T_g = T_g O for every shift g,\n   solved exactly ({solution.method}): {solution.dim} free constants "
          f"of {lam.size}.  The general solution is\n     z_0 = {z[0]}\n   i.e. z_k = sum_m c_m x_(k-m mod {n}) "
          f"with taps c_m = {taps}: a circular convolution ({convolution}).")
    return {"convolution_taps": len(taps), "convolution_derived": convolution}


def _copy(print: Callable[..., object], seed: int) -> dict[str, Any]:
    from .experiments import run as run_experiment
    from .experiments.report import table
    result = run_experiment("copy", quick=True, seed=seed, progress=False)
    print("\n5. The quick selective-copy experiment (attention with projection rank R):\n" + table(result))
    return {"copy": {line["name"]: line["ours"] for line in result["rows"]}}


def run(seed: int = 0, print: Callable[..., object] = builtins.print, experiment: bool = True) -> dict[str, Any]:
    """Run the tour; returns its figures and ``passed`` (every check held)."""
    report = {**_algebra(print), **_attention_formula(print), **_attention_numeric(print, seed), **_convolution(print)}
    if experiment:
        report.update(_copy(print, seed))
    report["passed"] = bool(report["quaternions_associative"] and report["attention_formula_matches"]
                            and report["attention_max_error"] < TOLERANCE and report["convolution_derived"])
    print(f"\nAll checks passed: {report['passed']}")
    return report
