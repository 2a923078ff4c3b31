"""`Engine`: the contract an array library meets to run plans and kernels.

An engine speaks numpy's vocabulary (``sum(a, axis=...)``, ``moveaxis``, ``rfft(a, n, axis)``) whatever its
library, so that a plan's steps, the strategies' levels and the hand kernels are written once.  The contract has
three parts:

* the array functions of `VOCABULARY`, each the function of that name in the engine's namespace `xp` (a module
  with numpy's API: autograd.numpy, jax.numpy, torch) unless the engine defines a method of its own;
* the methods below that raise NotImplementedError (what an array is, its numbers, dtype and device, conversion
  from numpy), which every engine defines;
* composite operations (contractions, gathers, relayouts, the masked softmax, pointwise maps, prefix scans) with
  defaults built from the first two (the modules beside this one: `contract`, `pointwise`, `normalisation`,
  `prefix_scan`), which an engine overrides where its library does better.

A new engine subclasses `Engine` and is added to `kernels.arrays.registry.ENGINES`, the one place engines are
listed.  Constants (structure constants, masks, index tables) are numpy arrays; `constant` converts one into the
library, dtype and device of a given array, once per (constant, dtype, device) in a bounded cache.

>>> from product_interactions.kernels.arrays import NUMPY
>>> sorted(VOCABULARY)[:4], NUMPY.moveaxis is NUMPY.xp.moveaxis
(['amax', 'broadcast_to', 'concatenate', 'conj'], True)
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .bounded_cache import BoundedCache
from .constants import placement
from .contract import contract
from .normalisation import masked_softmax
from .pointwise import FUNCTIONS
from .prefix_scan import prefix_scan
from .rates import NUMPY_RATES, Rates, stored_rates

#: Converted constants kept per engine.
CONSTANTS_KEPT = 256

#: The numpy functions every engine provides under the same name, with numpy's arguments: the namespace's own
#: (looked up once, then an attribute of the engine) unless the engine defines a method of that name.  No function
#: here makes an array from nothing (numpy's arange, ones): torch would make it on the CPU, whatever device the
#: operands are on; `Engine.zeros` and `Engine.constant` take the device from an array given.
VOCABULARY = {
    "amax": "largest entry along axes", "broadcast_to": "a read-only view broadcast to a shape",
    "concatenate": "arrays joined along an axis", "conj": "complex conjugate",
    "contiguous": "the array in C order (a copy only where it is not)", "cos": "cosine",
    "cumsum": "inclusive running sums along an axis", "einsum": "Einstein summation",
    "exp": "e^a", "expand_dims": "a new axis of size 1", "flip": "entries reversed along an axis",
    "imag": "imaginary part", "isfinite": "True where neither inf nor NaN", "log": "natural logarithm",
    "logaddexp": "log(e^a + e^b) without overflow", "matmul": "batched matrix product",
    "maximum": "elementwise maximum", "mean": "mean along axes", "moveaxis": "an axis moved elsewhere",
    "real": "real part", "reshape": "the same entries in another shape", "result_type": "the promoted dtype",
    "sqrt": "square root", "stack": "arrays joined along a new axis", "sum": "sum along axes",
    "swapaxes": "two axes exchanged", "tanh": "hyperbolic tangent", "transpose": "axes permuted",
    "where": "entries of a where a condition holds, else of b",
}


class Engine:
    """See the module docstring.  `name` is the library's name; `xp` its numpy-like namespace."""

    name = "abstract"
    xp = None
    #: What the library's calls, memory traffic and matrix products cost on the CPU: strategy="auto" ranks
    #: strategies by them (`kernels.products.cost`); `rates_for` gives another device's.
    rates = NUMPY_RATES
    #: True where the library's own einsum runs a two-operand step faster than `kernels.arrays.contract`'s rewrite of
    #: it into one matmul (torch: its einsum is that rewrite, in C++).
    native_pairs = False
    #: False where the library's operations refuse operands of two floating dtypes (torch's matrix products), so a
    #: plan's arrays must share one (`kernels.plans.plan.Plan.check` names the one that differs); numpy and JAX promote.
    promotes = True
    #: ``attention(q, k, v, keep, causal, scale)``: the library's fused softmax(scale q k^T) v over the keys `keep`
    #: (a bool (queries, keys) array, or None for all; `causal` for key <= query instead), q and k (..., n, e) and v
    #: (..., n, f) with equal leading axes; it returns None where it cannot keep a non-finite key away from the
    #: queries that do not see it.  None where the library has no such kernel (`kernels.plans.attend`).
    attention: Callable[..., Any] | None = None
    #: ``compiled_loop(level, x, y)``: the `kernels.products.strategies.compiled` level's loop on this library's arrays
    #: (the C loop on the CPU, a Triton kernel on a GPU), differentiable by its autodiff; None where its arrays cannot
    #: enter the loop (`Kernel` then runs gather or codegen in its place, and the rates price the loop out).
    compiled_loop: Callable[..., Any] | None = None
    #: ``compiled_scan(x, degree, order, sequences, reference)``: `kernels.native.clib.tensor_scan` on this library's
    #: (paths, length, d) arrays, differentiable by its autodiff; ``reference`` (same arguments) computes the same
    #: by the engine's operations, for gradients of gradients.  None where its arrays cannot enter the loop.
    compiled_scan: Callable[..., Any] | None = None
    #: ``compiled_low_rank(x, V, parent, level, sequences, reference)``: `kernels.native.clib.low_rank_scan` on this
    #: library's arrays, differentiable by its autodiff in x and V; ``reference(x, V)`` computes the same by the
    #: engine's operations, for gradients of gradients.  None where its arrays cannot enter the loop.
    compiled_low_rank: Callable[..., Any] | None = None
    #: ``branch(predicate, then, otherwise)``: ``then()`` where the 0-d boolean `predicate` holds, else
    #: ``otherwise()``, chosen when a staged program runs (JAX's ``lax.cond``), so that a traced predicate is never
    #: read.  None where the engine has none (its traced calls then take a form without a branch).
    branch: Callable[..., Any] | None = None

    def __init__(self) -> None:
        self._constants: BoundedCache[tuple[int, Any, str], tuple[np.ndarray, Any]] = BoundedCache(CONSTANTS_KEPT)
        self._rates: dict[str, Rates] = {}

    # ------------------------------------------------------------------ devices and their rates
    def place(self, a: Any) -> str:
        """The kind of device `a` lives on, named to tell machines apart ("cpu", "cuda/NVIDIA H200"): what rates
        are kept by."""
        return "cpu"

    def shipped_rates(self, place: str) -> Rates:
        """The rates the project ships for a device of this `place`."""
        return self.rates

    def rates_for(self, a: Any) -> Rates:
        """The rates of the device `a` lives on: the ones `kernels.arrays.calibrate` measured and kept for it, else
        the shipped ones (looked up once per place and process)."""
        place = self.place(a)
        found = self._rates.get(place)
        if found is None:
            shipped = self.shipped_rates(place)
            found = self._rates[place] = stored_rates(self.name, place, shipped) or shipped
        return found

    def staged(self, a: Any) -> bool:
        """Whether operations on `a` are being staged into one compiled program (``jax.jit``) rather than run one by
        one: such a program pays no dispatch per operation (`staged_rates`)."""
        return False

    def staged_rates(self, a: Any) -> Rates | None:
        """The rates of a program staged for compilation on `a`'s device; None where the library stages none."""
        return None

    def reads_dearly(self, a: Any, avoided: float) -> bool:
        """Whether reading a number of `a` back to the host costs more than moving `avoided` bytes on its device
        (`Rates.host_read` against its bandwidth): where it does, a step that would read to decide (whether values
        are finite) takes a form that needs no read."""
        rates = self.rates_for(a)
        return rates.host_read > avoided / rates.bandwidth

    def forget_rates(self) -> None:
        """Look the rates up again at the next `rates_for` (after a calibration)."""
        self._rates.clear()

    def synchronize(self, a: Any) -> Any:
        """`a`, once every operation queued on its device is done (a timer's fence; nothing to wait for here)."""
        return a

    # ------------------------------------------------------------------ arrays and their numbers
    def owns(self, a: Any) -> bool:
        """True when `a` is an array of this engine's library (traced ones included)."""
        raise NotImplementedError

    def value(self, a: Any) -> np.ndarray:
        """The plain numbers of `a` as numpy (detached: for checks that need no gradient)."""
        raise NotImplementedError

    def device(self, a: Any) -> Any:
        """Where `a` lives (None where the library has one place, or places arrays itself)."""
        return None

    def like(self, dtype: DTypeLike, device: Any = None) -> Any:
        """A 0-d array of `dtype` on `device` (None: the library's default place), for `convert` to place arrays
        by: a library with one place accepts None and "cpu"."""
        if device not in (None, "cpu"):
            raise ValueError(f"device: the {self.name} engine has only the CPU, got {device!r:.60}")
        return np.zeros((), np.dtype(dtype))

    def unusable(self, a: Any) -> str | None:
        """Why `a`, an array of this library, holds no values a kernel can read (a torch meta or sparse tensor),
        in words for an error; None for a usable one."""
        return None

    def runs_compiled(self, a: Any) -> bool:
        """True when `compiled_loop` takes `a` (on a device the loop reaches)."""
        return self.compiled_loop is not None

    def scans_compiled(self, a: Any) -> bool:
        """True when `compiled_scan` takes `a` (on a device the scan reaches)."""
        return self.compiled_scan is not None

    def detached(self, a: Any) -> Any:
        """`a` as an array of this library that no gradient flows through (a constant shift, say)."""
        raise NotImplementedError

    def dtype(self, a: Any) -> np.dtype:
        """The numpy dtype matching `a`'s."""
        return np.dtype(str(a.dtype).split(".")[-1])

    def native_dtype(self, dtype: DTypeLike, like: Any = None) -> Any:
        """The library's dtype for a numpy dtype."""
        return np.dtype(dtype)

    def convert(self, value: np.ndarray, like: Any) -> Any:
        """A numpy array as this library's array, floats in `like`'s floating or complex dtype (bools and ints keep
        theirs)."""
        raise NotImplementedError

    def constant(self, value: Any, like: Any) -> Any:
        """`convert`, cached by (the constant, dtype, device): a plan's constants cross over once."""
        value = np.asarray(value)
        key = (id(value), self._placement(like), value.dtype.kind)
        hit = self._constants.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        converted = self.convert(value, like)
        self._constants.put(key, (value, converted))
        return converted

    def _placement(self, like: Any) -> Any:
        return str(getattr(like, "dtype", None))

    def zeros(self, shape: Sequence[int], like: Any) -> Any:
        return self.convert(np.zeros(shape, self.dtype(like)), like)

    def empty(self, shape: Sequence[int], like: Any) -> Any:
        """An array of `shape` in `like`'s dtype and place whose values are to be written (zeros where the library
        has no cheaper form)."""
        return self.zeros(shape, like)

    def in_place(self, *arrays: Any) -> bool:
        """True when results for these operands may be written into buffers (``out=``): nothing traces or records
        them (False where an engine does not say so: JAX's arrays are immutable)."""
        return False

    def threads(self) -> int:
        """The threads this library's matrix products run on (1 where it does not say)."""
        return 1

    def common_dtype(self, arrays: Sequence[Any]) -> Any:
        """The dtype `arrays` meet in, by the library's promotion rules."""
        return functools.reduce(self.xp.promote_types,  # type: ignore[attr-defined]  # a concrete engine's namespace
                                [a.dtype for a in arrays])

    def promoted(self, x: Any, y: Any) -> tuple[Any, Any]:
        """x and y in their common dtype, by the library's promotion rules."""
        dtype = self.xp.result_type(x, y)  # type: ignore[attr-defined]  # a concrete engine's namespace
        return x.astype(dtype), y.astype(dtype)

    def cast(self, a: Any, dtype: Any) -> Any:
        """`a` in `dtype` (the library's), differentiably (`a` itself where it has it)."""
        return a if a.dtype == dtype else a.astype(dtype)

    def floats(self, mask: Any, like: Any) -> Any:
        """A bool array of this library as 0.0 / 1.0 in `like`'s floating dtype."""
        raise NotImplementedError

    def concrete(self, a: Any) -> bool:
        """True when `a` holds numbers now (False for arrays traced by a compiler, whose values are unknown)."""
        return True

    def readable(self, a: Any) -> bool:
        """True when `a`'s own numbers can be read now: `concrete`, asked of `a` alone (under torch.func transforms
        a tensor from outside them can be read, though `concrete` answers False there for every tensor)."""
        return self.concrete(a)

    # ------------------------------------------------------------------ numpy vocabulary
    def __getattr__(self, name: str) -> Any:
        """A function of `VOCABULARY` the engine does not define: its namespace's (looked up once, then an
        attribute of the engine: a call site pays no lookup)."""
        if name not in VOCABULARY or self.xp is None:
            raise AttributeError(f"{type(self).__name__} has no {name!r}: an engine provides the functions of "
                                 f"kernels.arrays.engine.VOCABULARY and the methods of Engine")
        found = getattr(self.xp, name)
        self.__dict__[name] = found
        return found

    def unstack(self, a: Any) -> list[Any]:
        """The slices a[0], a[1], ... along the first axis."""
        return [a[i] for i in range(a.shape[0])]

    def index(self, a: Any, i: int, axis: int) -> Any:
        """a[..., i, ...] with i on `axis` (the axis is dropped)."""
        return a[(slice(None),) * (axis % a.ndim) + (i,)]

    def take(self, a: Any, indices: Any, axis: int) -> Any:
        """The entries `indices` (a numpy int array) along `axis`."""
        return a[(slice(None),) * (axis % a.ndim) + (np.asarray(indices),)]

    def rfft(self, a: Any, n: int | None = None, axis: int = -1) -> Any:
        return self.xp.fft.rfft(a, n, axis=axis)  # type: ignore[attr-defined]  # a concrete engine's namespace

    def irfft(self, a: Any, n: int | None = None, axis: int = -1) -> Any:
        return self.xp.fft.irfft(a, n, axis=axis)  # type: ignore[attr-defined]  # a concrete engine's namespace

    def fft(self, a: Any, axis: int = -1) -> Any:
        return self.xp.fft.fft(a, axis=axis)  # type: ignore[attr-defined]  # a concrete engine's namespace

    def ifft(self, a: Any, axis: int = -1) -> Any:
        return self.xp.fft.ifft(a, axis=axis)  # type: ignore[attr-defined]  # a concrete engine's namespace

    def add_at(self, z: Any, rows: int | slice | np.ndarray, w: Any, scale: float = 1.0) -> Any:
        """z with scale * w added to z[rows] (rows along the first axis: an int, a slice or a numpy index array);
        z is the caller's own fresh array, which an engine may update in place."""
        raise NotImplementedError

    def segment_sum(self, a: Any, segments: np.ndarray, count: int) -> Any:
        """The rows of `a` (its first axis) summed by segment: row r is added into output row ``segments[r]``
        (sorted numpy ints below `count`); `count` rows out, zeros where no row goes."""
        raise NotImplementedError

    def associative_scan(self, combine: Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]],
                         element: tuple[Any, ...], axis: int = 0) -> tuple[Any, ...]:
        """Every inclusive prefix of an associative product along `axis` (`kernels.arrays.prefix_scan`)."""
        return prefix_scan(combine, element, axis, engine=self)

    def sequential_scan(self, step: Callable[[Any, tuple[Any, ...]], tuple[Any, Any]], carry: Any,
                        xs: tuple[Any, ...], first: Any = None) -> tuple[Any, Any]:
        """``step(carry, x_t) -> (carry, y_t)`` for the slices x_t (a tuple) of the arrays `xs` along their first
        axis in turn, from `carry`: the last carry and the y_t stacked along a new first axis (y_t an array, a tuple
        of arrays, each stacked, or None for no output: JAX's ``lax.scan`` contract; at least one step).  With
        `first`, the caller took step 0 itself: `carry` is the carry after it and `first` its output (an array).  A
        loop in Python here; JAX compiles it into one loop (`JaxEngine`), kept with `step`, so `step` is a function
        made once (module-level, or one per setting in a bounded cache), with what does not change between steps in
        the carry.

        >>> from product_interactions.kernels.arrays import NUMPY
        >>> NUMPY.sequential_scan(lambda h, x: (h + x[0], h + x[0]), 0.0, (np.arange(4.0),))
        (np.float64(6.0), array([0., 1., 3., 6.]))
        """
        slices, ys = zip(*map(self.unstack, xs)), []   # whole arrays sliced once: a[1:] would cost torch's autograd
        if first is not None:                           # step 0 taken by the caller
            next(slices)
            ys.append(first)
        for x in slices:
            carry, y = step(carry, x)
            ys.append(y)
        if ys[0] is None:
            return carry, None
        if isinstance(ys[0], tuple):
            return carry, tuple(self.stack(parts, axis=0) for parts in zip(*ys))
        return carry, self.stack(ys, axis=0)

    def cumulative_sum(self, a: Any, axis: int) -> Any:
        """Sums of a along `axis` of every prefix, the empty one first: n + 1 entries (0, a_0, a_0 + a_1, ...)."""
        shape = list(a.shape)
        shape[axis] = 1
        return self.concatenate([self.zeros(tuple(shape), a), self.cumsum(a, axis=axis)], axis=axis)

    # ------------------------------------------------------------------ composite operations
    def contract(self, equation: str, *arrays: Any) -> Any:
        """``einsum(equation, *arrays)``, pairwise along opt_einsum's path, each step a batched matrix product."""
        return contract(equation, *arrays, engine=self)

    def pointwise(self, name: str, a: Any) -> Any:
        """A map of `kernels.arrays.pointwise`, coefficient by coefficient."""
        return FUNCTIONS[name](a, self)

    def softmax(self, a: Any, axis: int = -1, mask: Any = None, out: Any = None) -> Any:
        """exp(a) normalised along `axis` over the entries `mask` keeps (`kernels.arrays.normalisation`); `out` is
        a hint an engine may ignore."""
        return masked_softmax(a, axis, mask, self)

    def layer_norm(self, a: Any, eps: float = 1e-5) -> Any:
        """(a - mean) / sqrt(variance + eps) over the last axis, without gain or bias."""
        centred = a - self.mean(a, axis=-1, keepdims=True)
        return centred / self.sqrt(self.mean(centred * centred, axis=-1, keepdims=True) + eps)

    def log_softmax(self, a: Any, axis: int = -1) -> Any:
        """log(softmax(a)) along `axis`, shifted by the maximum."""
        shifted = a - self.amax(a, axis=axis, keepdims=True)
        return shifted - self.log(self.sum(self.exp(shifted), axis=axis, keepdims=True))

    def repeat_new(self, a: Any, axis: int, count: int) -> Any:
        """A new axis at `axis` holding `count` copies of a."""
        expanded = self.expand_dims(a, axis)
        shape = list(expanded.shape)
        shape[axis] = count
        return self.broadcast_to(expanded, tuple(shape)) * 1

    def scatter(self, a: Any, axis: int, support: Sequence[int], size: int) -> Any:
        """a's `axis` placed at positions `support` of a new axis of `size`, zeros elsewhere: taken from a with one
        zero slice appended, never multiplied by a 0/1 placement matrix (0 * NaN is NaN: a NaN at one position
        would have reached every position, breaking causality on torch and JAX)."""
        axis %= a.ndim
        shape = list(a.shape)
        shape[axis] = 1
        padded = self.concatenate([a, self.zeros(tuple(shape), a)], axis=axis)
        return self.take(padded, placement(tuple(support), size), axis)

    def gather(self, a: Any, axis: int, index: np.ndarray, weight: np.ndarray, valid: np.ndarray) -> Any:
        """a[..., index[r, m], ...] along `axis` (a new pair of axes r, m there), times `weight`, 0 where not
        `valid` (left out, not multiplied)."""
        axis %= a.ndim
        taken = self.take(a, index, axis)
        shape = valid.shape + (1,) * (a.ndim - axis - 1)    # constants are converted once, kept by identity
        if not valid.all():
            taken = self.where(self.reshape(self.constant(valid, taken), shape), taken, 0.0)
        if not np.all(weight[valid] == 1):
            taken = taken * self.reshape(self.constant(weight, taken), shape)
        return taken

    def lag(self, a: Any, axis: int, lag: int) -> Any:
        """x_t -> x_{t - lag} along `axis` (zeros first)."""
        axis %= a.ndim
        n = a.shape[axis]
        shape = list(a.shape)
        shape[axis] = min(lag, n)
        head = (slice(None),) * axis
        return self.concatenate([self.zeros(tuple(shape), a), a[head + (slice(0, max(n - lag, 0)),)]], axis=axis)
