"""The scans on torch and JAX (issue 39): `linear_scan` and `selective_scan` with every method, the Seq2Tens scan
at every degree and lift order, and the LS2T functionals at every degree, each against a plain numpy loop or a
brute force over index tuples; gradients against the engine's own autodiff through a plain loop.  (The numpy
paths have their own files; here a bug in a torch or JAX path is caught next to it, not by an architecture.)"""
from functools import reduce
from itertools import combinations
from math import factorial

import numpy as np
import pytest

from product_interactions.kernels.scans import linear_scan, selective_scan
from product_interactions.kernels.scans import seq2tens as s2t
from product_interactions.kernels.scans.low_rank import low_rank
from ssm_support import selective_scan_loop

ENGINE_NAMES = ["torch", "jax"]
SCAN_METHODS = ["sequential", "parallel", "chunked", "auto"]


def _library(name):
    """(to the engine, back to numpy) for torch or JAX, skipped where it is not installed."""
    if name == "torch":
        torch = pytest.importorskip("torch")
        return torch.tensor, lambda v: v.detach().numpy()
    jnp = pytest.importorskip("jax.numpy")
    return jnp.asarray, np.asarray


def _loop(a, b, initial=None):
    h, states = (np.zeros_like(b[0]) if initial is None else initial), []
    for t in range(len(b)):
        h = a[t] * h + b[t]
        states.append(h)
    return np.array(states)


@pytest.mark.parametrize("method", SCAN_METHODS)
@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_linear_scan_on_torch_and_jax_equals_the_loop(engine, method):
    to, back = _library(engine)
    rng = np.random.default_rng(0)
    for length in (1, 2, 5, 9):
        for dtype in (np.float64, np.complex128):
            shape = (length, 3, 2)
            draw = lambda: 0.8 * (rng.standard_normal(shape) + (  # noqa: E731
                1j * rng.standard_normal(shape) if dtype is np.complex128 else 0))
            a, b, h0 = draw(), draw(), draw()[0]
            for initial in (None, h0):
                got = linear_scan(to(a), to(b), None if initial is None else to(initial), method=method)
                assert back(got).dtype == dtype
                np.testing.assert_allclose(back(got), _loop(a, b, initial), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked"])
def test_linear_scan_gradients_on_torch_and_jax_equal_autodiff_through_a_loop(method):
    rng = np.random.default_rng(1)
    a, b, h0, w = rng.uniform(-1, 1, (7, 3)), rng.standard_normal((7, 3)), rng.standard_normal(3), \
        rng.standard_normal((7, 3))

    def plain(a, b, h0, stack, weights):
        h, states = h0, []
        for t in range(len(b)):
            h = a[t] * h + b[t]
            states.append(h)
        return (stack(states) * weights).sum()

    torch = pytest.importorskip("torch")
    leaves = [torch.tensor(v, requires_grad=True) for v in (a, b, h0)]
    (linear_scan(*leaves, method=method) * torch.tensor(w)).sum().backward()
    copies = [torch.tensor(v, requires_grad=True) for v in (a, b, h0)]
    plain(*copies, torch.stack, torch.tensor(w)).backward()
    for got, expected in zip(leaves, copies):
        np.testing.assert_allclose(got.grad.numpy(), expected.grad.numpy(), rtol=1e-12, atol=1e-12)
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    got = jax.grad(lambda *v: (linear_scan(*v, method=method) * w).sum(), (0, 1, 2))(*map(jnp.asarray, (a, b, h0)))
    expected = jax.grad(lambda *v: plain(*v, jnp.stack, jnp.asarray(w)), (0, 1, 2))(*map(jnp.asarray, (a, b, h0)))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12, atol=1e-12)


def _selective_inputs(seed=2, batch=2, length=6, channels=3, d_state=2):
    rng = np.random.default_rng(seed)
    return {"u": rng.standard_normal((batch, length, channels)),
            "delta": rng.random((batch, length, channels)) + 0.05,
            "A": -(rng.random((channels, d_state)) + 0.5), "B": rng.standard_normal((batch, length, d_state)),
            "C": rng.standard_normal((batch, length, d_state)), "D": rng.standard_normal(channels),
            "z": rng.standard_normal((batch, length, channels))}


@pytest.mark.parametrize("method", SCAN_METHODS)
@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_selective_scan_on_torch_and_jax_equals_the_loop(engine, method):
    to, back = _library(engine)
    inputs = _selective_inputs()
    for extras in ((), ("D",), ("D", "z")):
        chosen = {name: value for name, value in inputs.items() if name in ("u", "delta", "A", "B", "C") + extras}
        expected = selective_scan_loop(**chosen)
        got = back(selective_scan(**{name: to(value) for name, value in chosen.items()}, method=method))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked"])
