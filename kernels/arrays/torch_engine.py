"""`TORCH`: torch tensors on any device, with torch's own autograd (every operation is a torch operation).

Results stay on the inputs' device and in their dtype; numpy constants are moved there once (`Engine.constant`).
torch is imported when the engine is first used, so the core install never needs it.
"""
from __future__ import annotations

import functools
import inspect
import math
import operator
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import opt_einsum
from numpy.typing import DTypeLike

from ..native import build, clib
from .example_sizes import batches_only
from .rates import CUDA_RATES, Rates
from .engine import Engine

#: The numpy dtypes torch's bfloat16 stands for (numpy has none: computed in float32, `precision`).
_STAND_INS = {"bfloat16": "float32"}
#: The passes over the keys and values that fused attention makes to keep non-finite keys out without reading a
#: number back (`TorchEngine.attention`), beyond the read's own two.
_AVOIDING_PASSES = 4
#: torch dtype -> numpy dtype, filled on first use (a handful of entries).
_NUMPY_DTYPES: dict[Any, np.dtype] = {}


@functools.lru_cache(maxsize=1024)
def _lettered(equation: str) -> str:
    """The einsum equation with its labels renamed to the letters torch.einsum accepts."""
    letters = {c: opt_einsum.get_symbol(n) for n, c in
               enumerate(dict.fromkeys(equation.replace(",", "").replace("->", "").replace(".", "")))}
    return "".join(letters.get(c, c) for c in equation)


class _Linear(NamedTuple):
    """How a two-operand einsum is one ``torch.nn.functional.linear`` (`_linear_form`); each order is None where
    its axes already stand in it (no permutation to call)."""
    weight_at: int                      # the weight's position among the two operands
    order_a: tuple[int, ...] | None     # the array's axes, kept then contracted
    order_w: tuple[int, ...] | None     # the weight's axes, kept then contracted
    kept_a: int                         # how many kept axes the array has
    kept_w: int                         # and the weight
    order_out: tuple[int, ...] | None   # the output's order of the kept axes (the array's, then the weight's)


def _permutation(order: tuple[int, ...]) -> tuple[int, ...] | None:
    return None if order == tuple(range(len(order))) else order


@functools.lru_cache(maxsize=1024)
def _linear_form(equation: str, ranks: tuple[int, ...]) -> _Linear | None:
    """How a two-operand einsum is one ``torch.nn.functional.linear`` (an array with batch axes times a weight
    without them, contracted over the axes they share), or None; kept per (equation, ranks), since every
    projection of a plan asks it on every call."""
    inputs, output = equation.split("->")
    terms = inputs.split(",")
    if len(terms) != 2 or [("..." in t) for t in terms].count(True) != 1 or not output.startswith("..."):
        return None
    batched = 0 if "..." in terms[0] else 1
    extra = ranks[batched] - (len(terms[batched]) - 3)
    if extra < 0:
        return None
    ellipsis = "".join(chr(0xE000 + n) for n in range(extra))       # private-use symbols for the batch axes
    a, w, out = terms[batched].replace("...", ellipsis), terms[1 - batched], output.replace("...", ellipsis)
    if len(set(a)) != len(a) or len(set(w)) != len(w) or len(w) != ranks[1 - batched]:
        return None
    contracted = [c for c in w if c in a and c not in out]
    kept_w = [c for c in w if c not in a]
    kept_a = [c for c in a if c not in w]
    if not contracted or any(c not in out for c in kept_w + kept_a) or len(contracted) + len(kept_w) != len(w):
        return None
    order = kept_a + kept_w
    return _Linear(1 - batched, _permutation(tuple(a.index(c) for c in kept_a + contracted)),
                   _permutation(tuple(w.index(c) for c in kept_w + contracted)), len(kept_a), len(kept_w),
                   _permutation(tuple(order.index(c) for c in out)))


@functools.cache
def _state() -> tuple[Any, Any, Any]:
    """(torch.is_grad_enabled, torch's test for active torch.func transforms or None, torch.autograd.forward_ad),
    looked up once: every compiled call asks them, and the lookups cost as much as the questions."""
    import torch
    return (torch.is_grad_enabled, getattr(torch._C, "_are_functorch_transforms_active", None),
            torch.autograd.forward_ad)


@functools.lru_cache(maxsize=16)
def _cuda_name(device: Any) -> str:
    """The model of a CUDA device (asked once per device: every scan called with auto asks its rates)."""
    import torch
    return str(torch.cuda.get_device_name(device))


def is_fake(a: Any) -> bool:
    """True for torch's fake tensors (shapes without numbers: a custom operator's fake body computes on them, whose
    values no step may ask for).  A plain tensor that wraps none (torch's functionalization and torch.func wrap
    theirs in plain tensors too) is answered without torch's full test, which costs a microsecond."""
    torch = sys.modules.get("torch")
    if torch is not None and type(a) is torch.Tensor and not torch._is_functional_tensor(a) and \
            not torch._C._functorch.is_functorch_wrapped_tensor(a):
        return False
    fake_tensor = getattr(getattr(torch, "_subclasses", None), "fake_tensor", None)
    return fake_tensor is not None and fake_tensor.is_fake(a)


