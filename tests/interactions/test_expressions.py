"""The expression language: symbolic == numeric, orders == polynomial degrees, structural operators, bad input."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest
import sympy

from product_interactions.algebra import (clifford, complex_numbers, diagonal, position, quaternions, tensor_algebra,
                                          tensor_product, translation)
from product_interactions.interactions import (Add, CausalReduce, Flip, Lag, Linear, Mul, NeighbourhoodReduce,
                                               Parameter, Pointwise, RankProjection, Reduce, Scale, ScalarProjection,
                                               Scan, Signal, formula, masks, multiplication_operator, order)
from product_interactions.interactions.orders import polynomial_degree

N, D = 3, 2
RELATION = tensor_product(position(N), position(N), quaternions())


def relation_signal():
    return Signal("x", RELATION, units=[1])


def cases():
    """(name, expression, signal, expected order)."""
    X = relation_signal()
    quadratic = X * Flip(X)
    score = ScalarProjection(quadratic)
    attention = CausalReduce(Pointwise("softmax", score, factor=1, mask=masks.causal(N)) * Flip(X))
    C = Signal("z", tensor_product(translation(4), complex_numbers()))
    K = Parameter("k", C.algebra, support={0: (0, 1)})
    T = Signal("t", tensor_algebra(2, 2))
    G = Signal("g", tensor_product(position(2), diagonal(3)))
    W = Parameter("W", (3, 3))
    P3 = Signal("p", clifford(1, 0, 1))
    S = Signal("s", tensor_product(position(3), complex_numbers()))
    rotation = Parameter("r", complex_numbers())
    ssm = Scan(lambda h, x_t: rotation * h + x_t * x_t, S, state=complex_numbers(),
               initial=Parameter("h0", complex_numbers()))
    neighbours = Signal("mask", tensor_product(position(N), position(N)))        # one 0/1 mask per batch entry
    L = Signal("l", tensor_product(diagonal(2), position(4)))
    return [
        ("signal", G, G, 1),
        ("parameter times signal", Parameter("c", G.algebra) * G, G, 1),
        ("linear", Linear(W, G), G, 1),
        ("lag along the second factor", Lag(L, 2, factor=1) * L + Lag(L, 1, factor=1), L, 2),
        ("convolution", K * C, C, 1),
        ("data-dependent mask", Pointwise("softmax", score, factor=1, mask=neighbours), X, 2),
        ("quadratic", quadratic, X, 2),
        ("score", score, X, 2),
        ("rank projection", RankProjection(quadratic, 2), X, 2),
        ("attention", attention, X, 3),
        ("plain reduce", Reduce(quadratic), X, 2),
        ("neighbourhood", NeighbourhoodReduce(quadratic, radius=1), X, 2),
        ("tensor algebra cube", T * T * T, T, 3),
        ("gating", Pointwise("sigmoid", Linear(W, G)) * G, G, 2),
        ("tanh of square", Pointwise("tanh", G * G), G, 2),
        ("scaled flip product", Scale(Flip(X) * X, sympy.Rational(1, 3)), X, 2),
        ("operator", multiplication_operator(Parameter("q", P3.algebra), L2=lambda e: e * e)(P3), P3, 2),
        ("add", G * G + Pointwise("exp", G), G, 2),
        ("scan", ssm, S, 2),
        ("scan last state", Scan(lambda h, x_t: rotation * h + x_t, S, state=complex_numbers(),
                                 return_sequences=False), S, 1),
    ]


def _numeric_inputs(expr, rng):
    signals, params = {}, {}
    for node in expr.walk():
        if isinstance(node, Signal) and node.name == "mask":
            signals[node.name] = np.maximum(rng.random((2,) + node.shape) < 0.5, np.eye(node.shape[0])) * 1.0
        elif isinstance(node, Signal):
            signals[node.name] = rng.standard_normal((2,) + node.shape)
        elif isinstance(node, Parameter):
            params[node.name] = rng.standard_normal(node.shape)
    return signals, params


def _substitute(value, expr, signals, params, batch):
    """The formula's value at the given arrays (one batch entry)."""
    mapping = {}
    for node in expr.walk():
        if isinstance(node, (Signal, Parameter)):
            array = signals[node.name][batch] if isinstance(node, Signal) else params[node.name]
            for index in np.ndindex(*array.shape):
                mapping[sympy.Symbol(f"{node.name}_{{{','.join(map(str, index))}}}", real=True)] = array[index]
    return np.array([float(sympy.N(c.subs(mapping))) if c != 0 else 0.0 for c in value.reshape(-1)]).reshape(
        value.shape)


