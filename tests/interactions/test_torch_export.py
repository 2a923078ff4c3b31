"""`torch.export` (its default, non-strict tracer) of the library's modules, kernels and functional entry points:
where every size is a number, export follows the library's own torch operations, so the program holds torch's
operators only, equals the eager call, and loads and runs in a process that never imports the library.  Before,
each call was the library's operator, looked up by a key that lives only in the process that made it (a loaded
program failed: "failed to resolve torch.ops.product_interactions.call.default").  A dynamic batch
(``Dim("batch")`` on the first axis) is followed too, the library deciding at the example's batch: the program runs
at any batch, checked here at three.  A dynamic length still records the library's operator (the library builds
plans and constants per length): in-process only, as documented."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from module_cases import MODELS, applicable_kernels

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, diagonal, position, quaternions, tensor_product
from product_interactions.interactions import Flip, Linear, Mask, Parameter, Pointwise, Reduce, Signal, compiler
from product_interactions.interactions.feature_map import seq2tens, signature

torch = pytest.importorskip("torch")
from torch.export import Dim  # noqa: E402

IDS = [type(m).__name__ for m, _ in MODELS]


class Function(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, *arrays):
        return self.function(*arrays)


def library_operators(program) -> list[str]:
    return [str(node.target) for node in program.graph.nodes if "product_interactions" in str(node.target)]


def exported(module, arguments, dynamic):
    """`module` exported on `arguments`, where `dynamic` with a dynamic batch: the first axis of every argument of
    two or more axes."""
    shapes = (tuple({0: Dim("batch")} if a.dim() > 1 else None for a in arguments),) if dynamic else None
    return torch.export.export(module, arguments, dynamic_shapes=shapes)       # forward(*inputs): nested once


def batches(arguments, dynamic):
    """The example's arguments, and where `dynamic` the same at batch 1 and at a batch one larger (`exported`)."""
    def resized(change):
        return tuple(change(a) if a.dim() > 1 else a for a in arguments)
    return [arguments] + ([resized(lambda a: a[:1]), resized(lambda a: torch.cat([a, a[:1]]))] if dynamic else [])


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic batch"])
def test_every_architecture_exports_to_torch_operators_that_run_without_the_library(tmp_path, dynamic):
    saved = []
    for (model, inputs), name in zip(MODELS, IDS):
        module = model.to_torch(seed=0)
        arguments = tuple(torch.tensor(a) for a in inputs)
        program = exported(module, arguments, dynamic)
        calls = [(given, module(*given).detach()) for given in batches(arguments, dynamic)]
        assert library_operators(program) == [], name
        torch.testing.assert_close(program.module()(*arguments), calls[0][1], rtol=1e-12, atol=1e-12)
        torch.export.save(program, tmp_path / f"{name}.pt2")
        torch.save(calls, tmp_path / f"{name}.io")
        saved.append(name)
    check = """
import sys, torch
folder = sys.argv[1]
for name in sys.argv[2:]:
    program = torch.export.load(f"{folder}/{name}.pt2")
    for arguments, expected in torch.load(f"{folder}/{name}.io"):
        torch.testing.assert_close(program.module()(*arguments), expected, rtol=1e-12, atol=1e-12)
assert not any(module.startswith("product_interactions") for module in sys.modules)
print("ran", len(sys.argv) - 2)
"""
    done = subprocess.run([sys.executable, "-c", check, str(tmp_path), *saved], capture_output=True, text=True,
                          cwd=tmp_path, timeout=600)
    assert done.returncode == 0 and done.stdout.split() == ["ran", str(len(saved))], done.stderr[-2000:]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic batch"])
@pytest.mark.parametrize("algebra", [quaternions(), clebsch_gordan(1)], ids=["quaternions", "cg1"])
def test_every_strategy_of_a_kernel_exports_to_torch_operators(algebra, dynamic):
    g = torch.Generator().manual_seed(1)
    x, y = (torch.randn(6, 2, algebra.dim, dtype=torch.float64, generator=g) for _ in range(2))
    y[0, 0, 0] = float("inf")                           # the rule for values that are not finite, with no read
    checked = 0
    for name, kernel in applicable_kernels(algebra):
        program = exported(Function(kernel), (x, y), dynamic)
        assert library_operators(program) == [], name
        for given in batches((x, y), dynamic):
            got, expected = program.module()(*given), kernel(*given)      # a non-finite output: NaN unread, else any
            finite = torch.isfinite(expected)
            assert torch.equal(torch.isfinite(got), finite) and not finite.all(), name
            torch.testing.assert_close(got[finite], expected[finite], rtol=1e-12, atol=1e-12, msg=name)
        checked += 1
    assert checked >= 4


