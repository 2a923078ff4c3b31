"""A library module in torch's own module machinery: parametrizations, pruning and a tensor set in a parameter's
place take effect (the module reads its parameters by name, as torch's layers do), and the modules of one model
are of one class, so torch.func stacks them into an ensemble.  Before, the first four refused every call
("params: missing ['W_O']") and every `to_torch` call and deepcopy made a class of its own."""
from __future__ import annotations

import copy

import pytest
from module_cases import MODELS

torch = pytest.importorskip("torch")
from torch.func import functional_call, stack_module_state  # noqa: E402
from torch.nn.utils import parametrize, prune  # noqa: E402
from torch.nn.utils.parametrizations import weight_norm  # noqa: E402

IDS = [type(m).__name__ for m, _ in MODELS]


class Doubled(torch.nn.Module):
    def forward(self, w):
        return 2 * w


def replaced(module, name, value):
    """A copy of `module` with its parameter `name` set to `value` (a plain parameter): the reference."""
    other = copy.deepcopy(module)
    with torch.no_grad():
        other.get_parameter(name).copy_(value)
    return other


@pytest.mark.parametrize("model, inputs", MODELS, ids=IDS)
def test_torch_s_parametrizations_and_pruning_change_the_weight_the_module_uses(model, inputs):
    x = [torch.tensor(a) for a in inputs]
    name = max(model.parameters, key=lambda n: len(model.parameters[n]))     # a matrix where there is one
    plain = model.to_torch(seed=1)
    cases = {"register_parametrization": lambda m: parametrize.register_parametrization(m, name, Doubled()),
             "weight_norm": lambda m: weight_norm(m, name, dim=0),
             "prune": lambda m: prune.random_unstructured(m, name, amount=0.5)}
    for label, apply in cases.items():
        torch.manual_seed(0)
        module = model.to_torch(seed=1)
        apply(module)
        effective = getattr(module, name).detach()
        expected = replaced(plain, name, effective)(*x)
        out = module(*x)
        torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12, msg=label)
        out.sum().backward()
        leaves = [p for n, p in module.named_parameters() if n.startswith(f"parametrizations.{name}.") or
                  n == f"{name}_orig"]
        assert leaves and all(p.grad is not None for p in leaves), label
        if label == "register_parametrization":
            torch.testing.assert_close(effective, 2 * plain.get_parameter(name).detach())


@pytest.mark.parametrize("model, inputs", MODELS, ids=IDS)
def test_a_tensor_set_in_a_parameter_s_place_is_used(model, inputs):
    """The pattern of hypernetworks and MAML's inner loop: ``del module.W; module.W = tensor``."""
    x = [torch.tensor(a) for a in inputs]
    name = next(iter(model.parameters))
    module, plain = model.to_torch(seed=2), model.to_torch(seed=2)
    value = plain.get_parameter(name).detach() * 0.5
    delattr(module, name)
    setattr(module, name, value)
    torch.testing.assert_close(module(*x), replaced(plain, name, value)(*x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model, inputs", MODELS, ids=IDS)
def test_the_modules_of_one_model_stack_into_an_ensemble(model, inputs):
    """Two seeds and a deepcopy are of one class; torch.func's ensemble recipe (`stack_module_state`, then `vmap`
    of `functional_call`) gives each member's own output."""
    x = [torch.tensor(a) for a in inputs]
    members = [model.to_torch(seed=0), model.to_torch(seed=1)]
    members.append(copy.deepcopy(members[1]))
    assert len({type(m) for m in members}) == 1
    params, buffers = stack_module_state(members)
    base = copy.deepcopy(members[0]).to("meta")

    def one(p, b):
        return functional_call(base, (p, b), tuple(x))
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        stacked = torch.func.vmap(one)(params, buffers)
    for member, out in zip(members, stacked):
        torch.testing.assert_close(out, member(*x), rtol=1e-12, atol=1e-12)


def test_a_parametrized_module_compiles_whole_and_trains_its_parametrization():
    from product_interactions.interactions.architectures import attention
    module = attention(d_model=4, heads=2).to_torch(seed=0)
    weight_norm(module, "W_O", dim=0)
    x = torch.randn(2, 5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    compiled = torch.compile(module, fullgraph=True, backend="eager")
    out = compiled(x)
    torch.testing.assert_close(out, module(x), rtol=1e-12, atol=1e-12)
    out.sum().backward()
    assert {n for n, p in module.named_parameters() if p.grad is not None} == {
        "W_Q", "W_K", "W_V", "parametrizations.W_O.original0", "parametrizations.W_O.original1"}


def test_to_torch_takes_torch_s_dtypes():
    """``to_torch(dtype=torch.float32)``, as a torch user writes it, equals numpy's float32; bfloat16 (which numpy
    lacks) is float32's draw rounded; a dtype that is not floating is refused by name.  Before, a torch dtype was
    refused ("dtype: expected a floating dtype such as numpy.float32")."""
    import numpy as np
    from product_interactions.interactions.architectures import attention
    model = attention(d_model=4, heads=2)
    single = model.to_torch(seed=0, dtype=np.float32)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        module = model.to_torch(seed=0, dtype=dtype)
        for p, q in zip(module.parameters(), single.parameters()):
            assert p.dtype == dtype and torch.equal(p, q.to(dtype))
        assert module(torch.randn(2, 5, 4, dtype=dtype)).dtype == dtype
    with pytest.raises(TypeError, match="dtype: expected a floating dtype .* got int64"):
        model.to_torch(dtype=torch.int64)