def _full(expr, array):
    """Expand a compiled output to the algebra's full shape (repeat along constant factors)."""
    for axis in sorted(expr.units):
        array = np.repeat(np.expand_dims(array, axis + 1), expr.factors[axis].dim, axis=axis + 1)
    return array


@pytest.mark.parametrize("name, expr, signal, expected", cases(), ids=[c[0] for c in cases()])
def test_symbolic_equals_numeric(name, expr, signal, expected):
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    signals, params = _numeric_inputs(expr, rng)
    numeric = _full(expr, expr.compile()(signals, params))
    symbolic = formula(expr)
    for batch in range(2):
        np.testing.assert_allclose(numeric[batch], _substitute(symbolic, expr, signals, params, batch),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, expr, signal, expected", cases(), ids=[c[0] for c in cases()])
def test_order_matches_the_formula(name, expr, signal, expected):
    assert order(expr, signal) == expected
    symbols = {s for c in formula(expr).reshape(-1) if c != 0 for s in c.free_symbols
               if s.name.startswith(signal.name + "_")}
    assert max(polynomial_degree(c, symbols) for c in formula(expr).reshape(-1)) == expected


def test_flip_and_reduce_formulas():
    X = relation_signal()
    flipped = formula(Flip(X))
    x = lambda k, a: sympy.Symbol(f"x_{{{k},{a}}}", real=True)  # noqa: E731
    assert flipped[0, 2, 1] == x(2, 1) and flipped[1, 2, 1] == x(2, 1)
    causal = formula(CausalReduce(X * Flip(X)))
    # component e_0 of sum_{l <= 1} x^(1) x^(l) in the quaternions, stored on every key slot
    expected = sum(x(1, 0) * x(l, 0) - sum(x(1, a) * x(l, a) for a in (1, 2, 3)) for l in (0, 1))
    assert sympy.expand(causal[1, 2, 0] - expected) == 0


@pytest.mark.parametrize("lag", [1, 3, 4, 6])
def test_a_lag_shifts_its_factor_by_hand_and_leaves_the_others(lag):
    """T_k x at (c, t) is x at (c, t - k), zero for t < k (all zero once k reaches the length), on the second
    factor only; the order is read off the expression (2 for T_k x * x, even where the lag empties it)."""
    X = Signal("x", tensor_product(diagonal(2), position(4)))
    x = lambda c, t: sympy.Symbol(f"x_{{{c},{t}}}", real=True)  # noqa: E731
    expected = np.array([[x(c, t - lag) if t >= lag else 0 for t in range(4)] for c in range(2)], dtype=object)
    assert (formula(Lag(X, lag, factor=1)) == expected).all()
    assert order(Lag(X, lag, factor=1) * X, X) == 2
    with pytest.raises(ValueError, match="lag: expected a positive int, got 0"):
        Lag(X, 0)


def test_attention_score_formula_is_a_dot_product():
    from product_interactions.interactions.architectures import attention
    model = attention(d_model=2, heads=1, causal=False, length=2)
    score = model.stages(2)["scores"]
    value = formula(score)[0, 1, 0, 0]
    x = lambda k, a: sympy.Symbol(f"x_{{{k},{a}}}", real=True)  # noqa: E731
    W = lambda name, i, a: sympy.Symbol(f"{name}_{{{i},{a}}}", real=True)  # noqa: E731
    q = [sum(W("W_Q", i, a) * x(0, a) for a in range(2)) for i in range(2)]
    k = [sum(W("W_K", i, a) * x(1, a) for a in range(2)) for i in range(2)]
    assert sympy.expand(value - (q[0] * k[0] + q[1] * k[1]) / sympy.sqrt(2)) == 0


def test_gradients_flow_through_compiled_expressions():
    X = relation_signal()
    expr = CausalReduce(Pointwise("softmax", ScalarProjection(X * Flip(X)), factor=1, mask=masks.causal(N))
                        * Flip(X))
    compiled = expr.compile()
    x = np.random.default_rng(3).standard_normal((2, N, 4))
    loss = lambda x: anp.sum(anp.sin(compiled(x)))  # noqa: E731
    gradient = autograd.grad(loss)(x)
    direction = np.random.default_rng(4).standard_normal(x.shape)
    eps = 1e-6
    numeric = (loss(x + eps * direction) - loss(x - eps * direction)) / (2 * eps)
    assert np.sum(gradient * direction) == pytest.approx(numeric, rel=1e-6)


def test_scan_gradient_and_bad_steps():
    S = Signal("s", tensor_product(position(4), complex_numbers()))
    r = Parameter("r", complex_numbers())
    compiled = Scan(lambda h, x_t: r * h + x_t, S, state=complex_numbers()).compile()
    x = np.random.default_rng(0).standard_normal((2, 4, 2))
    params = {"r": np.array([0.6, 0.3])}
    # h_t = r h_{t-1} + x_t with complex numbers, checked against Python's complex arithmetic
    h, expected = 0, []
    for t in range(4):
        h = complex(*params["r"]) * h + complex(*x[1, t])
        expected.append([h.real, h.imag])
    np.testing.assert_allclose(compiled(x, params)[1], expected, rtol=1e-13)
    loss = lambda p: anp.sum(compiled(x, {"r": p}) ** 2)  # noqa: E731
    direction, eps = np.array([0.3, -0.7]), 1e-6
    numeric = (loss(params["r"] + eps * direction) - loss(params["r"] - eps * direction)) / (2 * eps)
    assert np.dot(autograd.grad(loss)(params["r"]), direction) == pytest.approx(numeric, rel=1e-6)
    with pytest.raises(ValueError, match="step: expected an expression in complex_numbers"):
        Scan(lambda h, x_t: 3, S, state=complex_numbers())
    with pytest.raises(ValueError, match="K, X: cannot add"):
        Add(S, Signal("u", complex_numbers()))


def test_fused_score_never_builds_the_full_product():
    from product_interactions.kernels.plans.plan import Constant, Contract, Expand, Register
    X = relation_signal()
    plan = ScalarProjection(X * Flip(X)).compile(strategy="dense")
    assert [type(step) for step in plan.steps] == [Contract, Expand]        # one contraction, then the output layout
    contraction = next(step for step in plan.steps if isinstance(step, Contract))
    kinds = [type(source) for source in contraction.operands]
    constants = [source.value for source in contraction.operands if isinstance(source, Constant)]
    assert kinds.count(Register) == 2 and len(constants) == 1 and constants[0].shape == (4, 4, 1)  # x, x, e_0 of lam


# ---------------------------------------------------------------------- bad input
def test_bad_expressions():
    X = relation_signal()
    Y = Signal("y", tensor_product(position(N), position(N), complex_numbers()), units=[1])
    with pytest.raises(ValueError, match="K, X: cannot multiply an element of .*quaternions by one of"):
        X * Y
    with pytest.raises(TypeError, match="K: expected an expression"):
        Mul(3, X)
    with pytest.raises(ValueError, match=r"rank: expected an int in 1..4 \(the factor's dimension\), got 5"):
        RankProjection(X, 5)
    with pytest.raises(ValueError, match="X: Flip moves factor 0 into factor 1, so X must vary along 0"):
        Flip(X * Flip(X))
    with pytest.raises(ValueError, match="factor: reduction needs a position-like factor"):
        Reduce(X, factor=2)
    with pytest.raises(ValueError, match="function: expected one of"):
        Pointwise("gelu", X)
    with pytest.raises(ValueError, match="factor: softmax needs the factor"):
        Pointwise("softmax", X)
    with pytest.raises(ValueError, match=r"mask: expected shape \(3, 3\)"):
        Reduce(X * Flip(X), mask=np.ones((2, 3)))
    with pytest.raises(ValueError, match="units: factor 2 .*quaternions.* has no unit g_0"):
        Signal("z", RELATION, units=[2])
    with pytest.raises(ValueError, match=r"W: expected shape \(4, 4\)"):
        Linear(Parameter("W", (3, 4)), X)
    with pytest.raises(ValueError, match=r"support\[0\]: expected distinct component indices in 0..3"):
        Parameter("k", translation(4), support={0: (0, 7)})


def test_bad_compiled_inputs():
    X = relation_signal()
    K = Parameter("k", RELATION, units=[1])
    compiled = (K * X).compile()
    good = {"k": np.ones((N, 4))}
    with pytest.raises(ValueError, match=r"inputs\['x'\]: expected shape \(\.\.\., 3, 4\).*got \(2, 3, 5\)"):
        compiled(np.ones((2, N, 5)), good)
    with pytest.raises(ValueError, match=r"parameters: missing \['k'\]"):
        compiled(np.ones((2, N, 4)), {})
    with pytest.raises(ValueError, match=r"parameters\['k'\]: expected shape \(3, 4\), got \(4, 3\)"):
        compiled(np.ones((2, N, 4)), {"k": np.ones((4, 3))})
    with pytest.raises(TypeError, match=r"inputs\['x'\]: expected a real floating-point array, got dtype int64"):
        compiled(np.ones((2, N, 4), dtype=np.int64), good)
    with pytest.raises(TypeError, match="parameters: expected a dict"):
        compiled(np.ones((2, N, 4)), [1])


@pytest.mark.parametrize("name, expr, signal, expected", cases(), ids=[c[0] for c in cases()])
def test_every_product_strategy_gives_the_same_numbers(name, expr, signal, expected):
    rng = np.random.default_rng(11)
    signals, params = _numeric_inputs(expr, rng)
    blocks = expr.compile(strategy="dense")(signals, params)
    for strategy in ("auto", "gather", "codegen", "fft", "graded"):    # each where it applies, auto elsewhere
        np.testing.assert_allclose(expr.compile(strategy=strategy)(signals, params), blocks, rtol=1e-12,
                                   atol=1e-12, err_msg=strategy)


def test_long_convolution_is_gathered_not_densified():
    from product_interactions.interactions.architectures import convolution
    from product_interactions.kernels.plans.plan import Constant, Gather
    model = convolution(channels_in=1, channels_out=1, size=3, cyclic=False)
    params = model.init(seed=0)
    x = np.random.default_rng(1).standard_normal((2, 512, 1))
    plan = model.build((512,))[0].compile()
    assert any(isinstance(step, Gather) for step in plan.steps)
    constants = [s.value for step in plan.steps for s in step.sources() if isinstance(s, Constant)]
    assert max((c.size for c in constants), default=0) < 512 * 512          # never the (3, 512, 512) block
    expected = [np.convolve(row, params["K"][:, 0, 0])[:512] for row in x[..., 0]]
    np.testing.assert_allclose(model.apply(params, x)[..., 0], expected, rtol=1e-12, atol=1e-12)


def test_latex_formulas_show_each_component_once_with_braced_parameter_names():
    from product_interactions.interactions.architectures import attention
    model = attention(d_model=1, heads=1, length=2)
    text = formula(model.expr, latex=True)
    assert text.count("&=") == 2 and "z_{0,0} &=" in text and "z_{1,0} &=" in text       # not once per key
    assert "{W_Q}_{0,0}" in text and "W_Q_{" not in text


def _recurrences():
    from product_interactions.algebra import diagonal
    X = Signal("x", tensor_product(position(3), diagonal(1)))
    a = Parameter("a", diagonal(1))
    return X, [  # (name, scan, per-step order, total degree in the sequence)
        ("h^2 + x", Scan(lambda h, x_t: h * h + x_t, X, state=diagonal(1)), 1, 4),
        ("a h + x^2", Scan(lambda h, x_t: a * h + x_t * x_t, X, state=diagonal(1)), 2, 2),
        ("h x + x", Scan(lambda h, x_t: h * x_t + x_t, X, state=diagonal(1)), 1, 3),
        ("h x + x, last state", Scan(lambda h, x_t: h * x_t + x_t, X, state=diagonal(1), return_sequences=False),
         1, 3),
    ]


@pytest.mark.parametrize("case", range(4))
def test_order_per_step_or_in_the_whole_sequence_and_the_formula_agree(case):
    X, recurrences = _recurrences()
    _, scan, per_step, total = recurrences[case]
    assert order(scan, X) == per_step and order(scan, X, per_step=False) == total
    values = formula(scan).reshape(-1)
    symbols = {s for c in values if c != 0 for s in c.free_symbols if s.name.startswith("x_")}
    assert max(polynomial_degree(c, symbols) for c in values) == total
    with pytest.raises(TypeError, match="per_step: expected a bool"):
        order(scan, X, per_step="no")


def test_a_symbolic_softmax_is_shorter_and_rewrites_to_the_expanded_formula():
    from product_interactions.interactions.architectures import attention
    from product_interactions.interactions.pointwise import softmax
    model = attention(d_model=2, heads=1, length=2)
    expanded, kept = model.formula(), model.formula(softmax="symbolic")
    assert len(str(kept)) < len(str(expanded)) and any(c.has(softmax) for c in kept.ravel() if c != 0)
    rewritten = [sympy.sympify(c).rewrite(sympy.exp) for c in kept.ravel()]
    rng = np.random.default_rng(4)
    values = {s: float(rng.standard_normal()) for c in expanded.ravel() if c != 0 for s in c.free_symbols}
    for a, b in zip(rewritten, expanded.ravel()):                  # equal at random points
        assert abs(float(sympy.N(sympy.sympify(a).subs(values))) - float(sympy.N(sympy.sympify(b).subs(values)))) < 1e-9
    with pytest.raises(ValueError, match="softmax: expected one of 'expand', 'symbolic'"):
        model.formula(softmax="compact")


@pytest.mark.parametrize("bad", [["a", "b", "c"], [[1.0, 2.0], [3.0]], [object()] * 3])
def test_a_compiled_expression_called_on_text_or_ragged_lists_names_its_input(bad):
    """Issue 36: a compiled expression called on strings raised numpy's conversion error."""
    from product_interactions.algebra import diagonal
    from product_interactions.interactions import Signal
    X = Signal("x", diagonal(3))
    plan = (X * X).compile()
    with pytest.raises(TypeError, match=r"^inputs\['x'\]: expected real numbers \(an array or a nested list"):
        plan(bad)


@pytest.mark.parametrize("mask", [masks.Mask.band(1), masks.Mask.fixed([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 1],
                                                                          [0, 0, 1, 0]])],
                         ids=["band", "holes"])
def test_a_symbolic_softmax_under_a_mask_whose_kept_keys_are_not_a_prefix(mask):
    """Issue 39: with a band mask (or one with holes) the kept keys of a query start after 0 or skip some; the
    weight of key l is exp(s_ql) / sum over the kept l' of exp(s_ql'), 0 where the mask drops l (written by hand
    here), in both the symbolic and the expanded formula."""
    from product_interactions.interactions.pointwise import softmax
    n = 4
    S = Signal("s", tensor_product(position(n), position(n)))
    s = formula(S)                                                       # the symbols s_{q,l}
    kept = mask.array(n, n)
    P = Pointwise("softmax", S, factor=1, mask=mask)
    symbolic, expanded = formula(P, softmax="symbolic"), formula(P)
    for q in range(n):
        keys = [l for l in range(n) if kept[q, l]]
        for l in range(n):
            expected = sympy.exp(s[q, l]) / sum(sympy.exp(s[q, m]) for m in keys) if l in keys else 0
            assert sympy.simplify(symbolic[q, l].rewrite(sympy.exp) - expected) == 0, (q, l)
            assert sympy.simplify(expanded[q, l] - expected) == 0, (q, l)
            if l in keys:
                assert symbolic[q, l].func is softmax or len(keys) == 1