def _deterministic_sums_needed(torch: Any, a: Any) -> bool:
    """Whether a running sum of tensor `a` must avoid ``torch.cumsum``: deterministic algorithms are asked for, and
    `a` holds floating or complex numbers off the CPU (whose cumsum torch's deterministic mode refuses on CUDA)."""
    return bool(torch.are_deterministic_algorithms_enabled()) and a.device.type != "cpu" and (
        a.is_floating_point() or a.is_complex())


def _operand(torch: Any, v: Any, like: Any) -> Any:
    """`v` for an elementwise torch function beside tensor `like`: a tensor as it is, a number (numpy's, or a 0-d
    array) as a Python number, an array as a tensor in `like`'s dtype and place."""
    if torch.is_tensor(v):
        return v
    array = np.asarray(v)
    return array.item() if array.ndim == 0 else torch.as_tensor(array, dtype=like.dtype, device=like.device)


def _recordable(a: Any) -> bool:
    """Whether a C loop may write tensor `a`'s results: not a fake tensor (no memory), and not while torch.jit.trace
    records (it sees torch's operations only, so a result a loop wrote would be kept as a constant of the trace)."""
    return not is_fake(a) and not sys.modules["torch"].jit.is_tracing()


def torch_compiling() -> bool:
    """True while torch.compile or torch.jit.trace traces the caller (False where torch is not imported: it is not
    imported to ask).  Both record torch's operations only: a C loop's writes to a tensor they would miss."""
    torch = sys.modules.get("torch")
    return torch is not None and (getattr(torch.compiler, "is_compiling", bool)() or torch.jit.is_tracing())


def _empty_transform(a: Any, size: int, axis: int, real: bool = False) -> Any:
    """The transform of an empty `a` (oneMKL, torch's CPU FFT, refuses a batch of none): `size` along `axis`,
    complex, or `real` (an inverse real transform), joined to `a`'s autograd graph."""
    shape = list(a.shape)
    shape[axis] = size
    zero = a.sum() * (1 + 0j)
    zero = zero.real if real else zero
    return zero.new_zeros(shape) + zero


def traced_as_one_operator(arrays: Sequence[Any], batch_axis: int | None = 0) -> bool:
    """Whether a traced call (`torch_compiling`) on `arrays` is to be one operator of the graph: always under
    torch.compile, whose tracer (Dynamo) cannot follow the library's code; under torch.export's default
    (non-strict) tracer only where a symbol is not a batch (a dynamic length: the library builds plans and constants
    per length; `example_sizes.batches_only`: the batch is on axis `batch_axis`, or any for None).  Where every size
    is a number or a batch, export follows the library's own torch operations (deciding at the example's batch), so
    the exported program holds torch's operators only and runs in any process, without the library."""
    compiler = sys.modules["torch"].compiler
    exporting = getattr(compiler, "is_exporting", bool)() and \
        not getattr(compiler, "is_dynamo_compiling", compiler.is_compiling)()           # strict export: Dynamo
    return not exporting or not batches_only([tuple(a.shape) for a in arrays], batch_axis)


def outside_torch_compile(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, run as it is where torch.compile traces it (at a graph break; ``torch.compiler.disable``): the
    library's checks, caches, ctypes calls and in-place buffers are not code its tracer follows, and torch's
    autograd sees through the call all the same.  Elsewhere one question costs the call (torch is not imported to
    ask it)."""
    @functools.wraps(function)
    def entry(*arguments: Any, **options: Any) -> Any:
        if torch_compiling():
            return sys.modules["torch"].compiler.disable(function)(*arguments, **options)
        return function(*arguments, **options)
    return entry


def _transformed() -> bool:
    """True when a torch.func transform is active or a forward-mode dual level is open.  Both are torch's private
    state; where a torch release does not have it, True (the cautious answer)."""
    _, transforms, forward_ad = _state()
    level = getattr(forward_ad, "_current_level", None)
    return transforms is None or transforms() or not isinstance(level, int) or level >= 0


_REQUIRES_GRAD = operator.attrgetter("requires_grad")


def _fused_attention(q: Any, k: Any, v: Any, attn_mask: Any, is_causal: bool, scale: float) -> Any:
    """torch's scaled_dot_product_attention; where forward-mode differentiation (torch.func.jvp, jacfwd) meets a
    backend without it (flash and memory-efficient attention: "Trying to use forward AD with ..."), the math
    backend's, which has it."""
    import torch
    try:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=is_causal, scale=scale)
    except NotImplementedError as error:
        if "forward AD" not in str(error):              # another kernel's gap is torch's to report
            raise
        # sdpa_kernel sets process-wide flags: another thread's attention meanwhile runs the math backend too
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=is_causal,
                                                                    scale=scale)


