"""Under torch.compile, a kernel's call on torch tensors is one operator of the graph (`kernels.products.
torch_operator`: fullgraph=True traces it; plans and modules: tests/interactions/test_torch_call.py), and so is a
functional entry point's (scans, signature, seq2tens, masked softmax, causal convolution:
`kernels.arrays.traced_entry`): the compiled function gives the eager values and gradients, for products of three
kinds of strategy, a model's module and each entry point."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, quaternions
from product_interactions.interactions.architectures import attention
from product_interactions.interactions.feature_map import seq2tens, signature

torch = pytest.importorskip("torch")


def _values_and_gradient(function, x, y):
    x = x.detach().requires_grad_()
    value = function(x, y)
    value.backward()
    return value.detach(), x.grad


@pytest.mark.parametrize("algebra, strategy", [(clebsch_gordan(2), "compiled"), (quaternions(), "dense"),
                                               (quaternions(), "codegen")], ids=["compiled", "dense", "codegen"])
def test_a_kernel_under_torch_compile_equals_the_eager_call(algebra, strategy):
    kernel = kernels.product(algebra, strategy=strategy)
    g = torch.Generator().manual_seed(0)
    x, y = (torch.randn(6, algebra.shape[0], dtype=torch.float64, generator=g) for _ in range(2))

    def loss(a, b):
        return kernel(a, b).sin().sum()
    compiled = torch.compile(loss)
    for got, expected in zip(_values_and_gradient(compiled, x, y), _values_and_gradient(loss, x, y)):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("algebra", [quaternions(), clebsch_gordan(2)], ids=["quaternions", "cg2"])
def test_a_kernel_traces_whole_with_fullgraph_and_its_gradients_of_both_operands_are_the_eager_ones(algebra, counting):
    kernel = kernels.product(algebra)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 3, algebra.dim, dtype=torch.float64, generator=g, requires_grad=True)
    y = torch.randn(3, algebra.dim, dtype=torch.float64, generator=g, requires_grad=True)    # broadcast

    def loss(a, b):
        return (kernel(a, b).cos() * 3).sum()
    graphs, backend = counting("eager")
    compiled = torch.compile(loss, fullgraph=True, backend=backend)
    value = compiled(x, y)
    found = torch.autograd.grad(value, (x, y))
    expected_value = loss(x, y)
    expected = torch.autograd.grad(expected_value, (x, y))
    torch.testing.assert_close(value, expected_value, rtol=1e-12, atol=1e-12)
    for got, want in zip(found, expected):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert len(graphs) == 1 and "product_interactions.product" in str(graphs[0].graph)


@pytest.mark.parametrize("fullgraph", [True, False])
def test_a_traced_call_refuses_bad_operands_with_the_eager_message(fullgraph):
    """Algebra axes of the wrong size are refused by the call itself when the graph runs (a ValueError); batch axes
    that do not broadcast are refused while tracing, where torch.compile wraps the error, which still carries the
    eager message, not torch's broadcasting one."""
    kernel = kernels.product(quaternions())
    compiled = torch.compile(lambda a, b: kernel(a, b) * 2, fullgraph=fullgraph, backend="eager", dynamic=True)
    x = torch.randn(8, 4, dtype=torch.float64)
    torch.testing.assert_close(compiled(x, x), kernel(x, x) * 2)
    with pytest.raises(ValueError, match=r"y: axis -1 has size 5, but quaternions needs 4 there"):
        compiled(x, torch.randn(8, 5, dtype=torch.float64))
    with pytest.raises(Exception, match=r"x, y: batch axes \(8,\) and \(\w+,\) do not broadcast"):
        compiled(x, torch.randn(3, 4, dtype=torch.float64))


def test_the_kernel_operator_passes_torch_s_operator_checks():
    from torch.library import opcheck
    from product_interactions.kernels.products import torch_operator
    kernel = kernels.product(clebsch_gordan(1))
    g = torch.Generator().manual_seed(3)
    x, y = (torch.randn(4, 4, dtype=torch.float64, generator=g, requires_grad=True) for _ in range(2))
    results = opcheck(torch_operator.define(), (x, y, kernel.key))
    assert set(results.values()) == {"SUCCESS"}, results


def test_a_model_module_under_torch_compile_equals_the_eager_module():
    module = attention(d_model=8, heads=2).to_torch(seed=0).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    compiled = torch.compile(module)
    torch.testing.assert_close(compiled(x), module(x), rtol=1e-12, atol=1e-12)
    compiled(x).pow(2).sum().backward()
    gradients = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    module(x).pow(2).sum().backward()
    for got, parameter in zip(gradients, module.parameters()):
        torch.testing.assert_close(got, parameter.grad, rtol=1e-10, atol=1e-12)


