"""torch.jit.trace through the library: a kernel's call, a functional entry point and a model's module are each one
operator of the trace (as under torch.compile), so the traced function passes torch's check of the trace, gives
the eager values on new inputs, of other sizes too, and the eager gradients, and replays under no_grad and
inference_mode without recording a gradient; elsewhere (a component-major kernel, a scan called directly) the C
loops give way to torch's operations.  Before, the C loops' writes were missed (a kernel's trace returned
uninitialised memory) and modules failed inside the library."""
from __future__ import annotations

import gc
import warnings

import pytest

from product_interactions import kernels
from product_interactions.algebra import clifford, quaternions, tensor_algebra, translation
from product_interactions.interactions.architectures import attention, convolution, ls2t, mamba
from product_interactions.interactions.feature_map import signature
from product_interactions.kernels.arrays import torch_call
from product_interactions.kernels.scans.low_rank import low_rank

torch = pytest.importorskip("torch")


def _trace(function, *examples, check=True):
    """`function` traced on `examples`; with `check`, torch checks the trace against a second one (where the library's
    constants are made on the first call and kept, the two traces differ in form though not in value)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)        # torch's notes on Python numbers
        warnings.simplefilter("ignore", DeprecationWarning)             # torch.jit.trace: legacy, not gone
        return torch.jit.trace(function, examples, check_trace=check)


@pytest.mark.parametrize("algebra", [quaternions(), clifford(3, 0, 1), translation(16), tensor_algebra(2, 3)],
                         ids=lambda a: a.name)
def test_a_traced_kernel_equals_the_eager_call_for_every_strategy(algebra):
    g = torch.Generator().manual_seed(algebra.dim)
    x, new = (torch.randn(6, algebra.dim, dtype=torch.float64, generator=g) for _ in range(2))
    for strategy in kernels.STRATEGIES:
        try:
            kernel = kernels.product(algebra, strategy=strategy)
        except ValueError:                                 # not for this algebra
            continue

        def f(a, kernel=kernel):
            return kernel(a, a.flip(0))
        traced = _trace(f, x)
        for a in (x, new, new[:3]):
            assert torch.equal(traced(a), f(a)), (strategy, kernel.strategies)


@pytest.mark.parametrize("build", [lambda: attention(d_model=4, heads=2), lambda: mamba(d_model=4, d_state=2),
                                   lambda: ls2t(d_in=4, width=3, order=3), lambda: convolution(channels_in=4,
                                                                                               channels_out=2)],
                         ids=["attention", "mamba", "ls2t", "convolution"])
def test_a_traced_module_equals_the_eager_module_in_values_and_gradients(build):
    module = build().to_torch(seed=0)
    g = torch.Generator().manual_seed(1)
    x, new = torch.randn(2, 6, 4, dtype=torch.float64, generator=g), torch.randn(3, 9, 4, dtype=torch.float64,
                                                                                 generator=g)
    traced = _trace(module, x)
    assert torch.equal(traced(new), module(new))
    gradients = []
    for f in (traced, module):
        a = new.clone().requires_grad_()
        f(a).pow(2).sum().backward()
        gradients.append((a.grad, *(p.grad.clone() for p in module.parameters())))
        module.zero_grad()
    for ours, eager in zip(*gradients):
        assert torch.allclose(ours, eager, rtol=1e-12, atol=1e-12)


def test_a_traced_module_replays_under_no_grad_and_inference_mode_recording_nothing():
    module = ls2t(d_in=4, width=3, order=3).to_torch(seed=0)
    x = torch.randn(2, 6, 4, dtype=torch.float64, requires_grad=True)
    traced = _trace(module, x)
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            before = len(torch_call.RECORDED)
            assert torch.equal(traced(x.detach()), module(x.detach())) and len(torch_call.RECORDED) == before


def test_a_traced_module_checks_its_inputs_dtype_as_the_module_does():
    module = attention(d_model=4, heads=2).to_torch(seed=0)
    traced = _trace(module, torch.randn(2, 6, 4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"x: expected torch.float64, the dtype of the module's parameters"):
        traced(torch.randn(2, 6, 4))


def test_a_component_major_kernel_and_a_scan_called_directly_trace_torch_s_operations():
    kernel = kernels.product(quaternions(), layout="component-major")
    g = torch.Generator().manual_seed(3)
    x, new = (torch.randn(4, 6, dtype=torch.float64, generator=g) for _ in range(2))
    traced = _trace(lambda a: kernel(a, a.flip(1)), x, check=False)
    assert torch.allclose(traced(new), kernel(new, new.flip(1)), rtol=1e-14, atol=1e-14)
    paths, V = torch.randn(3, 7, 2, dtype=torch.float64, generator=g), torch.randn(2, 2, 3, dtype=torch.float64,
                                                                                    generator=g)
    traced = _trace(lambda a: low_rank(a, V, 2, False), paths, check=False)
    assert torch.allclose(traced(paths.flip(1)), low_rank(paths.flip(1), V, 2, False), rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="not while torch.jit.trace records"):
        _trace(lambda a: low_rank(a, V, 2, False, method="compiled"), paths)


def test_a_traced_entry_point_equals_the_eager_call():
    x = torch.randn(2, 7, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))

    def f(a):
        return signature(a, 3)
    traced = _trace(f, x)
    assert torch.equal(traced(x.flip(1)), f(x.flip(1))) and torch.equal(traced(x[:1]), f(x[:1]))


def test_a_trace_that_outlives_its_module_says_so():
    module = attention(d_model=4, heads=2).to_torch(seed=0)
    x = torch.randn(2, 6, 4, dtype=torch.float64)
    traced = _trace(module, x)
    del module
    gc.collect()
    with pytest.raises(RuntimeError, match="lives in this process .a compiled or traced graph outlived it"):
        traced(x)
