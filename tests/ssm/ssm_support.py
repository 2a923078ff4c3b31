"""Shared by the ssm tests: plain numpy loops over time of the formulas in the modules' docstrings (also the
references of benchmarks/ssm.py), a directional finite-difference check, the degrees of a step's formulas and a
numeric evaluation of formulas."""
import re

import autograd
import numpy as np
import pytest
import sympy

from product_interactions.interactions import Scan, formula
from product_interactions.interactions.orders import polynomial_degree


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def silu(v):
    return v * sigmoid(v)


def softplus(v):
    return np.logaddexp(0, v)


def ssm_loop(params, x):
    """S4D: zero-order hold, then h_t = Abar h_{t-1} + Bbar x_t, y_t = Re(C h_t) + D x_t, with Python complexes."""
    p = params
    A = -np.exp(p["log_A_real"]) + 1j * p["A_imag"]
    Abar = np.exp(np.exp(p["log_step"])[:, None] * A)
    Bbar = (Abar - 1) / A * (p["B"][..., 0] + 1j * p["B"][..., 1])
    C = p["C"][..., 0] + 1j * p["C"][..., 1]
    batch, length, channels = x.shape
    y = np.zeros(x.shape)
    for b in range(batch):
        h = np.zeros(A.shape, complex)
        for t in range(length):
            h = Abar * h + Bbar * x[b, t][:, None]
            y[b, t] = np.real(np.sum(C * h, axis=1)) + p["D"] * x[b, t]
    return y


def selective_scan_loop(u, delta, A, B, C, D=None, z=None):
    """h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t, y_t = C_t h_t (+ D u_t) (* silu(z_t))."""
    batch, length, channels = u.shape
    h = np.zeros((batch, channels, A.shape[1]), u.dtype)
    ys = []
    for t in range(length):
        h = np.exp(delta[:, t, :, None] * A) * h + (delta[:, t] * u[:, t])[:, :, None] * B[:, t, None, :]
        y = np.einsum("bdn,bn->bd", h, C[:, t])
        if D is not None:
            y = y + D * u[:, t]
        ys.append(y if z is None else y * silu(z[:, t]))
    return np.stack(ys, axis=1)


def frame_inputs(params, x):
    """u and z of Mamba's block: the projections and the causal depthwise convolution, tap by tap."""
    p = params
    taps = [p[f"conv_{k}"] for k in range(sum(name.startswith("conv_") for name in p) - 1)]
    x_in, z = x @ p["W_x"].T, x @ p["W_z"].T
    conv = np.zeros_like(x_in) + p["conv_bias"]
    for t in range(x.shape[1]):
        for k, tap in enumerate(taps[:t + 1]):
            conv[:, t] += tap * x_in[:, t - k]
    return silu(conv), z


def mamba_loop(params, x):
    """The Mamba block: projections, causal depthwise convolution, then the selective scan step by step."""
    p = params
    u, z = frame_inputs(params, x)
    delta = softplus(u @ p["W_delta"].T @ p["W_dt"].T + p["dt_bias"])
    y = selective_scan_loop(u, delta, -np.exp(p["A_log"]), u @ p["W_B"], u @ p["W_C"], p["D"], z)
    return y @ p["W_out"].T


def dynamical_recurrence(params, v, input_order, hidden_order):
    """H(s) = H(s-1) + K (a H(s-1)) + I(s) on the features v (batch, length, width) step by step, read out as
    (W_c v(s)) H(s): (batch, length, width)."""
    p = params
    h = np.zeros((v.shape[0], v.shape[2]), v.dtype)
    ys = []
    for s in range(v.shape[1]):
        v_s = v[:, s]
        gate = sigmoid(v_s @ p["W_g"].T)
        K = gate if hidden_order == 1 else gate * sigmoid(v_s @ p["W_h"].T)
        term = (v_s @ p["W_u"].T) * (1 if input_order == 1 else v_s @ p["W_b"].T) * (gate if input_order == 3 else 1)
        h = h + K * (-np.exp(p["A_log"]) * h) + term
        ys.append((v_s @ p["W_c"].T) * h)
    return np.stack(ys, axis=1)


def dynamical_loop(params, x, input_order, hidden_order):
    """The bare layer: Y(s) = W_o((W_c X(s)) H(s)), the recurrence on X itself."""
    return dynamical_recurrence(params, x, input_order, hidden_order) @ params["W_o"].T


def dynamical_block_loop(params, x, input_order, hidden_order):
    """The dynamical layer in Mamba's block: u, z as Mamba's, the recurrence on u, y = (W_c u) H,
    out = W_out (y * silu(z))."""
    u, z = frame_inputs(params, x)
    return (dynamical_recurrence(params, u, input_order, hidden_order) * silu(z)) @ params["W_out"].T


def check_causal(model, params, x, step=4):
    """Changing the input from `step` on leaves every earlier output of every path as it was, and changes the
    later ones."""
    changed = x.copy()
    changed[:, step:] -= 0.5
    for method in ("sequential", "parallel", "expression"):
        before, after = model.apply(params, x, method=method), model.apply(params, changed, method=method)
        np.testing.assert_allclose(before[:, :step], after[:, :step], rtol=1e-12, atol=1e-14)
        assert not np.allclose(before[:, step:], after[:, step:])


def check_gradient(loss, params, seed=0, eps=1e-6, rtol=1e-6):
    """autograd's gradient of loss(params) (a dict) against central differences along one random direction per
    entry."""
    rng = np.random.default_rng(seed)
    grads = autograd.grad(loss)(params)
    for name, value in params.items():
        direction = rng.standard_normal(np.shape(value))
        shifted = lambda sign: loss({**params, name: value + sign * eps * direction})  # noqa: E731
        numeric = (shifted(1) - shifted(-1)) / (2 * eps)
        assert np.sum(grads[name] * direction) == pytest.approx(numeric, rel=rtol, abs=1e-9), name


def formula_values(formula, arrays):
    """The formula's components with every symbol name_{i,j} replaced by arrays[name][i, j]."""
    def value(symbol):
        name, index = re.fullmatch(r"(.+)_\{([\d,]+)\}", symbol.name).groups()
        return float(arrays[name][tuple(int(i) for i in index.split(","))])

    def evaluate(component):
        component = sympy.sympify(component)
        return float(component.subs({s: value(s) for s in component.free_symbols}).rewrite(sympy.exp).evalf())
    return np.vectorize(evaluate, otypes=[float])(formula)


def step_degrees(model):
    """The polynomial degrees in x_t of the formulas of the scan step's input and hidden terms (the reference for
    the orders `StateSpaceModel.order` reads off the nodes)."""
    scan = next(node for node in model.expr.walk() if isinstance(node, Scan))
    hidden, term = scan.body.children
    degrees = []
    for expr in (term, hidden):
        components = formula(expr).ravel()
        x_t = {s for c in components for s in c.free_symbols if s.name.startswith("x_t")}
        degrees.append(max(polynomial_degree(c, x_t) for c in components))
    return tuple(degrees)
