"""`JAX`: jax arrays, concrete or traced (``jax.grad``, ``jit``, ``vmap``), through jax.numpy.

Every operation is functional, so plans and kernels compose with JAX's transformations.  Float64 needs
``jax.config.update("jax_enable_x64", True)``, JAX's own switch; without it JAX computes in float32.  JAX is
imported when the engine is first used.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .rates import CUDA_RATES, JAX_STAGED_RATES, NUMPY_RATES, Rates
from .engine import Engine
from .example_sizes import symbolic


_FLOAT32 = np.dtype(np.float32)


class JaxEngine(Engine):
    """See the module docstring."""

    name = "jax"
    #: Eager dispatch costs about 20x a numpy call (under jit, `staged_rates`).  A recurrence loops over time at any
    #: width (`loop_scan_width` 1): its loop is one compiled ``lax.scan`` (`sequential_scan`), eagerly too, which ran
    #: 0.1-0.8 times the time of JAX's associative scan from 1 to 32,768 elements a step at 1,024 steps, eagerly and
    #: under jit, and its gradient 0.5-1.1 times (`kernels.scans.recurrence.choose`).
    rates = dataclasses.replace(NUMPY_RATES, call=25e-6, compiled64=0.0, compiled32=0.0, loop_scan_width=1)

    #: JAX's function that says whether a jit is tracing (looked up at the first `staged`).
    _under_jit: Callable[[], bool] | None = None

    @property
    def xp(self) -> Any:  # type: ignore[override]  # Engine.xp is None: the abstract engine has no namespace
        import jax.numpy as jnp
        return jnp

    def owns(self, a: Any) -> bool:
        module = type(a).__module__
        return module.startswith(("jax", "jaxlib"))

    def value(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def place(self, a: Any) -> str:
        jax = self._jax
        devices = a.devices() if isinstance(a, jax.Array) and not isinstance(a, jax.core.Tracer) else ()
        device = next(iter(devices), None) or jax.devices()[0]
        return device.platform if device.platform == "cpu" else f"{device.platform}/{device.device_kind}"

    def shipped_rates(self, place: str) -> Rates:
        """Off the CPU (a GPU, or any accelerator: CUDA's are the rates measured closest to one), CUDA's rates with
        JAX's dispatch cost, no compiled loop (JAX arrays cannot enter it) and its own associative scan for the
        recurrences (`lax.scan` there would launch kernels at every step; not measured yet)."""
        if place != "cpu":
            return dataclasses.replace(CUDA_RATES, call=self.rates.call, compiled64=0.0, compiled32=0.0,
                                       chunked_scan_length=None)
        return self.rates

    def rates_for(self, a: Any) -> Rates:
        """The eager rates of `a`'s device (`Engine.rates_for`), or `staged_rates` under ``jax.jit``."""
        return self.staged_rates(a) if self.staged(a) else super().rates_for(a)

    def staged(self, a: Any) -> bool:
        """Whether a jit (or an export) is tracing: asked of JAX (`under_jit`), and True for a symbolic shape, which
        only an export makes."""
        if self._under_jit is None:
            self._under_jit = under_jit()
        return bool(self._under_jit()) or symbolic(a.shape)

    def staged_rates(self, a: Any) -> Rates:
        """`JAX_STAGED_RATES` on the CPU; on a GPU the eager rates of the place with a staged operation's cost (an
        estimate: XLA fuses elementwise operations into one kernel there too; not measured yet)."""
        if self.place(a) == "cpu":
            return JAX_STAGED_RATES
        eager = super().rates_for(a)
        return dataclasses.replace(eager, call=JAX_STAGED_RATES.call, origin=f"{eager.origin}, staged by jax.jit "
                                                                               f"(estimate)")

    def synchronize(self, a: Any) -> Any:
        return a.block_until_ready() if hasattr(a, "block_until_ready") else a

    def detached(self, a: Any) -> Any:
        import jax
        return jax.lax.stop_gradient(a)

    def common_dtype(self, arrays: Sequence[Any]) -> Any:
        """`Engine.common_dtype` by ``jnp.result_type``, which keeps JAX's weak types weak: an array made from a
        Python number beside a bfloat16 one meets it in bfloat16, as JAX's arithmetic does."""
        return self.xp.result_type(*arrays)

    def dtype(self, a: Any) -> np.dtype:
        """bfloat16 (ml_dtypes' numpy dtype, of kind "V") as float32, and ml_dtypes' others (float8, int4) as a void
        dtype, which the checks refuse by name, as the torch engine takes them."""
        dtype = np.dtype(a.dtype)
        if dtype.isbuiltin != 2:                    # 2: ml_dtypes' own (0: an unpickled or byte-swapped numpy dtype)
            return dtype
        return _FLOAT32 if dtype.name == "bfloat16" else np.dtype(f"V{dtype.itemsize}")

    def convert(self, value: Any, like: Any) -> Any:
        jnp = self.xp
        value = np.asarray(value)
        if value.dtype.kind == "f" and like is not None and self.dtype(like).kind == "f":
            converted = jnp.asarray(value, dtype=like.dtype)
        else:
            converted = jnp.asarray(value)
        jax = self._jax
        if isinstance(like, jax.Array) and not isinstance(like, jax.core.Tracer) and like.committed:
            return jax.device_put(converted, like.sharding)                # onto the device like was placed on
        return converted

    def like(self, dtype: DTypeLike, device: Any = None) -> Any:
        """A 0-d array of `dtype` committed to `device` (a jax.Device or a platform's name: "cpu", "gpu" or
        "cuda", "tpu"; None: JAX's default device, uncommitted)."""
        jax = self._jax
        if device is None:
            return self.xp.zeros((), dtype=np.dtype(dtype))
        if not isinstance(device, str):
            return jax.device_put(self.xp.zeros((), dtype=np.dtype(dtype)), device)
        platform = "gpu" if device in ("cuda", "gpu") else device
        try:
            found = jax.devices(platform)
        except RuntimeError as error:
            raise ValueError(f"device: JAX has no {device!r} device here (it has "
                             f"{sorted({d.platform for d in jax.devices()})})") from error
        return jax.device_put(self.xp.zeros((), dtype=np.dtype(dtype)), found[0])

    @property
    def _jax(self) -> Any:
        import jax
        return jax

    def constant(self, value: Any, like: Any) -> Any:
        return self.convert(value, like)                # jit keeps constants in the compiled program

    def zeros(self, shape: Sequence[int], like: Any) -> Any:
        return self.xp.zeros(tuple(shape), dtype=like.dtype)

    def floats(self, mask: Any, like: Any) -> Any:
        return mask.astype(like.dtype if like is not None else self.xp.float32)

    def concrete(self, a: Any) -> bool:
        import jax
        return not isinstance(a, jax.core.Tracer)

    def branch(self, predicate: Any, then: Callable[[], Any], otherwise: Callable[[], Any]) -> Any:
        """``jax.lax.cond``: one branch runs when the program does (both under vmap of a batched predicate)."""
        return self._jax.lax.cond(predicate, then, otherwise)

    def contiguous(self, a: Any) -> Any:
        return a

    def take(self, a: Any, indices: Any, axis: int) -> Any:
        return self.xp.take(a, np.asarray(indices), axis=axis)

    def softmax(self, a: Any, axis: int = -1, mask: Any = None, out: Any = None) -> Any:
        """jax.nn.softmax over the entries the mask keeps (its `where`); rows the mask empties come out 0."""
        import jax
        if mask is None:
            return jax.nn.softmax(a, axis=axis)
        mask = self.xp.broadcast_to(mask, a.shape)
        weights = jax.nn.softmax(self.xp.where(mask, a, -self.xp.inf), axis=axis, where=mask)
        return self.xp.where(mask, weights, 0.0)

    def attention(self, q: Any, k: Any, v: Any, keep: Any = None, causal: bool = False, scale: float = 1.0) -> Any:
        """softmax(scale q k^T) v over the kept keys in jax.numpy, traced or not: keys with a non-finite k or v are
        zeroed and every query that sees one comes out NaN, so a non-finite key stays causal under jit."""
        import jax
        jnp = self.xp
        if causal:
            keep = jnp.tril(jnp.ones((q.shape[-2], k.shape[-2]), bool))
        bad = ~(jnp.isfinite(k).all(-1) & jnp.isfinite(v).all(-1))                 # (..., keys)
        k, v = jnp.where(bad[..., None], 0.0, k), jnp.where(bad[..., None], 0.0, v)
        scores = (q if scale == 1 else scale * q) @ jnp.swapaxes(k, -1, -2)
        if keep is not None:
            scores = jnp.where(keep, scores, -jnp.inf)
        out = jax.nn.softmax(scores, axis=-1) @ v
        seen = bad[..., None, :] if keep is None else keep & bad[..., None, :]
        return jnp.where(seen.any(-1)[..., None], jnp.nan, out)

    def log_softmax(self, a: Any, axis: int = -1) -> Any:
        import jax
        return jax.nn.log_softmax(a, axis=axis)

    def associative_scan(self, combine: Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...]],
                         element: tuple[Any, ...], axis: int = 0) -> tuple[Any, ...]:
        import jax
        return jax.lax.associative_scan(combine, tuple(element), axis=axis)

    def sequential_scan(self, step: Callable[[Any, tuple[Any, ...]], tuple[Any, Any]], carry: Any,
                        xs: tuple[Any, ...], first: Any = None) -> tuple[Any, Any]:
        """One compiled loop (``jax.lax.scan``), eagerly too: a step is traced and compiled once per `step` and
        shapes, not dispatched operation by operation at each of the steps.  The loop is a jitted function kept on
        `step` itself (`compiled_loop`), so that an eager ``jax.grad`` reuses its compiled derivative too (a bare
        lax.scan compiled its derivative's loops at every call: 5 times the associative scan's time)."""
        if first is None:
            return compiled_loop(step)(carry, tuple(xs))
        carry, ys = compiled_loop(step)(carry, tuple(x[1:] for x in xs))
        return carry, self.xp.concatenate([first[None], ys], axis=0)

    def segment_sum(self, a: Any, segments: np.ndarray, count: int) -> Any:
        import jax
        return jax.ops.segment_sum(a, segments, num_segments=count, indices_are_sorted=True)

    def add_at(self, z: Any, rows: int | slice | np.ndarray, w: Any, scale: float = 1.0) -> Any:
        return z.at[rows].add(w if scale == 1 else scale * w)


#: The JAX engine.
JAX = JaxEngine()


def compiled_loop(step: Callable[[Any, tuple[Any, ...]], tuple[Any, Any]]) -> Callable[..., tuple[Any, Any]]:
    """``jax.lax.scan`` of `step` as one jitted function of (carry, xs), made once and kept on the step function, so
    that it lives as long as the step (a plan's step, say) and no longer."""
    loop = getattr(step, "jax_loop", None)
    if loop is None:
        import jax
        loop = jax.jit(functools.partial(jax.lax.scan, step))
        try:
            step.jax_loop = loop  # type: ignore[attr-defined]  # a function's attribute: kept with the step
        except AttributeError:                     # a step that takes no attributes (a builtin): compiled per call
            pass
    return loop


def under_jit() -> Callable[[], bool]:
    """JAX's own question for library authors, whether a jit is tracing: in `jax.extend.core` from JAX 0.10, in
    `jax.core` from 0.4.34; where a release has neither, one that says no (eager pricing, as before)."""
    import jax
    name = "unsafe_am_i_under_a_jit_DO_NOT_USE"
    try:
        import jax.extend.core as extended
    except ImportError:
        extended = None
    return getattr(extended, name, None) or getattr(jax.core, name, None) or (lambda: False)