def test_selective_scan_gradients_on_torch_equal_autodiff_through_a_loop(method):
    torch = pytest.importorskip("torch")
    inputs = _selective_inputs(seed=3)
    weights = torch.tensor(np.random.default_rng(4).standard_normal(inputs["u"].shape))

    def loop(u, delta, A, B, C, D, z):
        h, ys = torch.zeros(u.shape[0], u.shape[2], A.shape[1], dtype=u.dtype), []
        for t in range(u.shape[1]):
            h = torch.exp(delta[:, t, :, None] * A) * h + (delta[:, t] * u[:, t])[:, :, None] * B[:, t, None, :]
            ys.append((torch.einsum("bdn,bn->bd", h, C[:, t]) + D * u[:, t]) * torch.nn.functional.silu(z[:, t]))
        return (torch.stack(ys, 1) * weights).sum()

    leaves = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    (selective_scan(**leaves, method=method) * weights).sum().backward()
    copies = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    loop(**copies).backward()
    for name in inputs:
        np.testing.assert_allclose(leaves[name].grad.numpy(), copies[name].grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked"])
def test_selective_scan_gradients_on_jax_equal_autodiff_through_a_loop(method):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    inputs = {name: jnp.asarray(value) for name, value in _selective_inputs(seed=3).items()}
    weights = jnp.asarray(np.random.default_rng(4).standard_normal(inputs["u"].shape))

    def loop(u, delta, A, B, C, D, z):
        h, ys = jnp.zeros((u.shape[0], u.shape[2], A.shape[1])), []
        for t in range(u.shape[1]):
            h = jnp.exp(delta[:, t, :, None] * A) * h + (delta[:, t] * u[:, t])[:, :, None] * B[:, t, None, :]
            ys.append((jnp.einsum("bdn,bn->bd", h, C[:, t]) + D * u[:, t]) * jax.nn.silu(z[:, t]))
        return (jnp.stack(ys, 1) * weights).sum()

    got = jax.grad(lambda v: (selective_scan(**v, method=method) * weights).sum())(inputs)
    expected = jax.grad(lambda v: loop(**v))(inputs)
    for name in inputs:
        np.testing.assert_allclose(np.asarray(got[name]), np.asarray(expected[name]), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_the_first_step_takes_no_factor_of_the_zero_state_on_every_method(engine):
    """h_0 = b_0 whatever a_0 (linear_scan), and h_0 = delta_0 B_0 u_0 where exp(delta_0 A) overflows (a growing
    state, finite inputs): every method gives numpy's numbers (the loop had started from a zero state, and
    inf * 0 had made every output NaN)."""
    to, back = _library(engine)
    a, b = np.array([[np.inf], [0.5], [0.5]]), np.ones((3, 1))
    inputs = {"u": np.ones((1, 3, 1)), "delta": np.array([[[800.0], [0.01], [0.01]]]), "A": np.array([[1.0]]),
              "B": np.ones((1, 3, 1)), "C": np.ones((1, 3, 1))}
    expected = selective_scan(**inputs)
    assert np.all(np.isfinite(expected))
    for method in ("sequential", "parallel", "chunked", "auto"):
        np.testing.assert_array_equal(back(linear_scan(to(a), to(b), method=method)), [[1.0], [1.5], [1.75]])
        got = back(selective_scan(**{name: to(value) for name, value in inputs.items()}, method=method))
        np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=method)


@pytest.mark.parametrize("engine", ["numpy"] + ENGINE_NAMES)
def test_an_engine_s_sequential_scan_equals_a_loop_over_time(engine):
    """`Engine.sequential_scan`, JAX's lax.scan contract: a tuple of inputs sliced along time, a carry that is not
    the output, one step and several."""
    from product_interactions.kernels.arrays import ENGINES
    to, back = (np.asarray, np.asarray) if engine == "numpy" else _library(engine)
    rng = np.random.default_rng(9)
    for length in (1, 5):
        a, b, h0 = rng.uniform(-1, 1, (length, 2, 3)), rng.standard_normal((length, 2, 3)), rng.standard_normal((2, 3))
        h, expected = h0, []
        for t in range(length):
            expected.append(2 * h)
            h = a[t] * h + b[t]
        carry, ys = ENGINES[engine].sequential_scan(lambda h, x: (x[0] * h + x[1], 2 * h), to(h0), (to(a), to(b)))
        np.testing.assert_allclose(back(carry), h, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(back(ys), expected, rtol=1e-12, atol=1e-12)


def test_on_jax_the_sequential_scans_are_one_compiled_loop_not_a_step_per_time_step(monkeypatch):
    """JAX runs a recurrence's loop as one lax.scan, eagerly and under jit (`Engine.sequential_scan`): its program
    does not grow with the length (a loop unrolled in Python had taken 59 s to compile at 1,024 steps, and 307 s
    for its gradient), and an eager call, and an eager gradient, trace the step once per shape, then run the
    compiled loop."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from product_interactions.kernels.arrays import ENGINES

    def selective(length, seed=10, batch=2):
        inputs = _selective_inputs(seed=seed, batch=batch, length=length, channels=3, d_state=2)
        return {name: jnp.asarray(inputs[name]) for name in ("u", "delta", "A", "B", "C")}

    def linear(length):
        rng = np.random.default_rng(length)
        return {"a": jnp.asarray(rng.uniform(-1, 1, (length, 3))), "b": jnp.asarray(rng.standard_normal((length, 3)))}

    def signature(x, method):
        return s2t.scan(x, 3, 2, method=method, return_sequences=True)

    def paths(length):
        return {"x": jnp.asarray(np.random.default_rng(length).standard_normal((2, length, 2)))}

    for scan, inputs in ((linear_scan, linear), (selective_scan, selective), (signature, paths)):
        programs = {length: jax.make_jaxpr(lambda v: scan(**v, method="sequential"))(inputs(length)).jaxpr
                    for length in (4, 40)}
        assert len(programs[4].eqns) == len(programs[40].eqns), scan.__name__
        assert " scan[" in str(programs[40]), scan.__name__

    def forward(inputs):
        return selective_scan(**inputs, method="sequential")

    def gradient(inputs, method="sequential"):
        return jax.grad(lambda u: selective_scan(**{**inputs, "u": u}, method=method).sum())(inputs["u"])

    calls = [(forward, selective(7, seed, 5), selective_scan_loop(**{name: np.asarray(value) for name, value
                                                                      in selective(7, seed, 5).items()}))
             for seed in (11, 12)]             # a step's shape not traced before; then new numbers
    calls += [(gradient, selective(7, seed, 6), gradient(selective(7, seed, 6), "parallel")) for seed in (11, 12)]
    engine, traced = ENGINES["jax"], []
    exp = engine.exp
    monkeypatch.setattr(engine, "exp", lambda a: traced.append(a.shape) or exp(a))
    for index, (run, inputs, expected) in enumerate(calls):
        np.testing.assert_allclose(np.asarray(run(inputs)), np.asarray(expected), rtol=1e-12, atol=1e-12)
        if index % 2 == 0:
            assert traced, f"{run.__name__}: the first call traces the step"
            traced.clear()
        else:
            assert not traced, f"{run.__name__}: traced again"


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_a_scan_takes_numpy_arrays_beside_the_engine_s_converting_them(engine):
    """The rule for mixed inputs (kernels.arrays.registry): numpy arrays join the other library's (linear_scan had
    handed a numpy array to torch's operations)."""
    to, back = _library(engine)
    rng = np.random.default_rng(5)
    a, b, h0 = rng.uniform(-1, 1, (6, 3)), rng.standard_normal((6, 3)), rng.standard_normal(3)
    for given in ((a, to(b), None), (to(a), b, h0), (a, b, to(h0))):
        np.testing.assert_allclose(back(linear_scan(*given)), _loop(a, b, None if given[2] is None else h0),
                                   rtol=1e-12, atol=1e-12)
    inputs = _selective_inputs(seed=6)
    mixed = {name: to(value) if name in ("u", "B") else value for name, value in inputs.items()}
    np.testing.assert_allclose(back(selective_scan(**mixed)), selective_scan_loop(**inputs), rtol=1e-12, atol=1e-12)


def test_selective_scan_runs_under_jit_and_torch_func_where_its_value_checks_cannot_read():
    """Its checks read delta's smallest step and A's largest entry; a traced array has no values to read, so the
    traced call leaves them to the untraced one (it had failed: JAX's TracerArrayConversionError, torch.func's
    "Cannot access data pointer")."""
    inputs = _selective_inputs(seed=7)
    expected = selective_scan_loop(**inputs)
    jax = pytest.importorskip("jax")
    got = jax.jit(selective_scan)(**{name: jax.numpy.asarray(value) for name, value in inputs.items()})
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-12)
    torch = pytest.importorskip("torch")
    tensors = {name: torch.tensor(value) for name, value in inputs.items()}
    weights = torch.tensor(np.random.default_rng(8).standard_normal(expected.shape))
    gradient = torch.func.grad(lambda u: (selective_scan(**{**tensors, "u": u}) * weights).sum())(tensors["u"])
    u = tensors["u"].clone().requires_grad_()
    (expected_gradient,) = torch.autograd.grad((selective_scan(**{**tensors, "u": u}) * weights).sum(), u)
    torch.testing.assert_close(gradient, expected_gradient, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="delta: expected positive steps"):       # the untraced call checks
        selective_scan(**{**tensors, "delta": -tensors["delta"]})


def _tensor_product(s, t, degree):
    """Truncated tensor-algebra product of dense levels [scalar, (d,), (d, d), ...]."""
    return [sum(np.multiply.outer(s[i], t[m - i]) for i in range(m + 1)) for m in range(degree + 1)]


def _lift_product(x, degree, order):
    """prod over time of sum_{k <= order} x_t^(x)k / k!, dense levels 1..degree, each flattened (one path)."""
    total = [np.array(1.0)] + [np.zeros((x.shape[1],) * m) for m in range(1, degree + 1)]
    for step in x:
        lift = [reduce(np.multiply.outer, [step] * k, np.array(1.0)) / factorial(k) if k <= order
                else np.zeros((x.shape[1],) * k) for k in range(degree + 1)]
        total = _tensor_product(total, lift, degree)
    return [level.reshape(-1) for level in total[1:]]


@pytest.mark.parametrize("engine", ENGINE_NAMES)
@pytest.mark.parametrize("degree", [1, 2, 3, 4])
def test_seq2tens_scan_on_torch_and_jax_at_every_degree_and_lift_order(engine, degree):
    """Every method (compiled: torch CPU only), lift orders 1 (Seq2Tens), 2 and >= degree (the exponential),
    whole sequences and every prefix, against the product of dense lifts."""
    to, back = _library(engine)
    x = np.random.default_rng(degree).standard_normal((2, 4, 2))
    methods = ["sequential", "levelwise", "parallel"] + (["compiled"] if engine == "torch" and
                                                          s2t.runs_compiled(to(x)) else [])
    for order in sorted({1, 2, degree}):
        expected = [[_lift_product(path[:t + 1], degree, order) for t in range(x.shape[1])] for path in x]
        for method in methods:
            whole = s2t.scan(to(x), degree, order, method=method)
            prefixes = s2t.scan(to(x), degree, order, method=method, return_sequences=True)
            assert len(whole) == len(prefixes) == degree
            for m in range(degree):
                for b in range(len(x)):
                    np.testing.assert_allclose(back(whole[m])[b], expected[b][-1][m], rtol=1e-12, atol=1e-12,
                                               err_msg=f"{method} order {order} level {m + 1}")
                    np.testing.assert_allclose(back(prefixes[m])[b], [e[m] for e in expected[b]], rtol=1e-12,
                                               atol=1e-12, err_msg=f"{method} order {order} level {m + 1} prefixes")


def _functional_reference(x, V, degree, independent):
    """<v^1_m (x) ... (x) v^m_m, Phi_m(x)> = sum over i_1 < ... < i_m of prod_k <v^k_m, x_{i_k}> (Seq2Tens lift),
    by brute force over index tuples; V's slots as `low_rank` documents them."""
    batch, length, _ = x.shape
    out = np.zeros((batch, degree, V.shape[2]))
    for m in range(1, degree + 1):
        slots = [sum(degree - j + 1 for j in range(1, k)) + m - k if independent else k - 1 for k in range(1, m + 1)]
        z = np.einsum("blh,hkn->blkn", x, V[:, slots])                      # <v^k_m, x_t>
        for indices in combinations(range(length), m):
            out[:, m - 1] += np.prod([z[:, i, k] for k, i in enumerate(indices)], axis=0)
    return out


@pytest.mark.parametrize("engine", ENGINE_NAMES)
@pytest.mark.parametrize("degree", [1, 2, 3, 4])
@pytest.mark.parametrize("independent", [False, True])
def test_ls2t_functionals_on_torch_and_jax_at_every_degree(engine, degree, independent):
    to, back = _library(engine)
    rng = np.random.default_rng(10 * degree + independent)
    x = rng.standard_normal((2, 5, 3))
    V = rng.standard_normal((3, degree * (degree + 1) // 2 if independent else degree, 2))
    got = back(low_rank(to(x), to(V), degree, independent))
    np.testing.assert_allclose(got, _functional_reference(x, V, degree, independent), rtol=1e-12, atol=1e-12)
    prefixes = back(low_rank(to(x), to(V), degree, independent, return_sequences=True))
    for t in range(x.shape[1]):
        np.testing.assert_allclose(prefixes[:, t], _functional_reference(x[:, :t + 1], V, degree, independent),
                                   rtol=1e-12, atol=1e-12)