def test_a_dynamic_batch_is_never_cut_into_its_example_s_chunks(monkeypatch):
    """Under a memory limit that cuts the example's batch into chunks, the program computes any batch whole: chunks
    sized for the example would pin the batch (or drop the rows past it)."""
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", 2_000)
    kernel = kernels.product(clebsch_gordan(1), strategy="dense")
    g = torch.Generator().manual_seed(4)
    x, y = (torch.randn(64, 4, dtype=torch.float64, generator=g) for _ in range(2))
    program = exported(Function(kernel), (x, y), dynamic=True)
    assert library_operators(program) == []
    larger = tuple(torch.cat([a, a]) for a in (x, y))
    torch.testing.assert_close(program.module()(*larger), kernel(*larger), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic batch"])
def test_the_functional_entry_points_export_to_torch_operators(dynamic):
    g = torch.Generator().manual_seed(2)

    def rand(*shape):
        return torch.randn(*shape, dtype=torch.float64, generator=g)
    u, A = rand(2, 10, 3), -torch.ones(3, 2, dtype=torch.float64)
    cases = {"selective_scan": (lambda u, d, B, C: kernels.selective_scan(u, d, A, B, C),
                                (u, u.abs(), rand(2, 10, 2), rand(2, 10, 2))),
             "linear_scan": (lambda a, b: kernels.linear_scan(a.transpose(0, 1), b.transpose(0, 1)),   # time-first
                             (rand(2, 10, 3).sigmoid(), u)),
             "causal_convolution": (kernels.causal_convolution, (rand(2, 3, 10), rand(10))),
             "softmax": (lambda s: kernels.softmax(s, axis=-1), (rand(4, 6),)),
             "masked softmax": (lambda s, m, n: kernels.softmax(s, axis=-1, mask=m) + kernels.softmax(s, mask=n),
                                (rand(4, 6), rand(4, 6) > 0, torch.arange(6) % 3 > 0)),
             "signature": (lambda x: signature(x, 3), (u,)),
             "seq2tens": (lambda x: seq2tens(x, 2)[2], (u,))}
    for name, (function, arguments) in cases.items():
        program = exported(Function(function), arguments, dynamic)
        assert library_operators(program) == [], name
        for given in batches(arguments, dynamic):
            torch.testing.assert_close(program.module()(*given), function(*given), rtol=1e-12, atol=1e-12,
                                       msg=name)


def test_attention_s_three_steps_take_a_dynamic_batch():
    """A fixed mask that leaves a query without a key runs attention's three steps, not the fused kernel: their
    checks (the scores' memory) are made at the example's batch, which they had pinned."""
    features = diagonal(4)
    X = Signal("x", tensor_product(position(5), position(5), features), units=[1])
    Q, K, V = (Linear(Parameter(name, (4, 4)), X, factor=2, into=features) for name in "QKV")
    keep = np.tril(np.ones((5, 5), bool))
    keep[2] = False
    weights = Pointwise("softmax", Reduce(Q * Flip(K), factor=2), factor=1, mask=Mask.fixed(keep))
    plan = compiler.compile(Reduce(weights * Flip(V), factor=1))
    g = torch.Generator().manual_seed(5)
    params = {name: torch.randn(4, 4, dtype=torch.float64, generator=g) for name in "QKV"}
    x = torch.randn(3, 5, 4, dtype=torch.float64, generator=g)
    program = exported(Function(lambda x: plan(x, params)), (x,), dynamic=True)
    assert library_operators(program) == []
    for (given,) in batches((x,), dynamic=True):
        torch.testing.assert_close(program.module()(given), plan(given, params), rtol=1e-12, atol=1e-12)


def test_a_size_read_from_data_records_the_library_s_operator():
    """Boolean indexing makes a size with no example value (torch's unbacked symbol): the library cannot decide at
    it, so the call is its operator (in-process), as before batches were followed."""
    kernel = kernels.product(quaternions())
    x = torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    keep = torch.tensor([1, 0, 1, 1, 0, 1], dtype=torch.bool)
    program = torch.export.export(Function(lambda x, keep: kernel(x[keep], x[keep]).sum(0)), (x, keep))
    assert library_operators(program) == ["product_interactions.product.default"]
    other = torch.tensor([0, 1, 1, 1, 1, 1], dtype=torch.bool)
    torch.testing.assert_close(program.module()(x, other), kernel(x[other], x[other]).sum(0), rtol=1e-12,
                               atol=1e-12)


def test_a_dynamic_length_records_the_library_s_operator_and_follows_the_size():
    """A symbol past a call's batch axis is a length: a model's (B, L, d), and a time-first scan's time."""
    model, (sequence,) = MODELS[0]
    module = model.to_torch(seed=0)
    x = torch.tensor(sequence)
    program = torch.export.export(module, (x,), dynamic_shapes=(({0: Dim("batch"), 1: Dim("length")},),))
    assert library_operators(program) == ["product_interactions.call.default"]
    longer = torch.cat([x, x], dim=1)
    torch.testing.assert_close(program.module()(longer), module(longer), rtol=1e-12, atol=1e-12)
    a, b = torch.rand(10, 2, 4, dtype=torch.float64), torch.randn(10, 2, 4, dtype=torch.float64)
    kernel = kernels.product(quaternions())

    def gated(a, b):                                    # a product kernel's batch is any leading axis: here time
        return kernels.linear_scan(torch.sigmoid(kernel(a, b)), b)
    for function in (kernels.linear_scan, gated):
        program = torch.export.export(Function(function), (a, b), dynamic_shapes=(({0: Dim("time")},) * 2,))
        assert library_operators(program) == ["product_interactions.call.default"]
        torch.testing.assert_close(program.module()(a[:7], b[:7]), function(a[:7], b[:7]), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic batch"])
def test_a_mask_is_an_input_of_the_exported_program(dynamic):
    """The mask of LS2T, DeepLS2T and the signature stays an input of the program: a padded mask, and another one at
    run time, give the eager numbers (a fake mask had been taken as all ones)."""
    from product_interactions.interactions.architectures import deep_ls2t, ls2t
    x = torch.randn(2, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    masks = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]), torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
    for module in (ls2t(d_in=3, width=2, order=2).to_torch(), deep_ls2t(d_in=3, widths=(2, 2), order=2).to_torch(),
                   Function(lambda a, m: signature(a, 2, mask=m))):
        program = exported(module, (x, masks[0]), dynamic)
        assert library_operators(program) == []
        for mask in masks:
            for given in batches((x, mask), dynamic):
                torch.testing.assert_close(program.module()(*given), module(*given), rtol=1e-12, atol=1e-12)
            assert not torch.equal(module(x, mask), module(x, torch.ones_like(mask)))


def test_a_dynamic_batch_program_compiles_ahead_of_time_for_serving(tmp_path):
    """AOTInductor (`torch._inductor.aoti_compile_and_package`, serving without Python's tracer) compiles an
    exported attention module with a dynamic batch, and the package runs at batches other than the example's."""
    import shutil
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("AOTInductor needs a C++ compiler")
    model, (sequence,) = MODELS[0]
    module = model.to_torch(seed=0, dtype=torch.float32)
    x = torch.tensor(sequence, dtype=torch.float32)
    program = exported(module, (x,), dynamic=True)
    package = torch._inductor.aoti_load_package(
        torch._inductor.aoti_compile_and_package(program, package_path=str(tmp_path / "attention.pt2")))
    g = torch.Generator().manual_seed(7)
    for batch in (1, 3, 7):
        given = torch.randn(batch, *x.shape[1:], generator=g)
        torch.testing.assert_close(package(given), module(given), rtol=1e-5, atol=1e-6)


def test_a_mask_that_does_not_broadcast_against_a_dynamic_batch_is_refused_by_name():
    s, mask = torch.randn(4, 6, dtype=torch.float64), torch.ones(4, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"mask: expected a shape that broadcasts to x's"):
        exported(Function(lambda s, m: kernels.softmax(s, axis=-1, mask=m)), (s, mask), dynamic=True)