def _batched(gradient: Any) -> bool:
    """True for a gradient of torch's vectorised VJPs (``is_grads_batched``, ``jacobian(vectorize=True)``): a
    batched tensor of torch's private kind, which has no memory of its own to hand a loop (False where a torch
    release does not tell)."""
    import torch
    tells = getattr(getattr(torch._C, "_functorch", None), "is_legacy_batchedtensor", None)
    return bool(tells is not None and tells(gradient))


def _needs_grad(*tensors: Any) -> bool:
    """True when grad mode is on and one of the tensors requires grad."""
    return _state()[0]() and any(map(_REQUIRES_GRAD, tensors))


def _rows(a: Any, columns: int) -> tuple[Any, tuple[int, int, int]]:
    """a as (rows, columns) and where the loop reads it: (address, row stride, column stride).  A tensor without
    memory of its own (a zero tensor of forward mode; sparse, meta or fake tensors raise here) is refused."""
    a = (a if a.dim() == 2 else a.reshape(-1, columns)).resolve_neg()
    address = a.data_ptr()
    if not address and a.numel():
        raise TypeError(f"the compiled loop reads tensors' memory, got a {a.dtype} tensor of shape {tuple(a.shape)} "
                        f"without any (a zero tensor); use strategy 'gather' or 'codegen' for it")
    return a, (address, *a.stride())


def _c_loop(level: Any, x: Any, y: Any) -> Any:
    """The C loop (`kernels.native.clib.sparse_product_at`) on CPU tensors, reading their memory in place."""
    shape = level.factor.shape
    (x, xs), (y, ys) = _rows(x, shape[0]), _rows(y, shape[1])
    z = x.new_empty((x.shape[0], shape[2]))
    clib.sparse_product_at(level.terms, TORCH.dtype(x), x.shape[0], shape, xs, ys, z.data_ptr(), openmp=True)
    return z


def _triton_loop(level: Any, x: Any, y: Any) -> Any:
    """The Triton kernel (`kernels.native.triton_loop`) on GPU tensors (CPU tensors: in Triton's interpreter)."""
    from ..native import triton_loop
    d1, d2, _ = level.factor.shape
    return triton_loop.sparse_product(level.terms, x.reshape(-1, d1).resolve_neg(), y.reshape(-1, d2).resolve_neg(),
                                      level.factor.shape)


def _triton_unavailable() -> str | None:
    """Why the Triton kernel cannot run (imported on first use, with Triton)."""
    from ..native import triton_loop
    return triton_loop.unavailable()


class Loop(NamedTuple):
    """The compiled loop on one type of device: ``run(level, x, y)`` on real tensors with one batch shape and the
    level's axis last (of one dtype, float32 or float64), returning a new (rows, d3) tensor, and ``unavailable()``,
    why it cannot run here or None."""
    run: Callable[[Any, Any, Any], Any]
    unavailable: Callable[[], str | None]


#: The compiled loop for each type of device (`torch.device.type`): the C loop on the CPU, the Triton kernel on CUDA.
LOOPS = {"cpu": Loop(_c_loop, build.unavailable), "cuda": Loop(_triton_loop, _triton_unavailable)}


def _loop(level: Any, x: Any, y: Any) -> Any:
    """The level's compiled loop (`LOOPS`) on real tensors with one batch shape and its axis last (x float32 or
    float64, `TorchEngine.runs_compiled`; operands of two dtypes are promoted); the result is a new tensor."""
    batch = x.shape[:-1]
    if x.dtype != y.dtype:
        import torch
        dtype = torch.promote_types(x.dtype, y.dtype)
        dtype = dtype if dtype in (torch.float32, torch.float64) else torch.float64
        x, y = x.to(dtype), y.to(dtype)
    z = LOOPS["cpu" if x.is_cpu else x.device.type].run(level, x, y)     # is_cpu: a tenth of device.type's cost
    return z if len(batch) == 1 else z.reshape(*batch, level.factor.shape[2])


def _signed(function: Any) -> Any:
    """An autograd function whose forward keeps its signature (PEP 362's ``__signature__``): torch's ``apply`` binds
    the arguments to it on every call, and rebuilding it each time cost a third of a small call's overhead."""
    function.forward.__signature__ = inspect.signature(function.forward)
    return function


def _loop_backward(ctx: Any, gradient: Any) -> tuple[Any, Any, None]:
    """The VJPs of the compiled loop (both autograd functions' backward): the transposed levels' loops, tracked only
    for create_graph."""
    x, y = ctx.saved_tensors
    dx = TORCH.compiled_loop(ctx.level.transposed(0), y, gradient) if ctx.needs_input_grad[0] else None
    dy = TORCH.compiled_loop(ctx.level.transposed(1), x, gradient) if ctx.needs_input_grad[1] else None
    return dx, dy, None


