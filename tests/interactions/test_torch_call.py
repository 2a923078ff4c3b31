"""Every architecture's torch module and a compiled expression under ``torch.compile(fullgraph=True)`` (one
operator of the graph, `kernels.arrays.torch_call`): the eager values and gradients for the parameters and the
inputs, a new length's graph following every length, torch's operator checks, copies, and the registry's weak hold."""
from __future__ import annotations

import gc

import numpy as np
import pytest
from module_cases import MODELS, SEQUENCE

from product_interactions import kernels
from product_interactions.kernels.arrays import torch_call
from product_interactions.interactions.architectures import attention, deep_ls2t, gating, ls2t, mamba, ssm, tfn

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def fresh_compiler():
    """Each test compiles afresh: the modules share one forward, whose compiled forms torch caps (recompile_limit)."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def values_and_gradients(function, module, inputs, weights):
    """The function's value at `inputs`, and its gradients for the module's parameters and the last input."""
    inputs = [x.detach().requires_grad_(n == len(inputs) - 1) for n, x in enumerate(inputs)]
    value = (function(*inputs) * weights).sum()
    return [value, *torch.autograd.grad(value, [*module.parameters(), inputs[-1]])]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("model, arrays", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_a_module_traces_whole_with_fullgraph_and_equals_the_eager_module(model, arrays, backend):
    """aot_eager runs torch's ahead-of-time autograd (a compiled forward and backward) as Inductor does: its first
    run checks custom operators inside a dispatch mode (the backward records the call again), later runs backpropagate
    through the forward's recorded call."""
    module = model.to_torch(seed=1)
    inputs = [torch.tensor(x) for x in arrays]
    weights = torch.randn(module(*inputs).shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    compiled = torch.compile(module, fullgraph=True, backend=backend)
    expected = values_and_gradients(module, module, inputs, weights)
    for run in range(2):
        for got, want in zip(values_and_gradients(compiled, module, inputs, weights), expected):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def counted(module):
    """`module` whose calls of the library (`flat_call`) on real tensors are counted in the returned list."""
    calls, library = [], module.flat_call

    def flat_call(operands):
        calls.extend(["real"] if type(operands[-1]) in (torch.Tensor, torch.nn.Parameter) else [])
        return library(operands)
    module.flat_call = flat_call
    return calls


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_traced_training_step_runs_the_library_once_and_keeps_nothing_after_it(backend):
    """The backward runs through the forward's recorded call, not a second forward (it had: 1.5x eager's time
    on the CPU); the recorded call is dropped with its step, and inference records nothing."""
    module = mamba(d_model=4, d_state=2).to_torch(seed=0)
    calls, kept = counted(module), len(torch_call.RECORDED)
    x = torch.tensor(SEQUENCE)
    compiled = torch.compile(module, fullgraph=True, backend=backend)
    compiled(x).sum().backward()                         # traced; aot_eager's first run checks in a dispatch mode
    for step in range(3):
        calls.clear()
        module.zero_grad()
        value = (compiled(x) ** 2).sum()
        assert len(torch_call.RECORDED) == kept + 1
        value.backward()
        assert calls == ["real"] and len(torch_call.RECORDED) == kept
        expected = dict(module.named_parameters())
        gradients = torch.autograd.grad((module(x) ** 2).sum(), list(expected.values()))
        for (name, parameter), gradient in zip(expected.items(), gradients):
            torch.testing.assert_close(parameter.grad, gradient, rtol=1e-12, atol=1e-12, msg=name)
    output = compiled(x)
    assert len(torch_call.RECORDED) == kept + 1
    del output
    gc.collect()
    assert len(torch_call.RECORDED) == kept
    with torch.no_grad():
        compiled(x)
    assert len(torch_call.RECORDED) == kept


def test_a_second_backward_and_a_forward_in_a_dispatch_mode_record_the_call_again():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    module = attention(d_model=4, heads=2).to_torch(seed=0)
    calls = counted(module)
    compiled = torch.compile(module, fullgraph=True, backend="eager")
    x = torch.tensor(SEQUENCE)
    weights = list(module.parameters())
    expected = torch.autograd.grad(module(x).sin().sum(), weights)
    compiled(x)
    calls.clear()
    value = compiled(x).sin().sum()
    for _ in range(2):                                   # the second backward records the call again
        for got, want in zip(torch.autograd.grad(value, weights, retain_graph=True), expected):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert len(calls) == 2
    calls.clear()
    with Passing():                                      # the body runs with autograd and views untracked
        value = torch_call.traced(module.key, [*weights, x]).sin().sum()
    for got, want in zip(torch.autograd.grad(value, weights), expected):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert len(calls) == 2


def _resized(arrays, length, batch=2):
    """Inputs like `arrays` with `length` points (and `batch` rows)."""
    rng = np.random.default_rng(length + batch)
    return [torch.tensor(rng.standard_normal((batch, length) + a.shape[2:])) for a in arrays]


@pytest.mark.parametrize("model, arrays", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_a_module_traces_once_more_for_a_new_length_and_that_graph_follows_every_length(model, arrays, counting):
    """torch.compile traces a size that changed as a symbol; the operator's result follows it
    (`kernels.arrays.symbolic_shape`), so lengths after the second reuse the second graph (each length had traced
    anew, and fullgraph=True failed at torch's limit of 8 graphs).  The values and gradients stay eager's."""
    module = model.to_torch(seed=1)
    graphs, backend = counting("eager")
    compiled = torch.compile(module, fullgraph=True, backend=backend)
    for length in (6, 9, 4, 11):
        inputs = _resized(arrays, length)
        weights = torch.randn(module(*inputs).shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        expected = values_and_gradients(module, module, inputs, weights)
        for got, want in zip(values_and_gradients(compiled, module, inputs, weights), expected):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert len(graphs) == 2


def test_with_dynamic_sizes_a_module_specialises_only_what_it_refuses_to_move(counting):
    """dynamic=True traces every size as a symbol: the feature size, which the model takes at one value only, is
    specialised; the batch and the length are followed, and the points of a cloud and of its features are checked
    equal.  A cloud whose two point counts differ is refused as eager refuses it."""
    module = tfn(lmax=1, channels_in=2, channels_out=2).to_torch(seed=0)
    graphs, backend = counting("aot_eager")
    compiled = torch.compile(module, fullgraph=True, backend=backend, dynamic=True)
    for batch, points in ((5, 8), (6, 10), (7, 9)):      # no size equal to another (torch gives equal sizes one symbol)
        inputs = _resized([np.zeros((1, 1, 3)), np.zeros((1, 1, 4, 2))], points, batch)
        weights = torch.randn(module(*inputs).shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
        expected = values_and_gradients(module, module, inputs, weights)
        for got, want in zip(values_and_gradients(compiled, module, inputs, weights), expected):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert len(graphs) == 1
    points, features = _resized([np.zeros((1, 1, 3)), np.zeros((1, 1, 4, 2))], 5, 3)
    refusal = r"features: expected shape \(batch, 5, 4, 2\)"
    with pytest.raises(ValueError, match=refusal):
        module(points, features[:, :4])
    with pytest.raises(Exception, match=refusal):                   # torch.compile's error around the model's
        compiled(points, features[:, :4])


@pytest.mark.parametrize("make", [lambda: ls2t(d_in=4, width=2, order=2),
                                  lambda: deep_ls2t(d_in=4, widths=(2, 2), order=2)], ids=["LS2T", "DeepLS2T"])
def test_a_tensor_option_traces_whole_in_its_place(make):
    """``module(x, mask=m)`` is ``module(x, m)``: one operator under fullgraph=True (it had failed at the graph
    break an option made), eager's values and gradients; ``mask=None`` and ``module(x, None)`` (which had failed
    too) are the mask left out, and an unknown option meets the model's own TypeError."""
    module = make().to_torch(seed=2)
    x = torch.tensor(SEQUENCE, requires_grad=True)
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, 4:] = False
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    for arguments, options, positional in (((x,), {"mask": mask}, (mask,)), ((x,), {"mask": None}, ()),
                                           ((x, None), {}, ())):
        got, want = compiled(*arguments, **options), module(x, *positional)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        for a, b in zip(torch.autograd.grad(got.sin().sum(), [x, *module.parameters()]),
                        torch.autograd.grad(want.sin().sum(), [x, *module.parameters()])):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert not torch.equal(compiled(x, mask=mask), compiled(x))
    with pytest.raises(TypeError, match="unexpected keyword argument 'masks'"):
        torch.compile(module, backend="eager")(x, masks=mask)


class Owner:
    """A hand-written owner of the operator: its call is `function` of the operands."""

    def __init__(self, function):
        self.function, self.key = function, torch_call.register(self)

    def flat_call(self, operands):
        return self.function(*operands)


def _wider_than_two(x):
    if x.shape[-1] != 2:
        raise ValueError(f"x: expected 2 features, got {x.shape[-1]}")
    return x.cos()


@pytest.mark.parametrize("function, dynamic, graphs", [
    (lambda x: x.sin() * 2, None, 2),                     # the length followed
    (lambda x: x.sum(1), None, 2),                        # no size follows the length
    (lambda x: x[:, 1:].sin(), None, 4),                  # L - 1: specialised, each length traced
    (lambda x: torch.cat([x, x], 1), None, 4),            # 2 L: specialised
    (_wider_than_two, True, 1)],                          # the features specialised, the batch and length followed
    ids=["follows", "pooled", "shorter", "doubled", "refused features"])
def test_a_result_size_is_a_symbol_only_where_it_follows_one(function, dynamic, graphs, counting):
    owner = Owner(function)
    counted, backend = counting("aot_eager")
    compiled = torch.compile(lambda x: torch_call.traced(owner.key, [x]) * 3, fullgraph=True, backend=backend,
                             dynamic=dynamic)
    for batch, length in ((3, 5), (4, 8), (6, 7), (3, 9)):   # no size equal to another: none shares a symbol
        x = torch.randn(batch, length, 2, dtype=torch.float64, requires_grad=True)
        got, want = compiled(x), function(x) * 3
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        for a, b in zip(torch.autograd.grad(got.sum(), x), torch.autograd.grad(want.sum(), x)):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert len(counted) == graphs


def test_a_result_that_stops_following_its_symbol_is_refused_by_name_not_returned_wrong():
    """A window of at most 8: the result's length follows the input's at the lengths tried (6, then 7 and 8), so the
    graph expects it to; at 20 it is 8, and the operator refuses it (aot_eager does not check sizes itself)."""
    owner = Owner(lambda x: x[:, :min(x.shape[1], 8)] * 1)
    compiled = torch.compile(lambda x: torch_call.traced(owner.key, [x]).mean(1), fullgraph=True, backend="aot_eager")
    for length in (6, 7):
        x = torch.randn(2, length, 3, dtype=torch.float64)
        torch.testing.assert_close(compiled(x), x.mean(1), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match=r"returned shape \(2, 8, 3\) where torch.compile traced \(2, 20, 3\)"):
        compiled(torch.randn(2, 20, 3, dtype=torch.float64))


def test_a_traced_module_trains():
    module = mamba(d_model=4, d_state=2).to_torch(seed=0)
    compiled = torch.compile(module, fullgraph=True, backend="eager")
    optimiser = torch.optim.SGD(module.parameters(), lr=0.05)
    x = torch.tensor(SEQUENCE)
    losses = []
    for _ in range(5):
        optimiser.zero_grad()
        loss = (compiled(x) ** 2).mean()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("wanted", ["all", "parameters", "none"])
def test_the_operator_passes_torch_s_operator_checks(wanted):
    module = attention(d_model=4, heads=2).to_torch(seed=0)
    x = torch.tensor(SEQUENCE, requires_grad=wanted == "all")
    operands = [*module.parameters(), x]
    forward, _ = torch_call.define()
    torch.library.opcheck(forward, (operands, module.key, [wanted != "none" and o.requires_grad for o in operands], ""))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("container", [dict, torch.nn.ParameterDict])
def test_a_compiled_expression_traces_whole_and_equals_the_eager_plan(backend, container):
    """The parameters in a dict or in a module's ``ParameterDict`` (a mapping the eager call also reads as it reads a
    dict)."""
    model = attention(d_model=4, heads=2)
    plan = model.plan((6,))
    params = container({name: torch.tensor(value, requires_grad=True) for name, value in model.init(seed=0).items()})
    weights = list(params.values())
    x = torch.tensor(SEQUENCE, requires_grad=True)

    def loss(x, params):
        return plan(x, params).sin().sum()
    compiled = torch.compile(loss, fullgraph=True, backend=backend)
    expected = loss(x, params)
    expected_gradients = torch.autograd.grad(expected, [*weights, x])
    for run in range(2):                                 # aot_eager: the first run checks in a dispatch mode
        got = compiled(x, params)
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
        for a, b in zip(torch.autograd.grad(got, [*weights, x]), expected_gradients):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend, device", [("eager", "cpu"), ("aot_eager", "cpu"), pytest.param(
    "inductor", "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))])
@pytest.mark.parametrize("make", [lambda: attention(d_model=4, heads=2), lambda: mamba(d_model=4, d_state=2)],
                         ids=["attention", "mamba"])
def test_under_autocast_a_traced_module_gives_eager_s_dtype_values_and_gradients(make, backend, device):
    """Mixed precision: inside ``torch.autocast`` the operator runs the module under the autocast it was traced in,
    so its projections run in bfloat16 as eager's do.  Before, aot_eager's body and every fake body ran without
    it: a float32 result where eager gives bfloat16 (and the eager backend's bfloat16 result met a graph traced
    for float32)."""
    module = make().to_torch(seed=3, dtype=np.float32).to(device)
    x = torch.tensor(SEQUENCE, dtype=torch.float32, device=device, requires_grad=True)
    compiled = torch.compile(module, fullgraph=True, backend=backend)
    results, tolerance = [], 1e-5 if backend == "inductor" else 1e-6
    for function in (module, compiled, compiled):
        with torch.autocast(device, dtype=torch.bfloat16):
            value = function(x)
        results.append([value, *torch.autograd.grad(value.float().sin().sum(), [x, *module.parameters()])])
    assert results[0][0].dtype == torch.bfloat16
    for got in results[1:]:
        for a, b in zip(got, results[0]):
            torch.testing.assert_close(a, b, rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(compiled(x), module(x), rtol=tolerance, atol=tolerance)  # without autocast: float32
    assert compiled(x).dtype == torch.float32


def test_the_registry_holds_modules_weakly_and_a_gone_one_is_named():
    module = gating(channels=4).to_torch()
    key = module.key
    assert torch_call.owner_for(key) is module
    del module
    gc.collect()
    with pytest.raises(KeyError, match=f"key: nothing named '{key}' lives in this process"):
        torch_call.owner_for(key)


@pytest.mark.parametrize("make", [lambda: ssm(channels=4, d_state=2), lambda: mamba(d_model=4, d_state=2)],
                         ids=["S4D", "Mamba"])
def test_an_option_traces_whole_with_a_form_of_its_own(make, monkeypatch):
    """``module(x, method=m)`` and ``module(x, m)`` trace as one operator under fullgraph=True (it had failed at
    the graph break the option made), run the model with that method, and give its eager values and gradients; one
    form for both spellings, and a bad method meets the model's own ValueError."""
    from product_interactions.interactions import torch_module
    model = make()
    module = model.to_torch(seed=2)
    x = torch.tensor(SEQUENCE, requires_grad=True)
    ran, apply = [], type(model).apply

    def spied(self, params, x, method="auto"):
        ran.append(method)
        return apply(self, params, x, method)
    monkeypatch.setattr(type(model), "apply", spied)
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    for method in ("sequential", "parallel"):
        for arguments, options in (((x,), {"method": method}), ((x, method), {})):
            ran.clear()
            got, want = compiled(*arguments, **options), module(x, method=method)
            assert set(ran) == {method}
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
            for a, b in zip(torch.autograd.grad(got.sin().sum(), [x, *module.parameters()]),
                            torch.autograd.grad(want.sin().sum(), [x, *module.parameters()])):
                torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert len(torch_module._FORMS[module.key]) == 2
    with pytest.raises(Exception, match="method: expected one of"):
        compiled(x, method="fast")


def test_call_forms_are_bounded_per_module_and_dropped_with_it(monkeypatch):
    """Beyond `FORMS_PER_MODULE` forms a call runs at a graph break, with its values; a module's forms go with it."""
    from product_interactions.interactions import torch_module
    monkeypatch.setattr(torch_module, "FORMS_PER_MODULE", 1)
    module = ssm(channels=4, d_state=2).to_torch(seed=0)
    x = torch.tensor(SEQUENCE)
    compiled = torch.compile(module, backend="eager")
    for method in ("sequential", "parallel", "chunked"):
        torch.testing.assert_close(compiled(x, method=method), module(x, method=method), rtol=1e-12, atol=1e-12)
    key = module.key
    assert [index[1] for index in torch_module._FORMS[key]] == [(("method", str, "sequential"),)]
    torch._dynamo.reset()                                   # else the graphs above serve (torch caches by code)
    with pytest.raises(Exception, match="marked as skipped|graph break|disable"):
        torch.compile(module, fullgraph=True, backend="eager")(x, method="parallel")
    del module, compiled
    torch._dynamo.reset()
    gc.collect()
    assert key not in torch_module._FORMS


def test_torch_func_differentiates_a_module_that_reads_its_inputs_values():
    """S4D's causal convolution asks where its input is not finite; under torch.func its wrapped tensors have no
    memory to read, so it takes the form that needs no value (it had failed: '.numpy() is not supported')."""
    module = ssm(channels=4, d_state=2).to_torch(seed=0)
    x = torch.tensor(SEQUENCE)
    gradient = torch.func.grad(lambda x: module(x).sin().sum())(x)
    expected, = torch.autograd.grad(module(x.requires_grad_()).sin().sum(), x)
    torch.testing.assert_close(gradient, expected, rtol=1e-12, atol=1e-12)


def test_a_copy_has_a_key_of_its_own_and_outlives_its_original():
    import copy
    module = gating(channels=4).to_torch(seed=0)
    x = torch.tensor(SEQUENCE)
    duplicate = copy.deepcopy(module)
    assert duplicate.key != module.key and torch_call.owner_for(duplicate.key) is duplicate
    expected = module(x)
    del module
    gc.collect()
    torch.testing.assert_close(torch.compile(duplicate, fullgraph=True, backend="eager")(x), expected)


def test_a_traced_call_in_another_dtype_is_refused_by_name():
    module = gating(channels=4).to_torch(seed=0)
    with pytest.raises(Exception, match=r"x: expected torch.float64, the dtype of the module's parameters"):
        torch.compile(module, fullgraph=True, backend="eager")(torch.tensor(SEQUENCE, dtype=torch.float32))


def test_the_torch_engine_asks_no_fake_tensor_for_a_value():
    """A fake body runs the library on fake tensors: they are not concrete, a dense product (which checks a real
    result for non-finite outputs) marks them without a read, and a constant made for one is not kept to meet real
    tensors later."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from product_interactions.algebra import quaternions
    from product_interactions.kernels.arrays import TORCH
    dense = kernels.product(quaternions(), strategy="dense")
    with FakeTensorMode():
        fake = torch.zeros(3, dtype=torch.float64)
        assert not TORCH.concrete(fake)
        assert dense(torch.zeros(5, 4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64)).shape == (5, 4)
        constant = np.arange(3.0)
        TORCH.constant(constant, fake)
    real = torch.zeros(3, dtype=torch.float64)
    assert TORCH.concrete(real) and type(TORCH.constant(constant, real)) is torch.Tensor


def test_only_torch_tensors_become_the_operator():
    """Of any dtype (a mask, token ids: only floating ones can want a gradient); numpy arrays run at a graph break."""
    torch_call.define()
    for arrays in ([torch.zeros(2), torch.zeros(3, dtype=torch.float64)], [torch.zeros(2, dtype=torch.int64)],
                   [torch.zeros(2), torch.zeros(2, dtype=torch.bool)]):
        assert torch_call.applies(arrays), arrays
    for arrays in ([], [np.zeros(2)], [torch.zeros(2), np.zeros(2)]):
        assert not torch_call.applies(arrays), arrays


def test_a_traced_module_inside_activation_checkpointing_gives_eager_s_gradients_from_its_first_run():
    """Under saved-tensor hooks the forward keeps no record of its own (the first run, checked inside a dispatch
    mode, could keep none, and a checkpoint's recomputation must save what the first run saved)."""
    from torch.utils.checkpoint import checkpoint
    module = mamba(d_model=4, d_state=2).to_torch(seed=0)
    x = torch.tensor(SEQUENCE, requires_grad=True)
    weights = [*module.parameters(), x]
    expected = torch.autograd.grad(module(x).sin().sum(), weights)
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    kept = len(torch_call.RECORDED)
    for run in range(2):
        value = checkpoint(compiled, x, use_reentrant=False).sin().sum()
        for got, want in zip(torch.autograd.grad(value, weights), expected):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        assert len(torch_call.RECORDED) == kept


def test_the_backward_operator_returns_no_gradient_that_aliases_its_inputs_or_another():
    """d(a + b)/db passes the incoming gradient itself on; an operator's outputs must alias nothing (Inductor
    reuses their memory)."""
    class Sum:
        def flat_call(self, operands):
            return operands[0] + operands[1]
    owner = Sum()
    key = torch_call.register(owner)
    forward, backward = torch_call.define()
    a, b, gradient = (torch.randn(3, 4, dtype=torch.float64) for _ in range(3))
    _, handle = forward([a, b], key, [True, True], "")
    found = backward([a, b], key, [True, True], "", handle, gradient)
    for g in found:
        torch.testing.assert_close(g, gradient, rtol=0, atol=0)
    addresses = [t.untyped_storage().data_ptr() for t in (a, b, gradient, *found)]
    assert len(set(addresses)) == len(addresses)


def test_a_gradient_of_a_gradient_through_a_traced_module_is_refused_by_name():
    """(torch's ahead-of-time autograd refuses one itself; the eager backend reaches the operator's refusal.)"""
    module = gating(channels=4).to_torch(seed=0)
    x = torch.tensor(SEQUENCE, requires_grad=True)
    value = torch.compile(module, fullgraph=True, backend="eager")(x).sin().sum()
    with pytest.raises(NotImplementedError, match=f"key: gradients of gradients of '{module.key}' are not traced"):
        torch.autograd.grad(value, x, create_graph=True)
    gradient, = torch.autograd.grad(value, x)                # once is fine, and the refusal kept the record
    torch.testing.assert_close(gradient, torch.autograd.grad(module(x).sin().sum(), x)[0], rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("model", [attention(d_model=8, heads=2), mamba(d_model=8, d_state=4)], ids=["attention", "mamba"])
def test_on_cuda_inductor_trains_a_module_as_eager_does_with_one_library_call_a_step(model):
    """Inductor's own code around the operator on a GPU; the handle stays on the CPU while the operands do not."""
    module = model.to_torch(seed=0).to("cuda")
    calls, kept = counted(module), len(torch_call.RECORDED)
    x = torch.randn(2, 16, 8, dtype=torch.float64, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    compiled = torch.compile(module, fullgraph=True)
    weights = list(module.parameters())
    expected = [module(x).sin().sum(), *torch.autograd.grad(module(x).sin().sum(), weights)]
    for run in range(3):
        calls.clear()
        value = compiled(x).sin().sum()
        got = [value, *torch.autograd.grad(value, weights)]
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
        assert run == 0 or calls == ["real"]
        assert len(torch_call.RECORDED) == kept


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_inductor_follows_a_new_length_in_one_graph_as_eager_does(counting):
    """Inductor checks the operator's result against its traced shape (symbols included) on every run."""
    module = mamba(d_model=8, d_state=4).to_torch(seed=0).to("cuda")
    graphs, backend = counting("inductor")
    compiled = torch.compile(module, fullgraph=True, backend=backend)
    weights = list(module.parameters())
    for length in (16, 24, 20, 40):
        x = torch.randn(2, length, 8, dtype=torch.float64, device="cuda",
                        generator=torch.Generator("cuda").manual_seed(length))
        expected = [module(x).sin().sum(), *torch.autograd.grad(module(x).sin().sum(), weights)]
        value = compiled(x).sin().sum()
        for a, b in zip([value, *torch.autograd.grad(value, weights)], expected):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    assert len(graphs) == 2
