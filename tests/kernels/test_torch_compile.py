"""Under torch.compile, a kernel's call on torch tensors is one operator of the graph (`kernels.products.
torch_operator`: fullgraph=True traces it; plans and modules: tests/interactions/test_torch_call.py), while the
functional entry points (scans, signature, seq2tens, masked softmax, causal convolution) run as they are at a
graph break (`outside_torch_compile`): the
compiled function gives the eager values and gradients, for products of three kinds of strategy, a model's module
and each entry point."""
from __future__ import annotations

import pytest

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
def test_a_kernel_traces_whole_with_fullgraph_and_its_gradients_of_both_operands_are_the_eager_ones(algebra):
    kernel = kernels.product(algebra)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 3, algebra.dim, dtype=torch.float64, generator=g, requires_grad=True)
    y = torch.randn(3, algebra.dim, dtype=torch.float64, generator=g, requires_grad=True)    # broadcast

    def loss(a, b):
        return (kernel(a, b).cos() * 3).sum()
    graphs = []

    def backend(graph, inputs):
        graphs.append(graph)
        return graph.forward
    compiled = torch.compile(loss, fullgraph=True, backend=backend)
    value = compiled(x, y)
    found = torch.autograd.grad(value, (x, y))
    expected_value = loss(x, y)
    expected = torch.autograd.grad(expected_value, (x, y))
    torch.testing.assert_close(value, expected_value, rtol=1e-12, atol=1e-12)
    for got, want in zip(found, expected):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert len(graphs) == 1 and "product_interactions.product" in str(graphs[0].graph)


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


def _sequences():
    return torch.randn(3, 10, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))


FUNCTIONS = {
    "linear_scan": lambda x: kernels.linear_scan(torch.sigmoid(x[0]), x[1]),
    "selective_scan": lambda x: kernels.selective_scan(x[:, :, :1], torch.sigmoid(x[:, :, 1:]),
                                                       -torch.ones(1, 2, dtype=x.dtype), x, x),
    "causal_convolution": lambda x: kernels.causal_convolution(x, torch.linspace(1.0, 0.1, 2, dtype=x.dtype)),
    "softmax": lambda x: kernels.softmax(x, mask=x > -1.0),
    "signature": lambda x: signature(x, 3),
    "seq2tens": lambda x: seq2tens(x, 2)[-1],
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_functional_entry_points_under_torch_compile_equal_the_eager_calls(name):
    function = FUNCTIONS[name]
    x = _sequences().requires_grad_()
    eager = function(x)
    (eager_gradient,) = torch.autograd.grad(eager.sum(), x)
    compiled = torch.compile(function)(x)
    (gradient,) = torch.autograd.grad(compiled.sum(), x)
    torch.testing.assert_close(compiled, eager, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gradient, eager_gradient, rtol=1e-12, atol=1e-12)


def test_a_kernel_s_key_is_its_content_so_a_graph_kept_on_disk_finds_an_equal_kernel():
    from product_interactions.kernels.products.torch_operator import identity, kernel_for
    first, second = kernels.product(clebsch_gordan(2)), kernels.product(clebsch_gordan(2))
    assert first.key == second.key == identity(first)
    assert kernels.product(clebsch_gordan(2), dtype="float32").key != first.key
    assert kernels.product(clebsch_gordan(2), strategy="dense").key != first.key
    assert kernel_for(f"{first.key}^T1") is kernel_for(first.key).transposed(1)
    with pytest.raises(KeyError, match="no kernel 'nowhere' lives in this process"):
        kernel_for("nowhere")