def _sequences(length=10, seed=2):
    return torch.randn(3, length, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


FUNCTIONS = {
    "linear_scan": lambda x: kernels.linear_scan(torch.sigmoid(x[0]), x[1]),
    "linear_scan from a state": lambda x: kernels.linear_scan(torch.sigmoid(x[0]), x[1], initial=x[2, 0]),
    "selective_scan": lambda x: kernels.selective_scan(x[:, :, :1], torch.sigmoid(x[:, :, 1:]),
                                                       -torch.ones(1, 2, dtype=x.dtype), x, x),
    "selective_scan with D, z, in chunks": lambda x: kernels.selective_scan(
        x[:, :, :1], torch.sigmoid(x[:, :, 1:]), -torch.ones(1, 2, dtype=x.dtype), x, x.cos(), D=x[0, 0, :1],
        z=x[:, :, 1:], method="chunked"),
    "causal_convolution": lambda x: kernels.causal_convolution(x, torch.linspace(1.0, 0.1, 2, dtype=x.dtype)),
    "softmax": lambda x: kernels.softmax(x, mask=x > -1.0),
    "softmax along the length": lambda x: kernels.softmax(x, 1),
    "signature": lambda x: signature(x, 3),
    "seq2tens": lambda x: seq2tens(x, 2)[-1],
    "seq2tens of every prefix": lambda x: torch.cat([level.flatten(2) for level in seq2tens(
        x, 3, return_sequences=True, lift="exp")[1:]], -1),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_functional_entry_point_traces_whole_and_a_new_length_reuses_its_graph(name, counting):
    """One operator of the graph under fullgraph=True, through aot_eager's compiled forward and backward: the eager
    values and gradients at four lengths, from two graphs (the first length's, then one that follows the length:
    `kernels.arrays.symbolic_shape`)."""
    torch._dynamo.reset()
    function = FUNCTIONS[name]
    graphs, backend = counting("aot_eager")
    compiled = torch.compile(function, fullgraph=True, backend=backend)
    for length in (10, 7, 12, 9):
        x = _sequences(length, seed=length).requires_grad_()
        eager = function(x)
        (eager_gradient,) = torch.autograd.grad((eager * eager.detach().sin()).sum(), x)
        got = compiled(x)
        (gradient,) = torch.autograd.grad((got * got.detach().sin()).sum(), x)
        torch.testing.assert_close(got, eager, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(gradient, eager_gradient, rtol=1e-12, atol=1e-12)
    assert len(graphs) == 2 and all("product_interactions.call" in str(g.graph) for g in graphs)


def test_an_entry_is_one_per_call_however_its_arguments_are_given_and_apart_per_function_and_constant_type():
    """Positional, keyword or default, one entry; a function decorated twice under one name (a factory, a notebook
    cell run again) and the constants True, 1 and 1.0 are told apart; a duplicate argument is refused as eager
    refuses it."""
    from product_interactions.kernels.arrays import traced_as_operator, traced_entry
    torch._dynamo.reset()
    a, b = torch.rand(5, 2, dtype=torch.float64), torch.randn(5, 2, dtype=torch.float64)
    made = []
    for call in (lambda a, b: kernels.linear_scan(a, b), lambda a, b: kernels.linear_scan(b=b, a=a),
                 lambda a, b: kernels.linear_scan(a, b, None, "auto")):
        torch.testing.assert_close(torch.compile(call, fullgraph=True, backend="eager")(a, b),
                                   kernels.linear_scan(a, b), rtol=1e-12, atol=1e-12)
        made.append(len(traced_entry._ENTRIES))
    assert made[0] == made[1] == made[2]

    def scaling(k):
        @traced_as_operator
        def scale(x):
            return x * k
        return scale
    double, triple = scaling(2), scaling(3)
    for function, factor in ((double, 2), (triple, 3)):
        got = torch.compile(lambda x: function(x), fullgraph=True, backend="eager")(b)
        torch.testing.assert_close(got, b * factor, rtol=0, atol=0)
    x = _sequences()
    with pytest.raises(Exception, match="depth: expected a positive int, got bool True"):
        torch.compile(lambda x: signature(x, True), fullgraph=True, backend="eager")(x)
    torch.testing.assert_close(torch.compile(lambda x: signature(x, 1), fullgraph=True, backend="eager")(x),
                               signature(x, 1), rtol=1e-12, atol=1e-12)
    with pytest.raises(Exception, match="depth: expected a positive int, got float 1.0"):
        torch.compile(lambda x: signature(x, 1.0), fullgraph=True, backend="eager")(x)
    with pytest.raises(TypeError, match="multiple values for argument 'axis'"):
        torch.compile(lambda x: kernels.softmax(x, -1, axis=0), backend="eager")(x)


def test_an_int_argument_that_changes_between_calls_is_fixed_per_call(counting):
    """torch.compile traces an int argument that changed as a symbol; the entry fixes it at its value (a guard), so
    fullgraph=True takes every depth and axis, one graph each, and a value seen before reuses its graph (it had
    failed: "assume_constant_result argument conversion failed")."""
    torch._dynamo.reset()
    graphs, backend = counting("eager")
    function = lambda x, depth, axis: signature(x, depth).sum(-1) + kernels.softmax(x, axis)[:, 0, 0]  # noqa: E731
    compiled = torch.compile(function, fullgraph=True, backend=backend)
    x = _sequences()
    for depth, axis in ((2, -1), (3, 1), (1, 0), (3, 1), (4, -1)):
        torch.testing.assert_close(compiled(x, depth, axis), function(x, depth, axis), rtol=1e-12, atol=1e-12)
    assert len(graphs) == 4


def test_signature_with_a_torch_mask_traces_whole():
    """The mask is an operand (a bool tensor); the fake call, which has no values to read, takes it as full."""
    x = _sequences().requires_grad_()
    mask = torch.ones(3, 10, dtype=torch.bool)
    mask[0, 6:] = False
    function = lambda x, mask: signature(x, 3, mask=mask)  # noqa: E731
    got = torch.compile(function, fullgraph=True, backend="aot_eager")(x, mask)
    want = function(x, mask)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(torch.autograd.grad(got.sin().sum(), x)[0], torch.autograd.grad(want.sin().sum(), x)[0],
                               rtol=1e-12, atol=1e-12)


def test_inputs_of_one_length_are_checked_equal_and_one_graph_follows_them(counting):
    """u, delta, B and C each get a symbol for their length: the scan refuses any of them moved alone, and takes
    them moved together, so they are checked equal (a guard) and followed; unequal lengths are refused as eager
    refuses them."""
    torch._dynamo.reset()
    graphs, backend = counting("aot_eager")
    scan = torch.compile(lambda u, delta, A, B, C: kernels.selective_scan(u, delta, A, B, C), fullgraph=True,
                         backend=backend)
    A = -torch.linspace(0.5, 1.5, 6, dtype=torch.float64).reshape(3, 2)
    for length in (16, 24, 20):
        g = torch.Generator().manual_seed(length)
        u, B, C = (torch.randn(2, length, n, dtype=torch.float64, generator=g, requires_grad=True) for n in (3, 2, 2))
        delta = (torch.rand(2, length, 3, dtype=torch.float64, generator=g) + 0.1).requires_grad_()
        got, want = scan(u, delta, A, B, C), kernels.selective_scan(u, delta, A, B, C)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        for a, b in zip(torch.autograd.grad(got.sum(), [u, delta, B, C]),
                        torch.autograd.grad(want.sum(), [u, delta, B, C])):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert len(graphs) == 2
    with pytest.raises(Exception, match=r"B: expected shape \(2, 20, 2\)"):
        scan(u, delta, A, B[:, 1:], C)


def test_seq2tens_under_torch_compile_cuts_its_levels_from_one_operator_and_a_numpy_mask_breaks_the_graph():
    x = _sequences().requires_grad_()
    mask = torch.ones(3, 10, dtype=torch.bool)
    mask[1, 7:] = False
    for given, fullgraph in ((mask, True), (mask.numpy(), False)):       # numpy: no operand, no constant
        function = lambda x: seq2tens(x, 3, mask=given)  # noqa: E731
        eager = function(x)
        compiled = torch.compile(function, fullgraph=fullgraph, backend="aot_eager")(x)
        assert [level.shape for level in compiled] == [level.shape for level in eager] == \
            [(3,), (3, 2), (3, 2, 2), (3, 2, 2, 2)]
        for got, want in zip(compiled, eager):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        gradients = [torch.autograd.grad(sum(level.sin().sum() for level in levels[1:]), x)[0]
                     for levels in (compiled, eager)]
        torch.testing.assert_close(*gradients, rtol=1e-12, atol=1e-12)


def test_an_entry_is_made_once_per_function_and_constants_and_other_arguments_run_at_a_graph_break(monkeypatch):
    from product_interactions.kernels.arrays import traced_entry
    torch._dynamo.reset()
    monkeypatch.setattr(traced_entry, "_ENTRIES", {})    # none from earlier tests (a module's scans make some)
    x = _sequences()
    a, b = torch.sigmoid(x[0]), x[1]
    made = len(traced_entry._ENTRIES)
    for method in ("sequential", "parallel", "sequential"):
        scan = torch.compile(lambda a, b: kernels.linear_scan(a, b, method=method), fullgraph=True, backend="eager")
        torch.testing.assert_close(scan(a, b), kernels.linear_scan(a, b), rtol=1e-12, atol=1e-12)
    assert len(traced_entry._ENTRIES) == made + 2
    numpy_gates = a.numpy()                              # not a constant of an entry: the call runs at a graph break
    with pytest.raises(Exception, match="(?i)skipped|graph break"):
        torch.compile(lambda b: kernels.linear_scan(numpy_gates, b), fullgraph=True, backend="eager")(b)
    mixed = torch.compile(lambda b: kernels.linear_scan(numpy_gates, b).sin(), backend="eager")
    torch.testing.assert_close(mixed(b), kernels.linear_scan(a, b).sin(), rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(traced_entry, "ENTRY_LIMIT", len(traced_entry._ENTRIES))
    torch._dynamo.reset()
    beyond = torch.compile(lambda a, b: kernels.linear_scan(a, b, method="chunked").sin(), backend="eager")
    torch.testing.assert_close(beyond(a, b), kernels.linear_scan(a, b).sin(), rtol=1e-12, atol=1e-12)
    assert len(traced_entry._ENTRIES) == made + 2


def test_a_kernel_s_key_is_its_content_so_a_graph_kept_on_disk_finds_an_equal_kernel():
    from product_interactions.kernels.products.keys import identity, kernel_for
    first, second = kernels.product(clebsch_gordan(2)), kernels.product(clebsch_gordan(2))
    assert first.key == second.key == identity(first)
    assert kernels.product(clebsch_gordan(2), dtype="float32").key != first.key
    assert kernels.product(clebsch_gordan(2), strategy="dense").key != first.key
    named = kernels.product(clebsch_gordan(2), strategy=first.strategies)     # auto's choice, but named: fixed
    assert named.strategies == first.strategies and named.key != first.key
    assert kernel_for(f"{first.key}^T1") is kernel_for(first.key).transposed(1)
    with pytest.raises(KeyError, match="no kernel 'nowhere' lives in this process"):
        kernel_for("nowhere")


def _bound(x, mask=None, method="auto", depth=2):
    """A signature to bind against: a tensor first, then options with defaults."""


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_traced_arguments_bind_a_call_as_python_does(data):
    """`traced_arguments` (what a traced entry point or module call becomes) against Python's own binding: the
    tensors and the constants (defaults filled in) are the bound arguments; a call Python refuses (too many, unknown
    or repeated arguments), one binding no tensor or binding another object (a list) is left to run as given."""
    import inspect
    from product_interactions.kernels.arrays import traced_arguments
    tensor = torch.ones(2)
    names, signature = ("x", "mask", "method", "depth"), inspect.signature(_bound)
    defaults = {name: p.default for name, p in signature.parameters.items() if p.default is not p.empty}
    values = st.sampled_from([tensor, None, "scan", 3, 2.5, True, [1]])
    arguments = tuple(data.draw(st.lists(values, max_size=5)))
    options = data.draw(st.dictionaries(st.sampled_from([*names, "other"]), values, max_size=3))
    split = traced_arguments(names, defaults, arguments, options)
    try:
        bound = signature.bind_partial(*arguments, **options)
    except TypeError:
        assert split is None
        return
    bound.apply_defaults()
    given = bound.arguments
    if not any(value is tensor for value in given.values()) or any(type(value) is list for value in given.values()):
        assert split is None
        return
    tensors, operands, constants = split
    assert tensors == tuple(name for name in names if given.get(name) is tensor)
    assert all(operand is tensor for operand in operands) and len(operands) == len(tensors)
    assert constants == tuple((name, given[name]) for name in names if name in given and name not in tensors)
    assert all(type(value) is type(given[name]) for name, value in constants)