@functools.cache
def _tracked_loop_function() -> Any:
    """The compiled loop's autograd function for plain autograd: its forward takes ctx, a form whose ``apply`` cost
    half that of `_loop_function`'s (6 against 11 microseconds), which torch.func cannot transform."""
    import torch

    class TrackedLoop(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, y: Any, level: Any) -> Any:
            ctx.save_for_backward(x, y)
            ctx.level = level
            return _loop(level, x, y)

        backward = staticmethod(_loop_backward)

    return TrackedLoop


@functools.cache
def _loop_function() -> Any:
    """The compiled loop's autograd function under torch.func transforms and forward mode (made on first use: torch
    is imported then)."""
    import torch

    @_signed
    class Loop(torch.autograd.Function):
        @staticmethod
        def forward(x: Any, y: Any, level: Any) -> Any:
            return _loop(level, x, y)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:      # the form torch.func transforms need
            x, y, level = inputs
            ctx.save_for_backward(x, y)
            ctx.level = level

        backward = staticmethod(_loop_backward)

        @staticmethod
        def vmap(info: Any, in_dims: Any, x: Any, y: Any, level: Any) -> Any:
            """torch.func.vmap: the mapped axis leads both operands (expanded where one is not mapped) and joins
            the batch."""
            x, y = (a.unsqueeze(0).expand(info.batch_size, *a.shape) if dim is None else a.movedim(dim, 0)
                    for a, dim in zip((x, y), in_dims[:2]))
            return Loop.apply(x, y, level), 0

    return Loop


class _ScanLoop(NamedTuple):
    """A C loop of the scans floor on CPU tensors' memory (`_scan_loop_function`): ``forward(*arrays, keep=...)``
    its result and, with keep, the checkpoints its gradient takes (or None), ``backward(*arrays, gradient,
    checkpoints)`` the arrays' gradients, and ``reference(*tensors)`` the same by torch's operations (for
    create_graph, vectorised VJPs and torch.func transforms)."""
    forward: Callable[..., tuple[np.ndarray, np.ndarray | None]]
    backward: Callable[..., tuple[np.ndarray, ...]]
    reference: Callable[..., Any]


def _memory(a: Any) -> np.ndarray:
    """The CPU tensor's memory as a numpy array, as a C loop reads it (by DLPack: no number read by Python)."""
    return np.from_dlpack(a.detach().resolve_neg())


@functools.cache
def _scan_loop_function() -> Any:
    """The autograd function of a `_ScanLoop` (made on first use: torch is imported then): its forward the loop,
    keeping the checkpoints for its VJP, the loop's gradient; or torch's own operations' VJP where it is to be
    differentiated (create_graph) or is vectorised (``is_grads_batched``, ``jacobian(vectorize=True)``: a batched
    gradient has no memory of its own).  Its outputs: the result, and the checkpoints (none: an empty vector)."""
    import torch

    @_signed
    class ScanLoop(torch.autograd.Function):
        @staticmethod
        def forward(loop: _ScanLoop, *tensors: Any) -> Any:
            result, kept = loop.forward(*map(_memory, tensors), keep=True)
            return torch.from_numpy(result), torch.empty(0) if kept is None else torch.from_numpy(kept)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.loop = inputs[0]
            ctx.mark_non_differentiable(output[1])
            ctx.save_for_backward(*inputs[1:], output[1])

        @staticmethod
        def backward(ctx: Any, gradient: Any, _: Any) -> Any:
            *tensors, kept = ctx.saved_tensors
            if torch.is_grad_enabled() or _batched(gradient):
                grads = torch.func.vjp(ctx.loop.reference, *tensors)[1](gradient)
            else:
                grads = tuple(map(torch.from_numpy, ctx.loop.backward(
                    *map(_memory, tensors), _memory(gradient.contiguous()), _memory(kept) if kept.dim() > 1 else None)))
            return (None, *grads)

    return ScanLoop


def _scan_loop(loop: _ScanLoop, *tensors: Any) -> Any:
    """`loop` on CPU tensors: its autograd function where autograd tracks them, the loop alone where nothing does.
    Under torch.func transforms and forward mode, its `reference`, which they see through at any depth: torch runs
    a custom function's jvp rule with the outer forward levels off, so a jvp of a jvp through one gave 0."""
    import torch
    if _transformed():
        return loop.reference(*tensors)
    if not _needs_grad(*tensors):
        return torch.from_numpy(loop.forward(*map(_memory, tensors), keep=False)[0])
    return _scan_loop_function().apply(loop, *tensors)[0]


