"""`Engine`: the array operations plans and kernels need, for one array library.

An engine speaks numpy's vocabulary (``sum(a, axis=...)``, ``moveaxis``, ``rfft(a, n, axis)``) whatever its
library, so that a plan's steps, the strategies' levels and the hand kernels are written once.  Subclasses bind
`xp` (a module with numpy's API: autograd.numpy, jax.numpy, or torch with a few adapters) and override what
their library does differently or better; the composite operations below (contractions, gathers, relayouts, the
masked softmax, pointwise maps) are built from those primitives.

Constants (structure constants, masks, index tables) are numpy arrays; `constant` converts one into the
library, dtype and device of a given array, once per (constant, dtype, device) in a bounded cache.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..cost import NUMPY_RATES

#: Converted constants kept per engine.
CONSTANTS_KEPT = 256


class Engine:
    """See the module docstring.  `name` is the library's name; `xp` its numpy-like namespace."""

    name = "abstract"
    xp = None
    #: What the library's calls, memory traffic and matrix products cost: strategy="auto" ranks strategies by
    #: them (`kernels.cost`).
    rates = NUMPY_RATES
    #: True where the library's own einsum runs a two-operand step faster than `kernels.contract`'s rewrite of
    #: it into one matmul (torch: its einsum is that rewrite, in C++).
    native_pairs = False
    #: ``attention(q, k, v, keep, causal)``: the library's fused softmax(q k^T) v over the keys `keep` (a bool
    #: (queries, keys) array, or None for all; `causal` for key <= query instead), q and k (..., n, e) and v
    #: (..., n, f) with equal leading axes; it returns None where it cannot keep a non-finite key away from the
    #: queries that do not see it.  None where the library has no such kernel (`kernels.attend`).
    attention = None
    #: Elements per time step from which a linear recurrence runs faster as a loop over time than as a log-depth
    #: associative scan (`kernels.recurrence.choose`); None: never, where the library's own scan serves (JAX).
    loop_scan_width = None

    def __init__(self):
        self._constants = OrderedDict()

    # ------------------------------------------------------------------ arrays and their numbers
    def owns(self, a) -> bool:
        """True when `a` is an array of this engine's library (traced ones included)."""
        raise NotImplementedError

    def value(self, a) -> np.ndarray:
        """The plain numbers of `a` as numpy (detached: for checks that need no gradient)."""
        raise NotImplementedError

    def device(self, a):
        """Where `a` lives (None where the library has one place, or places arrays itself)."""
        return None

    def detached(self, a):
        """`a` as an array of this library that no gradient flows through (a constant shift, say)."""
        raise NotImplementedError

    def dtype(self, a) -> np.dtype:
        """The numpy dtype matching `a`'s."""
        return np.dtype(str(a.dtype).split(".")[-1])

    def native_dtype(self, dtype, like=None):
        """The library's dtype for a numpy dtype."""
        return np.dtype(dtype)

    def convert(self, value: np.ndarray, like):
        """A numpy array as this library's array, in `like`'s floating dtype (bools and ints keep theirs)."""
        raise NotImplementedError

    def constant(self, value, like):
        """`convert`, cached by (the constant, dtype, device): a plan's constants cross over once."""
        value = np.asarray(value)
        key = (id(value), self._placement(like), value.dtype.kind)
        hit = self._constants.get(key)
        if hit is not None and hit[0] is value:
            self._constants.move_to_end(key)
            return hit[1]
        converted = self.convert(value, like)
        self._constants[key] = (value, converted)
        while len(self._constants) > CONSTANTS_KEPT:
            self._constants.popitem(last=False)
        return converted

    def _placement(self, like):
        return str(getattr(like, "dtype", None))

    def zeros(self, shape, like):
        return self.convert(np.zeros(shape, self.dtype(like)), like)

    def floats(self, mask, like):
        """A bool array of this library as 0.0 / 1.0 in `like`'s floating dtype."""
        raise NotImplementedError

    def branch(self, condition, then, otherwise):
        """``then()`` if the scalar `condition` holds, else ``otherwise()`` (JAX: ``lax.cond`` when it is traced)."""
        return then() if bool(condition) else otherwise()

    def concrete(self, a) -> bool:
        """True when `a` holds numbers now (False for arrays traced by a compiler, whose values are unknown)."""
        return True

    # ------------------------------------------------------------------ numpy vocabulary
    def __getattr__(self, name):
        """Anything not defined here is the namespace's function of that name (looked up once, then an attribute
        of the engine: a call site pays no lookup)."""
        if name.startswith("_") or self.xp is None:
            raise AttributeError(name)
        found = getattr(self.xp, name)
        self.__dict__[name] = found
        return found

    def unstack(self, a) -> list:
        """The slices a[0], a[1], ... along the first axis."""
        return [a[i] for i in range(a.shape[0])]

    def index(self, a, i: int, axis: int):
        """a[..., i, ...] with i on `axis` (the axis is dropped)."""
        return a[(slice(None),) * (axis % a.ndim) + (i,)]

    def take(self, a, indices, axis: int):
        """The entries `indices` (a numpy int array) along `axis`."""
        return a[(slice(None),) * (axis % a.ndim) + (np.asarray(indices),)]

    def rfft(self, a, n=None, axis=-1):
        return self.xp.fft.rfft(a, n, axis=axis)

    def irfft(self, a, n=None, axis=-1):
        return self.xp.fft.irfft(a, n, axis=axis)

    def fft(self, a, axis=-1):
        return self.xp.fft.fft(a, axis=axis)

    def ifft(self, a, axis=-1):
        return self.xp.fft.ifft(a, axis=axis)

    def add_at(self, z, rows, w, scale=1.0):
        """z with scale * w added to z[rows] (rows along the first axis: an int, a slice or a numpy index array);
        z is the caller's own fresh array, which an engine may update in place."""
        raise NotImplementedError

    def associative_scan(self, combine, element: tuple, axis: int = 0) -> tuple:
        """Every inclusive prefix of an associative product along `axis` (`kernels.prefix_scan`)."""
        from ..prefix_scan import prefix_scan
        return prefix_scan(combine, element, axis)

    # ------------------------------------------------------------------ composite operations
    def contract(self, equation: str, *arrays):
        """``einsum(equation, *arrays)``, pairwise along opt_einsum's path, each step a batched matrix product."""
        from ..contract import contract
        return contract(equation, *arrays, engine=self)

    def pointwise(self, name: str, a):
        """A map of `kernels.pointwise`, coefficient by coefficient."""
        from ..pointwise import FUNCTIONS
        return FUNCTIONS[name](a, self)

    def softmax(self, a, axis: int = -1, mask=None, out=None):
        """The masked softmax (`kernels.masked_softmax`); `out` is a hint an engine may ignore."""
        from ..masked_softmax import softmax
        return softmax(a, axis, mask, engine=self)

    def layer_norm(self, a, eps: float = 1e-5):
        """(a - mean) / sqrt(variance + eps) over the last axis, without gain or bias."""
        centred = a - self.mean(a, axis=-1, keepdims=True)
        return centred / self.sqrt(self.mean(centred * centred, axis=-1, keepdims=True) + eps)

    def log_softmax(self, a, axis: int = -1):
        """log(softmax(a)) along `axis`, shifted by the maximum."""
        shifted = a - self.amax(a, axis=axis, keepdims=True)
        return shifted - self.log(self.sum(self.exp(shifted), axis=axis, keepdims=True))

    def repeat_new(self, a, axis: int, count: int):
        """A new axis at `axis` holding `count` copies of a."""
        expanded = self.expand_dims(a, axis)
        shape = list(expanded.shape)
        shape[axis] = count
        return self.broadcast_to(expanded, tuple(shape)) * 1

    def scatter(self, a, axis: int, support, size: int):
        """a's `axis` placed at positions `support` of a new axis of `size`, zeros elsewhere."""
        placement = np.zeros((len(support), size))
        placement[np.arange(len(support)), list(support)] = 1
        moved = self.moveaxis(a, axis, -1)
        return self.moveaxis(self.matmul(moved, self.constant(placement, a)), -1, axis)

    def gather(self, a, axis: int, index, weight, valid):
        """a[..., index[r, m], ...] along `axis` (a new pair of axes r, m there), times `weight`, 0 where not
        `valid` (left out, not multiplied)."""
        axis %= a.ndim
        taken = self.take(a, index.reshape(-1), axis)
        taken = self.reshape(taken, tuple(a.shape[:axis]) + index.shape + tuple(a.shape[axis + 1:]))
        tail = (1,) * (a.ndim - axis - 1)
        if tail:                                        # else the arrays themselves: constants are cached by identity
            valid, weight = valid.reshape(valid.shape + tail), weight.reshape(weight.shape + tail)
        if not valid.all():
            taken = self.where(self.constant(valid, taken), taken, 0.0)
        if not np.all(weight[valid] == 1):
            taken = taken * self.constant(weight, taken)
        return taken

    def lag(self, a, axis: int, lag: int):
        """x_t -> x_{t - lag} along `axis` (zeros first)."""
        axis %= a.ndim
        n = a.shape[axis]
        shape = list(a.shape)
        shape[axis] = min(lag, n)
        head = (slice(None),) * axis
        return self.concatenate([self.zeros(tuple(shape), a), a[head + (slice(0, max(n - lag, 0)),)]], axis=axis)
