"""Under torch.compile, kernels, plans and the functional entry points (scans, signature, seq2tens, masked softmax,
causal convolution) run as they are at a graph break (`kernels.arrays.registry.outside_torch_compile`): the compiled
function gives the eager values and gradients, for products of three kinds of strategy, a model's module and each
entry point."""
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