class TorchEngine(Engine):
    """See the module docstring."""

    name = "torch"
    native_pairs = True
    promotes = False
    #: Fitted on this project's 2-core machine (``benchmarks/strategies.py --engine torch --fit``): calls cost about
    #: 4x numpy's, while elementwise work and small batched products run on both cores.  gemm64 raised from the
    #: fit's 18e9 once dense wrote its blocks in place: random dense d = 64 at 64 to 4,096 rows then took 0.74-0.89x
    #: the compiled loop's time (0.72-1.04x forward and backward), d = 32 still 1.04-1.33x, and 22e9 gives dense
    #: the first and the loop the second, no built-in algebra's choice changing.  The compiled loop's entry costs
    #: about as on numpy (translation(8) and complex numbers at 64 rows: 20-26 microseconds in all); priced as 15
    #: torch calls, it had lost to fft and codegen at 64 to 1,024 rows, which took 1.7-2.3x its time.
    #: The scans (forward and backward, float32, 2 cores): the loop is 3-8x slower at 16-256 elements per step, and
    #: faster from about 4,096 (13.5 against 17.1 ms at 196 steps; 103 against 410 ms at 65,536 elements); the
    #: chunked form loses to the loop on the CPU, whose caches hold a step's arrays (3-10x at 1,024-4,096 steps of
    #: 16,384 elements).
    #: FFTs (``transform``) are priced as the per-row loops (not measured apart on torch).
    rates = Rates(call=5e-6, bandwidth=17e9, gemm64=22e9, gemm32=75e9, loop=15e9, row=30e-9, transform=15e9,
                  compiled64=25e9,
                  compiled32=30e9, compiled_call=20e-6, loop_scan_width=4096,
                  origin="shipped, fitted on the project's 2-core machine")

    @property
    def xp(self) -> Any:  # type: ignore[override]  # Engine.xp is None: the abstract engine has no namespace
        import torch
        return torch

    def owns(self, a: Any) -> bool:
        return type(a).__module__.startswith("torch") and hasattr(a, "detach")

    def value(self, a: Any) -> np.ndarray:
        """bfloat16, which numpy has not, read as float32 (exactly)."""
        a = a.detach()
        return (a.float() if a.dtype == self.xp.bfloat16 else a).cpu().numpy()

    def unstack(self, a: Any) -> list[Any]:
        """One backward node for every slice: indexing slices one at a time makes each slice's gradient a
        full-size array (a selective scan's backward ran 60 times slower than its forward)."""
        return list(a.unbind(0))

    def device(self, a: Any) -> Any:
        return a.device

    def place(self, a: Any) -> str:
        device = a.device
        return f"cuda/{_cuda_name(device)}" if device.type == "cuda" else device.type

    def shipped_rates(self, place: str) -> Rates:
        return CUDA_RATES if place.startswith("cuda") else self.rates

    def synchronize(self, a: Any) -> Any:
        if a.device.type == "cuda":
            self.xp.cuda.synchronize(a.device)
        return a

    def unusable(self, a: Any) -> str | None:
        if a.device.type == "meta":
            return "a meta tensor, which has a shape but no values to compute with"
        if a.layout != self.xp.strided:
            return f"a tensor of layout {a.layout} (convert it with .to_dense())"
        return None

    def runs_compiled(self, a: Any) -> bool:
        """Real float32 and float64 tensors on a device with a compiled loop that runs here (`LOOPS`: the CPU's C
        loop, CUDA's Triton kernel where Triton is installed), outside torch.jit.trace (`_recordable`)."""
        loop = LOOPS.get(a.device.type)
        return a.dtype in (self.xp.float32, self.xp.float64) and loop is not None and loop.unavailable() is None \
            and _recordable(a)

    def scans_compiled(self, a: Any) -> bool:
        return bool(a.device.type == "cpu" and a.dtype in (self.xp.float32, self.xp.float64)) and _recordable(a)

    def compiled_loop(self, level: Any, x: Any, y: Any) -> Any:
        """The level's loop (`_loop`) on real tensors with one batch shape and its axis last: one autograd
        function whose VJPs are the transposed levels' loops where autograd tracks the tensors
        (`_tracked_loop_function`), the loop alone where nothing does.  Under torch.func transforms and forward
        mode, the level's `substitute` (codegen: torch operations they see through at any depth; torch
        runs a custom function's jvp rule with the outer forward levels off), or where it has none,
        `_loop_function`, which vmap and reverse mode transform and forward mode refuses."""
        if _transformed():
            substitute = level.substitute
            return _loop_function().apply(x, y, level) if substitute is None else substitute(x, y)
        if _needs_grad(x, y):
            return _tracked_loop_function().apply(x, y, level)
        return _loop(level, x, y)

    def compiled_scan(self, x: Any, degree: int, order: int, sequences: bool, reference: Any) -> Any:
        """`kernels.native.clib.tensor_scan` on CPU tensors, its VJP the C gradient loop (`_scan_loop`)."""
        return _scan_loop(_ScanLoop(
            functools.partial(clib.tensor_scan_keeping, degree=degree, order=order, sequences=sequences, openmp=True),
            lambda x, g, kept: (clib.tensor_scan_vjp(x, g, degree, order, sequences, openmp=True, checkpoints=kept),),
            functools.partial(reference, degree=degree, order=order, return_sequences=sequences)), x)

    def compiled_low_rank(self, x: Any, V: Any, parent: Any, level: Any, sequences: bool, reference: Any) -> Any:
        """`kernels.native.clib.low_rank_scan` on CPU tensors, its VJP the C gradient loop (`_scan_loop`)."""
        return _scan_loop(_ScanLoop(
            lambda x, V, keep: clib.low_rank_scan_keeping(x, V, parent, level, sequences, openmp=True, keep=keep),
            lambda x, V, g, kept: clib.low_rank_scan_vjp(x, V, parent, level, g, sequences, openmp=True,
                                                         checkpoints=kept),
            reference), x, V)

    def detached(self, a: Any) -> Any:
        return a.detach()

    def dtype(self, a: Any) -> np.dtype:
        """The numpy dtype of `a`'s: float32 for bfloat16, and a void dtype (kind "V", as ml_dtypes gives JAX's
        float8) for those numpy lacks (complex32, the float8 and quantised ones), which the checks refuse by name."""
        found = _NUMPY_DTYPES.get(a.dtype)
        if found is None:
            name = str(a.dtype).split(".")[-1]
            try:
                found = np.dtype(_STAND_INS.get(name, name))
            except TypeError:
                found = None
            if found is None or found.isbuiltin != 1:         # ml_dtypes names some of them, as numpy dtypes
                found = np.dtype(f"V{a.element_size()}")      # of its own (float8_e5m2 of kind "f")
            _NUMPY_DTYPES[a.dtype] = found
        return found

    def native_dtype(self, dtype: DTypeLike, like: Any = None) -> Any:
        return getattr(self.xp, np.dtype(dtype).name)

    def like(self, dtype: DTypeLike, device: Any = None) -> Any:
        """A 0-d tensor of `dtype` on `device` (a torch.device or its name: "cpu", "cuda", "cuda:1", "mps")."""
        torch = self.xp
        try:
            place = torch.device("cpu" if device is None else device)
        except (RuntimeError, TypeError) as error:
            raise ValueError(f"device: expected a torch device such as 'cpu' or 'cuda', got {device!r:.60}") \
                from error
        if place.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device: {str(place)!r} asked for, but this torch sees no CUDA device "
                             f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})")
        try:
            return torch.zeros((), dtype=self.native_dtype(dtype), device=place)
        except RuntimeError as error:
            raise ValueError(f"device: torch cannot place arrays on {str(place)!r}: {error}") from error

    def convert(self, value: Any, like: Any) -> Any:
        """`value` as a tensor like `like`; a normal tensor under ``torch.inference_mode`` too: an inference tensor
        kept as a constant (`constant`) failed every later training step that saved it for backward."""
        if self.xp.is_inference_mode_enabled():
            with self.xp.inference_mode(False):
                return self._converted(value, like)
        return self._converted(value, like)

    def _converted(self, value: Any, like: Any) -> Any:
        torch = self.xp
        value = np.array(value)                          # a writable copy (masks and constants are read-only)
        device = getattr(like, "device", None)
        if value.dtype.kind == "f":                      # complex like: torch's matrix products do not promote
            dtype = like.dtype if like is not None and (like.dtype.is_floating_point or like.dtype.is_complex) \
                else torch.float64
            return torch.as_tensor(value, device=device).to(dtype)
        if value.dtype.kind == "c":
            return torch.as_tensor(value, device=device)
        return torch.as_tensor(value, device=device)

    def concrete(self, a: Any) -> bool:
        """False for fake tensors (a custom operator's fake body: shapes without numbers) and under torch.func
        transforms (whose wrapped tensors have no memory to read)."""
        return not is_fake(a) and not _transformed()

    def readable(self, a: Any) -> bool:
        """Not a fake tensor, nor one a torch.func transform wraps."""
        return not is_fake(a) and not self.xp._C._functorch.is_functorch_wrapped_tensor(a)

    def constant(self, value: Any, like: Any) -> Any:
        """`Engine.constant`, kept only when made outside torch.func transforms and forward mode, and not for a fake
        tensor: a tensor made under a transform is wrapped at its level, and kept, it escaped into the next transform
        (a hessian after a jvp failed an internal assertion of torch's); a fake one, kept, met real ones."""
        return self.convert(value, like) if _transformed() or is_fake(like) else super().constant(value, like)

    def _placement(self, like: Any) -> Any:
        return like.dtype, like.device

    def zeros(self, shape: Sequence[int], like: Any) -> Any:
        return self.xp.zeros(tuple(shape), dtype=like.dtype, device=like.device)

    def empty(self, shape: Sequence[int], like: Any) -> Any:
        return self.xp.empty(tuple(shape), dtype=like.dtype, device=like.device)

    def in_place(self, *arrays: Any) -> bool:
        """True outside torch.func transforms and forward mode when autograd records none of the tensors."""
        return not _transformed() and not _needs_grad(*arrays)

    def threads(self) -> int:
        return int(self.xp.get_num_threads())

    def cast(self, a: Any, dtype: Any) -> Any:
        return a.to(dtype)

    def promoted(self, x: Any, y: Any) -> tuple[Any, Any]:
        dtype = self.xp.result_type(x, y)
        return x.to(dtype), y.to(dtype)

    def floats(self, mask: Any, like: Any) -> Any:
        return mask.to(like.dtype if like is not None else self.xp.float64)

    def contiguous(self, a: Any) -> Any:
        return a.contiguous()

    def take(self, a: Any, indices: Any, axis: int) -> Any:
        """`Engine.take`; read-only indices (the library's own tables, `kernels.arrays.constants.frozen`) are a
        constant, converted onto the device once, others at each call."""
        indices = np.asarray(indices)
        index = self.xp.as_tensor(indices, device=a.device) if indices.flags.writeable else \
            self.constant(indices, a)
        return self.xp.index_select(a, axis % a.ndim, index.reshape(-1)).reshape(
            tuple(a.shape[:axis % a.ndim]) + np.shape(indices) + tuple(a.shape[axis % a.ndim + 1:]))

    def where(self, condition: Any, a: Any, b: Any) -> Any:
        """``torch.where``; a number beside a tensor is handed to it as a number, which a GPU's kernel takes as its
        argument (a tensor made of it on a GPU is a copy from the host, which waits for the queue)."""
        torch = self.xp
        like = a if torch.is_tensor(a) else b if torch.is_tensor(b) else condition
        return torch.where(condition, _operand(torch, a, like), _operand(torch, b, like))

    def maximum(self, a: Any, b: Any) -> Any:
        """``torch.maximum``, or ``clamp_min`` of a number (no tensor made of it: `where`)."""
        b = _operand(self.xp, b, a)
        return self.xp.maximum(a, b) if self.xp.is_tensor(b) else self.xp.clamp_min(a, b)

    def amax(self, a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        return self.xp.amax(a, dim=axis, keepdim=keepdims)

    def sum(self, a: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        if axis is None:
            return a.sum()
        return self.xp.sum(a, dim=axis, keepdim=keepdims)

    def transpose(self, a: Any, axes: Sequence[int]) -> Any:
        return a.permute(*axes)

    def expand_dims(self, a: Any, axis: int) -> Any:
        return a.unsqueeze(axis)

    def moveaxis(self, a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
        """torch's movedim: its alias moveaxis, given ints, has no batching rule (torch.func.vmap of a graded or
        fft product failed: "Batching rule not implemented for aten::moveaxis.int")."""
        return self.xp.movedim(a, source, destination)

    def broadcast_to(self, a: Any, shape: Sequence[int]) -> Any:
        return a.expand(*shape)

    def rfft(self, a: Any, n: int | None = None, axis: int = -1) -> Any:
        if a.numel() == 0:
            return _empty_transform(a, (a.shape[axis] if n is None else n) // 2 + 1, axis)
        return self.xp.fft.rfft(a, n=n, dim=axis)

    def irfft(self, a: Any, n: int | None = None, axis: int = -1) -> Any:
        if a.numel() == 0:
            return _empty_transform(a, 2 * (a.shape[axis] - 1) if n is None else n, axis, real=True)
        return self.xp.fft.irfft(a, n=n, dim=axis)

    def fft(self, a: Any, axis: int = -1) -> Any:
        return _empty_transform(a, a.shape[axis], axis) if a.numel() == 0 else self.xp.fft.fft(a, dim=axis)

    def ifft(self, a: Any, axis: int = -1) -> Any:
        return _empty_transform(a, a.shape[axis], axis) if a.numel() == 0 else self.xp.fft.ifft(a, dim=axis)

    def add_at(self, z: Any, rows: int | slice | np.ndarray, w: Any, scale: float = 1.0) -> Any:
        """In place (z is the level's own fresh tensor: safe for autograd), except under torch.func transforms and
        forward mode, whose batched or dual w cannot be written into z: there one ``index_add``."""
        if not _transformed():
            z[rows] += w if scale == 1 else scale * w
            return z
        index = np.arange(z.shape[0])[rows] if isinstance(rows, slice) else np.atleast_1d(rows)
        w = w if isinstance(rows, slice) or np.ndim(rows) else w[None]
        return z.index_add(0, self.xp.as_tensor(index, device=z.device), w, alpha=scale)

    def segment_sum(self, a: Any, segments: np.ndarray, count: int) -> Any:
        """One ``index_add`` into zeros (out of place: torch.func transforms see through it)."""
        return self.zeros((count,) + tuple(a.shape[1:]), a).index_add(0, self.constant(segments, a), a)

    def cumsum(self, a: Any, axis: int) -> Any:
        """``torch.cumsum``; where torch's deterministic algorithms are asked for, of floating numbers off the CPU,
        the log-depth prefix scan of additions (`Engine.associative_scan`): CUDA's floating cumsum, forward and
        backward, has no deterministic kernel and raises there."""
        if _deterministic_sums_needed(self.xp, a):
            return self.associative_scan(lambda p, q: (p[0] + q[0],), (a,), axis)[0]
        return self.xp.cumsum(a, axis)

    def softmax(self, a: Any, axis: int = -1, mask: Any = None, out: Any = None) -> Any:
        """torch's fused softmax, masked entries set to -inf first; rows the mask empties come out 0."""
        torch = self.xp
        if mask is None:
            return torch.softmax(a, axis)
        weights = torch.softmax(a.masked_fill(~mask, float("-inf")), axis)
        return weights.masked_fill(~mask.any(axis, keepdim=True), 0.0)

    def pointwise(self, name: str, a: Any) -> Any:
        """torch's own kernels (one call, a cheap backward) for the maps it has exactly; the rest as written."""
        functional = self.xp.nn.functional
        native = {"relu": self.xp.relu, "sigmoid": self.xp.sigmoid, "silu": functional.silu, "tanh": self.xp.tanh,
                  "exp": self.xp.exp}.get(name)
        return native(a) if native is not None else super().pointwise(name, a)

    def layer_norm(self, a: Any, eps: float = 1e-5) -> Any:
        return self.xp.nn.functional.layer_norm(a, a.shape[-1:], eps=eps)

    def log_softmax(self, a: Any, axis: int = -1) -> Any:
        return self.xp.log_softmax(a, axis)

    def contract(self, equation: str, *arrays: Any) -> Any:
        """An array with batch axes times a weight (a projection): one ``linear`` call, whose backward is two
        matrix products; other pairs: torch.einsum (labels made letters); more operands go pairwise along the
        cached opt_einsum path (`kernels.arrays.contract`), since torch.einsum would search for a path on every call."""
        if len(arrays) > 2:
            return super().contract(equation, *arrays)
        form = _linear_form(equation, tuple(len(a.shape) for a in arrays))
        if form is not None:
            a, w = arrays[1 - form.weight_at], arrays[form.weight_at]
            a = a if form.order_a is None else a.permute(form.order_a)
            w = w if form.order_w is None else w.permute(form.order_w)
            batch, kept = a.shape[:form.kept_a], w.shape[:form.kept_w]
            if a.shape[form.kept_a:] == w.shape[form.kept_w:]:       # the contracted axes: merged into one
                size = math.prod(w.shape[form.kept_w:])
                a = a if len(a.shape) == form.kept_a + 1 else a.reshape(*batch, size)
                w = w if len(w.shape) == 2 and form.kept_w == 1 else w.reshape(math.prod(kept), size)
                product = self.xp.nn.functional.linear(a, w)
                product = product if form.kept_w == 1 else product.reshape(*batch, *kept)
                return product if form.order_out is None else product.permute(form.order_out)
        return self.xp.einsum(_lettered(equation), *arrays)

    def attention(self, q: Any, k: Any, v: Any, keep: Any = None, causal: bool = False, scale: float = 1.0) -> Any:
        """torch's scaled_dot_product_attention, on rows of unit stride, keeping a non-finite key or value from the
        queries that do not see it (torch's kernel multiplies it by a weight of 0).  Where reading one number back
        costs less than the passes that avoid it (`Rates.host_read`: on the CPU), one read checks the keys and
        values, and a non-finite one gives None (the plan's own steps then run, exactly); elsewhere (a GPU, torch.func
        transforms) the non-finite keys are zeroed and each query that sees one comes out NaN, as a traced plan's
        masked contraction does (an exact infinity is not kept).  A non-finite query spoils only its own row, as in
        the plan."""
        import torch
        q, k, v = (a if a.stride(-1) == 1 else a.contiguous() for a in (q, k, v))
        if is_fake(k):
            return _fused_attention(q, k, v, keep, causal, scale)
        if self.concrete(k) and not self.reads_dearly(k, _AVOIDING_PASSES * (k.numel() + v.numel()) * k.element_size()):
            # one check, NaN and inf propagating through the sum; detached, autograd records none of it
            if not math.isfinite(float(k.detach().sum() + v.detach().sum())):
                return None
            return _fused_attention(q, k, v, keep, causal, scale)
        bad = ~(torch.isfinite(k).all(-1) & torch.isfinite(v).all(-1))                   # (..., keys)
        k, v = (torch.where(bad[..., None], 0.0, a) for a in (k, v))
        out = _fused_attention(q, k, v, keep, causal, scale)
        if causal:
            seen = torch.cumsum(bad, -1) > 0                                          # a key at or before the query
        elif keep is not None:
            seen = torch.matmul(keep.to(out.dtype), bad[..., None].to(out.dtype))[..., 0] > 0
        else:
            seen = bad.any(-1, keepdim=True)                                          # every query sees every key
        return torch.where(seen[..., None], torch.nan, out)

    def flip(self, a: Any, axis: int) -> Any:
        return self.xp.flip(a, (axis,))

    def stack(self, arrays: Iterable[Any], axis: int = 0) -> Any:
        return self.xp.stack(list(arrays), dim=axis)

    def concatenate(self, arrays: Iterable[Any], axis: int = 0) -> Any:
        return self.xp.cat(list(arrays), dim=axis)


#: The torch engine.
TORCH = TorchEngine()
