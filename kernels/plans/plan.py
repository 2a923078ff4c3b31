"""`Plan`: a compiled expression as a backend-neutral program of steps over numbered registers.

A plan is built once (by `kernels.plans.builder.PlanBuilder`, which `interactions` drives node by node) and run on every
call.  Its steps are contractions with fixed einsum equations and constants (`Contract`), gathers (`Gather`),
pointwise maps and the masked softmax (`Map`, `Softmax`), relayouts (`Expand`), lags and sums (`Lag`, `Add`),
products through a strategy kernel (`Product`) and scans whose body is a plan of its own (`Scan`).  Inputs are
named signals (batch axes first, then one axis per factor) and parameters (exact shapes).

Sizes are `Dim`s.  A parametric dim (a position factor that no constant depends on) takes its size from the
inputs of each call, so one plan serves every sequence length; the masks and index tables such a dim needs are
generated per size in bounded caches.  A dim a constant depends on is pinned to its compile-time size.  Registers
are released after their last use, so a call holds only the arrays still needed.

Engines (`kernels.arrays.registry`) run the steps: numpy with autograd by default, torch or JAX when the inputs are theirs;
the result comes back in the inputs' library, dtype and device.
"""
from __future__ import annotations

import functools
import math
import operator
from typing import TYPE_CHECKING, Any, Collection, Iterable, NamedTuple, Sequence

import numpy as np

from ..arrays.bounded_cache import BoundedCache
from ..arrays.constants import frozen
from ..arrays.example_sizes import example_shape, jax_symbol, symbolic
from ..arrays import (NUMPY, engine_of, outside_torch_compile, owner, torch_call, torch_compiling,
                      with_jax_defaults)
from .masks import Mask

#: Checked signatures kept per plan (`Plan.check`): the arrays' types, dtypes, shapes and devices of recent calls.
CHECKS_KEPT = 16
#: A scan's loop steps kept per (engine, sizes) (`Scan`): JAX compiles a loop once per step function.
STEPS_KEPT = 16
#: The passes over a masked contraction's key operands that keep their non-finite keys out without reading which
#: keys those are (`_poisoned`), where a read would wait for a device (`Engine.reads_dearly`).
POISONING_PASSES = 3

if TYPE_CHECKING:
    from ..arrays.engine import Engine


class Dim:
    """A factor's size in a plan: `size` at compile time; `parametric` ones are bound from each call's inputs."""

    __slots__ = ("name", "size", "parametric")

    def __init__(self, name: str, size: int, parametric: bool) -> None:
        self.name, self.size, self.parametric = name, int(size), parametric

    def pin(self) -> None:
        """A constant depends on this size: it is fixed from now on."""
        self.parametric = False

    def __repr__(self) -> str:
        return f"{self.name}{'=n' if self.parametric else ''}"


def size(dim: Dim | int, sizes: Sizes) -> int:
    """The size of `dim` (or an int) in a call whose parametric dims are bound in `sizes`."""
    return dim if isinstance(dim, int) else sizes.get(dim, dim.size)


# ---------------------------------------------------------------------- operand sources
class Register:
    """An array computed by a step (or an input)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def array(self, registers: list[Any], sizes: Sizes) -> Any:
        return registers[self.index]

    def describe(self) -> str:
        return f"r{self.index}"


class Constant:
    """A fixed numpy array (structure constants, coefficients, selections); it pins the dims it depends on."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)

    def array(self, registers: list[Any], sizes: Sizes) -> np.ndarray:
        return self.value

    def describe(self) -> str:
        return "scalar" if self.value.ndim == 0 else f"constant{self.value.shape}"


class Ones:
    """A vector of ones along a dim (the unit g_0 of a position factor, given an axis)."""

    __slots__ = ("dim",)

    def __init__(self, dim: Dim) -> None:
        self.dim = dim

    def array(self, registers: list[Any], sizes: Sizes) -> np.ndarray:
        return np.ones(size(self.dim, sizes))

    def describe(self) -> str:
        return f"ones({self.dim!r})"


class MaskArray:
    """A `Mask` over two dims, restricted to supports (tuples, or None for the whole axis)."""

    __slots__ = ("mask", "dims", "supports")

    def __init__(self, mask: Mask, dims: Iterable[Dim | int],
                 supports: Iterable[Sequence[int] | None] = (None, None)) -> None:
        self.mask, self.dims, self.supports = mask, tuple(dims), tuple(supports)

    def array(self, registers: list[Any], sizes: Sizes) -> np.ndarray:
        full = self.mask.array(*(size(d, sizes) for d in self.dims))
        rows, columns = self.supports
        if rows is not None:
            full = full[list(rows)]
        if columns is not None:
            full = full[:, list(columns)]
        return full

    def describe(self) -> str:
        return f"{self.mask!r}"


# ---------------------------------------------------------------------- steps
class Step:
    """Base of the steps: `reads` registers, writes `output`; ``run(engine, registers, sizes)``."""

    reads: tuple[int, ...] = ()
    output: int = -1

    if TYPE_CHECKING:
        def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
            """Compute `output` from `reads` (each subclass)."""

    def sources(self) -> list:
        return []

    def describe(self) -> str:
        raise NotImplementedError


class Contract(Step):
    """``output = einsum(equation, *operands)`` evaluated pairwise with batched matrix products (`kernels.arrays.contract`).

    `exclusion`, when given, is ``(mask source, query label, key label, zero)``: the pairs the mask drops are left
    out of the sum over the key label.  Operands holding both labels are masked with ``where`` (except those in
    `zero`, known to be 0 there already); a non-finite value of an operand holding the key but not the query is
    taken out of the contraction and added back only to the queries the mask lets see it (on a GPU and traced
    arrays: those queries come out NaN, `_poisoned`).
    """

    def __init__(self, output: int, equation: str, operands: Iterable[Source],
                 exclusion: tuple[Source, str, str, Collection[int]] | None = None) -> None:
        self.output, self.equation, self.operands, self.exclusion = output, equation, list(operands), exclusion
        self.reads = tuple(s.index for s in self.sources() if isinstance(s, Register))

    def sources(self) -> list:
        mask = [self.exclusion[0]] if self.exclusion is not None else []
        return list(self.operands) + mask

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        raw = [source.array(registers, sizes) for source in self.operands]
        like = next((a for a, s in zip(raw, self.operands) if isinstance(s, Register)), None)
        arrays = [a if isinstance(s, Register) else engine.constant(a, like) for a, s in zip(raw, self.operands)]
        inputs, output = self.equation.split("->")
        arrays, terms = _fold_scalars(arrays, inputs.split(","))
        if self.exclusion is None:
            registers[self.output] = _contract(engine, terms, output, arrays)
            return
        registers[self.output] = _excluding(engine, terms, output, arrays, self.exclusion, registers, sizes, like)

    def output_count(self, registers: list[Any], sizes: Sizes) -> int:
        """The number of entries `run` would write, from the operands' shapes (before any arithmetic)."""
        inputs, output = self.equation.split("->")
        labels: dict[str, int]
        labels, batch = {}, ()
        for term, source in zip(inputs.split(","), self.operands):
            shape = example_shape(source.array(registers, sizes).shape)   # torch.export's batch: its example's
            own = term.replace("...", "")
            lead = shape[:len(shape) - len(own)]
            batch = np.broadcast_shapes(batch, lead) if term.startswith("...") else batch
            labels.update(zip(own, shape[len(lead):]))
        count = math.prod(batch) if output.startswith("...") else 1
        return count * math.prod(labels[label] for label in output.replace("...", ""))

    def describe(self) -> str:
        names = ", ".join(source.describe() for source in self.operands)
        text = f"r{self.output} = contract {_readable(self.equation)!r} of {names}"
        if self.exclusion is not None:
            text += f"; entries outside {self.exclusion[0].describe()} left out"
        return text


def _readable(equation: str) -> str:
    """The equation with its labels renamed a, b, c, ... in order of appearance (for `explain`)."""
    letters: dict[str, str] = {}
    for c in equation:
        if c not in ".,->" and c not in letters:
            letters[c] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[len(letters) % 52]
    return "".join(letters.get(c, c) for c in equation)


def _fold_scalars(arrays: list[Any], terms: list[str]) -> tuple[list[Any], list[str]]:
    """0-d constants multiplied into the smallest array first (one pass over the least data)."""
    scalar = [n for n, (a, term) in enumerate(zip(arrays, terms)) if term == "" and len(a.shape) == 0]
    if not scalar or len(scalar) == len(arrays):
        return arrays, terms
    kept = [n for n in range(len(arrays)) if n not in scalar]
    smallest = min(kept, key=lambda n: math.prod(arrays[n].shape))
    folded = arrays[smallest]
    for n in scalar:
        folded = folded * arrays[n]
    return ([folded if n == smallest else arrays[n] for n in kept], [terms[n] for n in kept])


def _contract(engine: Engine, terms: list[str], output: str, arrays: list[Any]) -> Any:
    equation = ",".join(terms) + "->" + output
    if len(arrays) == 1 and terms[0] == output:
        return arrays[0]
    return engine.contract(equation, *arrays)


def _align(engine: Engine, array: Any, labels: str, target: str, target_rank: int) -> Any:
    """A mask-like `array` (optional batch axes, then `labels`) viewed with size-1 axes to broadcast against an
    operand whose axes are batch axes then `target`."""
    batch = len(array.shape) - len(labels)
    order = sorted(range(len(labels)), key=lambda n: target.index(labels[n]))
    moved = engine.transpose(array, list(range(batch)) + [batch + n for n in order])
    present = sorted(labels, key=target.index)
    shape = list(moved.shape[:batch]) + [moved.shape[batch + present.index(c)] if c in labels else 1 for c in target]
    lead = target_rank - len(target) - batch
    if lead < 0:
        raise ValueError("a batched mask meets an operand without batch axes")
    return engine.reshape(moved, [1] * lead + shape)


def _key_axis(array: Any, term: str, key: str) -> int:
    labels = term.replace("...", "")
    return len(array.shape) - len(labels) + labels.index(key)


def _excluding(engine: Engine, terms: list[str], output: str, arrays: list[Any],
               exclusion: tuple[Source, str, str, Collection[int]], registers: list[Any], sizes: Sizes,
               like: Any) -> Any:
    """The contraction with the masked pairs left out (see `Contract`)."""
    source, query, key, zero = exclusion
    mask = source.array(registers, sizes)
    keep = engine.constant(np.asarray(mask, dtype=bool), like) if not isinstance(source, Register) else mask != 0
    holders = [n for n, t in enumerate(terms) if key in t]
    arrays = list(arrays)
    for n in holders:
        t = terms[n].replace("...", "")
        if query in t and n not in zero:
            arrays[n] = engine.where(_align(engine, keep, query + key, t, len(arrays[n].shape)), arrays[n], 0.0)
    paired = any(query in terms[n] for n in holders)        # an operand holds both labels: the mask is in it now
    mask_terms, mask_arrays = ([], []) if paired else ([query + key], [engine.floats(keep, like)])
    lone = [n for n in holders if query not in terms[n] and not isinstance(arrays[n], (int, float))]
    if lone and (not engine.concrete(arrays[lone[0]]) or engine.reads_dearly(
            like, POISONING_PASSES * sum(math.prod(arrays[n].shape) for n in lone) * engine.dtype(like).itemsize)):
        bads = {n: _non_finite_keys(engine, arrays[n], terms[n], key, like, per_entry=True) for n in lone}
        return _poisoned(engine, terms, output, arrays, bads, key, query, keep, mask_terms, mask_arrays)
    # per key: an entry of some batch entry and operand is not finite
    bad = _union([_non_finite_keys(engine, arrays[n], terms[n], key, like, per_entry=False) for n in lone])
    positions = np.zeros(0, int) if bad is None else np.flatnonzero(engine.value(bad))     # one read of the keys
    if not len(positions):
        return _contract(engine, terms + mask_terms, output, arrays + mask_arrays)
    picked = list(arrays)
    main = _contract(engine, terms + mask_terms, output,
                     _zeroed(engine, terms, arrays, {n: bad for n in lone}, key) + mask_arrays)
    for n in holders:
        picked[n] = engine.take(arrays[n], positions, _key_axis(arrays[n], terms[n], key))
    kept_labels = output + (query if query not in output else "") + key
    term = _contract(engine, terms, kept_labels, picked)
    restricted = engine.take(keep, positions, -1)
    term = engine.where(_align(engine, restricted, query + key, kept_labels.replace("...", ""), len(term.shape)),
                        term, 0.0)
    summed = tuple(range(len(term.shape) - (1 if query in output else 2), len(term.shape)))
    return main + engine.sum(term, axis=summed)


def _non_finite_keys(engine: Engine, array: Any, term: str, key: str, like: Any, per_entry: bool) -> Any:
    """A bool array over the `key` axis (after `array`'s batch axes where `per_entry`): True where an entry there is
    not finite."""
    moved = engine.moveaxis(array, _key_axis(array, term, key), -1)
    first = len(array.shape) - len(term.replace("...", "")) if per_entry else 0
    summed = tuple(range(first, len(moved.shape) - 1))
    marks = ~engine.isfinite(moved)
    return engine.sum(engine.floats(marks, like), axis=summed) > 0 if summed else marks


def _union(marks: list[Any]) -> Any:
    """The entries any of `marks` holds (bool arrays that broadcast together), or None for none."""
    return functools.reduce(operator.or_, marks) if marks else None


def _zeroed(engine: Engine, terms: list[str], arrays: list[Any], bads: dict[int, Any], key: str) -> list[Any]:
    """`arrays` with each operand n of `bads` set to 0 where ``bads[n]`` (optional batch axes, then the key) marks
    it (the others as they are)."""
    clean = list(arrays)
    for n, bad in bads.items():
        labels = terms[n].replace("...", "")
        clean[n] = engine.where(_align(engine, bad, key, labels, len(arrays[n].shape)), 0.0, arrays[n])
    return clean


def _poisoned(engine: Engine, terms: list[str], output: str, arrays: list[Any], bads: dict[int, Any], key: str,
              query: str, keep: Any, mask_terms: list[str], mask_arrays: list[Any]) -> Any:
    """Traced arrays (JAX under jit) and a device where a read waits (a GPU): no data-dependent shapes, so each
    operand's non-finite entries are zeroed and every query a mask lets see a key that holds one, in its batch
    entry, comes out NaN (the exact infinity, where there is one, is not kept)."""
    main = _contract(engine, terms + mask_terms, output, _zeroed(engine, terms, arrays, bads, key) + mask_arrays)
    bad = _union(list(bads.values()))
    seen = engine.contract(f"...{query}{key},...{key}->...{query}", engine.floats(keep, main),
                           engine.floats(bad, main))
    labels = output.replace("...", "")
    if query not in labels:
        return engine.where(_align(engine, engine.sum(seen, axis=-1) > 0, "", labels, len(main.shape)), np.nan,
                            main)
    return engine.where(_align(engine, seen > 0, query, labels, len(main.shape)), np.nan, main)


class Map(Step):
    """``output = f(input)`` coefficient by coefficient (`kernels.arrays.pointwise`)."""

    def __init__(self, output: int, source: int, function: str) -> None:
        self.output, self.reads, self.function = output, (source,), function

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        registers[self.output] = engine.pointwise(self.function, registers[self.reads[0]])

    def describe(self) -> str:
        return f"r{self.output} = {self.function}(r{self.reads[0]})"


class Softmax(Step):
    """``output = softmax(input)`` along `axis` (counted from the end), over the pairs the mask keeps; in place
    when the plan marks the input as `consumed` (computed by an earlier step and read by no later one)."""

    consumed = False

    def __init__(self, output: int, source: int, axis: int, mask: Register | MaskArray | None = None,
                 mask_axes: tuple[int, int] | None = None) -> None:
        self.output, self.axis, self.mask, self.mask_axes = output, axis, mask, mask_axes
        self.reads = (source,) + ((mask.index,) if isinstance(mask, Register) else ())

    def sources(self) -> list:
        return [self.mask] if self.mask is not None else []

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        x = registers[self.reads[0]]
        keep = None
        if self.mask is not None:
            array = self.mask.array(registers, sizes)
            keep = array != 0 if isinstance(self.mask, Register) else engine.constant(np.asarray(array, bool), x)
            rank, (query, key) = len(x.shape), self.mask_axes  # type: ignore[misc]  # given with a mask
            batch = len(keep.shape) - 2
            if query > key:
                keep = engine.swapaxes(keep, -1, -2)
            shape = [1] * rank
            shape[:batch] = keep.shape[:batch]
            shape[rank + min(query, key)], shape[rank + max(query, key)] = keep.shape[-2:]
            keep = engine.reshape(keep, shape)
        in_place = self.consumed and isinstance(x, np.ndarray) and x.flags.writeable and x.flags.c_contiguous
        registers[self.output] = engine.softmax(x, axis=self.axis, mask=keep, out=x if in_place else None)

    def describe(self) -> str:
        within = f" within {self.mask.describe()}" if self.mask is not None else ""
        return f"r{self.output} = softmax(r{self.reads[0]}) along axis {self.axis}{within} (masked entries left out)"


class Add(Step):
    """``output = a + b`` (broadcasting)."""

    def __init__(self, output: int, a: int, b: int) -> None:
        self.output, self.reads = output, (a, b)

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        registers[self.output] = registers[self.reads[0]] + registers[self.reads[1]]

    def describe(self) -> str:
        return f"r{self.output} = r{self.reads[0]} + r{self.reads[1]}"


class Expand(Step):
    """Relayout: axes (after `batch` leading ones) in `layout`, one entry per axis of the result:
    ``("keep", input axis)``, ``("scatter", input axis, support, dim)`` (components placed into a full axis, zeros
    elsewhere), ``("repeat", dim)`` (a new axis, the value repeated) or ``("new",)`` (a size-1 axis)."""

    def __init__(self, output: int, source: int, layout: Iterable[tuple[Any, ...]]) -> None:
        self.output, self.reads, self.layout = output, (source,), tuple(layout)

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        x = registers[self.reads[0]]
        kept = [entry[1] for entry in self.layout if entry[0] in ("keep", "scatter")]
        batch = len(x.shape) - len(kept)
        x = engine.transpose(x, list(range(batch)) + [batch + a for a in kept]) if kept != sorted(kept) else x
        position = batch
        for entry in self.layout:
            if entry[0] == "keep":
                position += 1
            elif entry[0] == "scatter":
                _, _, support, dim = entry
                x = engine.scatter(x, position, support, size(dim, sizes))
                position += 1
            elif entry[0] == "repeat":
                x = engine.repeat_new(x, position, size(entry[1], sizes))
                position += 1
            else:
                x = engine.expand_dims(x, position)
                position += 1
        registers[self.output] = x

    def describe(self) -> str:
        parts = [entry[0] if entry[0] == "new" else f"{entry[0]} {entry[1]!r}" for entry in self.layout]
        return f"r{self.output} = relayout r{self.reads[0]}: {', '.join(parts)}"


class Gather(Step):
    """``output[..., r, m, ...] = weight[r, m] * input[..., index[r, m], ...]`` along `axis` where `valid`, 0
    elsewhere (index arithmetic of a factor with one nonzero per pair; invalid entries are left out)."""

    def __init__(self, output: int, source: int, axis: int, index: np.ndarray, weight: Any, valid: Any) -> None:
        self.output, self.reads, self.axis = output, (source,), axis
        self.index, self.weight, self.valid = frozen(index), weight, valid

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        registers[self.output] = engine.gather(registers[self.reads[0]], self.axis, self.index, self.weight,
                                               self.valid)

    def describe(self) -> str:
        return (f"r{self.output} = gather r{self.reads[0]} along axis {self.axis}: {self.index.shape[0]} rows x "
                f"{self.index.shape[1]} outputs, index arithmetic")


class View(Step):
    """``output = reshape(input, shape)``, then `takes[a]` (None: all) along source axis a (after `first` target
    axes): a linear map's matrix read as (target dims..., source dims...), restricted to a support."""

    def __init__(self, output: int, source: int, shape: Iterable[int], takes: Sequence[Any], first: int) -> None:
        self.output, self.reads, self.shape, self.first = output, (source,), tuple(shape), first
        self.takes = [None if take is None else frozen(np.asarray(take)) for take in takes]

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        block = engine.reshape(registers[self.reads[0]], self.shape)
        for axis, take in enumerate(self.takes):
            if take is not None:
                block = engine.take(block, take, self.first + axis)
        registers[self.output] = block

    def describe(self) -> str:
        return f"r{self.output} = r{self.reads[0]} as {self.shape}"


class Product(Step):
    """``output = kernel(x, y)``: a product through a `kernels.Kernel` (level strategies) on full factor axes."""

    def __init__(self, output: int, x: int, y: int, kernel: Any) -> None:
        self.output, self.reads, self.kernel = output, (x, y), kernel

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        registers[self.output] = self.kernel(registers[self.reads[0]], registers[self.reads[1]])

    def describe(self) -> str:
        return f"r{self.output} = product r{self.reads[0]} * r{self.reads[1]} through {self.kernel!r}"


class Lag(Step):
    """``output = input`` shifted by `lag` along `axis` (from the end), zeros first: x_t -> x_{t-lag}."""

    def __init__(self, output: int, source: int, axis: int, lag: int) -> None:
        self.output, self.reads, self.axis, self.lag = output, (source,), axis, lag

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        registers[self.output] = engine.lag(registers[self.reads[0]], self.axis, self.lag)

    def describe(self) -> str:
        return f"r{self.output} = r{self.reads[0]} lagged by {self.lag} along axis {self.axis}"


class Scan(Step):
    """A recurrence: h_t = body(h_{t-1}, x_t) along `axis` of the input (counted from the end; the input has
    `factor_axes` axes after its batch axes).

    The body is a list of steps over the same registers, run once per step with `h` and `x_t` bound; steps that
    read neither (nor anything computed from them) were hoisted out of the loop when the plan was built.
    `drop` lists the axes of x_t (after its batch axes) removed by taking index 0 (factors constant along them).
    """

    def __init__(self, output: int, source: int, initial: int | None, axis: int, factor_axes: int, h: int, x_t: int,
                 result: int, body: Iterable[Step], drop: Iterable[int], state: Iterable[Dim | int],
                 return_sequences: bool) -> None:
        self.output, self.axis, self.factor_axes, self.h, self.x_t, self.result = output, axis, factor_axes, h, x_t, \
            result
        self.body, self.drop, self.state = list(body), tuple(drop), tuple(state)
        self.initial, self.return_sequences = initial, return_sequences
        inner = {r for step in self.body for r in step.reads} - {h, x_t} - {step.output for step in self.body}
        self.reads = (source,) + ((initial,) if initial is not None else ()) + tuple(sorted(inner))

    def run(self, engine: Engine, registers: list[Any], sizes: Sizes) -> None:
        """The loop over time by `Engine.sequential_scan` (one compiled loop on JAX; on torch its steps slice the
        input by one ``unbind``, whose gradient is one stack, where a slice per step had made a full-size
        gradient per step).  The state keeps the floating dtype its inputs and the body's operands meet in."""
        x = registers[self.reads[0]]
        lead = tuple(x.shape[:len(x.shape) - self.factor_axes])
        steps = engine.moveaxis(x, len(x.shape) + self.axis, 0)
        for axis in sorted(self.drop, reverse=True):
            steps = engine.index(steps, 0, 1 + len(lead) + axis)
        h = engine.zeros(lead + tuple(size(d, sizes) for d in self.state), x)
        if self.initial is not None:
            h = h + registers[self.initial]
        inner = tuple(registers[r] for r in self._inner)
        h = engine.cast(h, engine.common_dtype([h] + [a for a in inner if engine.dtype(a).kind in "fc"]))
        (h, _), states = engine.sequential_scan(self._step(engine, len(registers), sizes), (h, inner), (steps,))
        registers[self.output] = engine.moveaxis(states, 0, len(lead)) if self.return_sequences else h

    @functools.cached_property
    def _inner(self) -> tuple[int, ...]:
        """The registers the body reads from outside it (parameters, hoisted steps)."""
        return self.reads[1 if self.initial is None else 2:]

    def _step(self, engine: Engine, count: int, sizes: Sizes) -> Any:
        """The loop's step for `engine`, `count` registers and `sizes`, made once per them (JAX keeps its compiled
        loop per step function), or for this call where a size is a symbol (torch.export's cannot be hashed)."""
        try:
            key = (engine.name, count, frozenset(sizes.items()))
            hash(key)
        except TypeError:
            return self._make_step(engine, count, sizes)
        return self._steps.kept(key, lambda: self._make_step(engine, count, sizes))

    @functools.cached_property
    def _steps(self) -> BoundedCache[Any, Any]:
        return BoundedCache(STEPS_KEPT)

    def _make_step(self, engine: Engine, count: int, sizes: Sizes) -> Any:
        """The step over registers of its own: the body's outside reads from the carry, h and x_t bound.  It holds
        what it reads of this scan, not the scan itself (no cycle through the scan's cache of steps)."""
        body, inner, h_at, x_at, result, sequences = (self.body, self._inner, self.h, self.x_t, self.result,
                                                      self.return_sequences)

        def step(carry: tuple[Any, tuple[Any, ...]], inputs: tuple[Any]) -> tuple[tuple[Any, ...], Any]:
            h, values = carry
            registers: list[Any] = [None] * count
            for register, value in zip(inner, values):
                registers[register] = value
            registers[h_at], registers[x_at] = h, inputs[0]
            for body_step in body:
                body_step.run(engine, registers, sizes)
            new = engine.cast(registers[result], h.dtype)
            return (new, values), (new if sequences else None)
        return step

    def describe(self) -> str:
        lines = [f"r{self.output} = scan r{self.reads[0]} along axis {self.axis}: h = r{self.h}, x_t = r{self.x_t}, "
                 f"new state r{self.result}{', every state' if self.return_sequences else ', last state'}"]
        lines += [f"    | {step.describe()}" for step in self.body]
        return "\n".join(lines)


# ---------------------------------------------------------------------- the plan
def _is_array(value: object) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _is_mapping(value: object) -> bool:
    """What a plan takes for its parameters: dicts, autograd's DictBox, torch's ParameterDict."""
    return hasattr(value, "keys") and hasattr(value, "__getitem__")


def _check_one_dtype(engine: Engine, arrays: dict[str, Any]) -> None:
    """A TypeError naming the first of `arrays` ({argument: array of `engine`'s library}) whose dtype is not the
    first one's, for a library that does not promote (`Engine.promotes`)."""
    first, *others = arrays
    dtype = arrays[first].dtype
    for argument in others:
        if arrays[argument].dtype != dtype:
            raise TypeError(f"{argument}: expected {dtype} like {first} ({engine.name} computes in one dtype: convert "
                            f"one of them, e.g. with .to({dtype})), got {arrays[argument].dtype}")


def _signature(array: Any) -> tuple[Any, ...] | None:
    """What `Plan.check` reads of a numpy array or torch tensor (None for other values, and for a shape with a
    symbol, torch.export's dynamic batch: their checks run each time)."""
    kind = type(array)
    if kind is np.ndarray:
        return kind, array.dtype, array.shape
    if owner(array).name == "torch" and not symbolic(array.shape):
        return kind, array.dtype, tuple(array.shape), array.device, array.layout
    return None


def _real(value: Any, argument: str) -> Any:
    """`value` as a real floating-point array (lists are converted; other arrays kept as they are)."""
    if _is_array(value):
        array = value
    else:
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as error:          # text, a ragged list, objects that are no numbers
            raise TypeError(f"{argument}: expected real numbers (an array or a nested list of them), got "
                            f"{type(value).__name__} {value!r:.60} ({error})") from None
    kind = owner(array).dtype(array).kind
    if kind != "f":
        raise TypeError(f"{argument}: expected a real floating-point array, got dtype {array.dtype}")
    return array

class Call(NamedTuple):
    """A call's arguments, checked by `Plan.check`: the engine, the array of each input register, the sizes of the
    parametric dims."""
    engine: Engine
    arrays: dict[int, Any]
    sizes: Sizes


class InputSpec:
    """A named input: a signal (batch axes, then `axes`) or a parameter (exactly `axes`)."""

    __slots__ = ("name", "kind", "axes", "register", "describe_as")

    def __init__(self, name: str, kind: str, axes: Iterable[Dim | int], register: int,
                 describe_as: str = "") -> None:
        self.name, self.kind, self.axes, self.register, self.describe_as = name, kind, tuple(axes), register, \
            describe_as


class Plan:
    """A compiled expression; call it as ``plan(inputs, parameters)`` (see the module docstring)."""

    def __init__(self, inputs: Iterable[InputSpec], steps: Iterable[Step], output: int, registers: int,
                 name: str = "expression") -> None:
        self.inputs, self.steps, self.output, self.registers, self.name = list(inputs), list(steps), output, \
            registers, name
        self.signals = {spec.name: spec for spec in self.inputs if spec.kind == "signal"}
        self.parameters = {spec.name: spec for spec in self.inputs if spec.kind == "parameter"}
        self._release = self._last_uses()
        self._checked: BoundedCache[tuple[Any, ...], tuple[Engine, Sizes]] = BoundedCache(CHECKS_KEPT)
        #: The plan's name for `kernels.arrays.torch_call` (a traced call on torch tensors is one operator).
        self.key = torch_call.register(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copy or an unpickled plan gets a key of its own."""
        self.__dict__.update(state)
        self.key = torch_call.register(self)

    def _last_uses(self) -> list[list[int]]:
        """For each step, the registers no later step (nor the output) reads; steps that may overwrite their
        first input (computed by an earlier step, read by no later one) are marked ``consumed``."""
        last = {}
        for position, step in enumerate(self.steps):
            for r in step.reads:
                last[r] = position
        release: list[list[int]] = [[] for _ in self.steps]
        for r, position in last.items():
            if r != self.output:
                release[position].append(r)
        produced = {step.output for step in self.steps}
        for position, step in enumerate(self.steps):
            if isinstance(step, Softmax):
                source = step.reads[0]
                step.consumed = source in produced and source in release[position] and \
                    step.reads.count(source) == 1
        return release

    @property
    def parametric(self) -> list[Dim]:
        """The dims whose size each call's inputs decide."""
        found = {}
        for spec in self.inputs:
            for axis in spec.axes:
                if isinstance(axis, Dim) and axis.parametric:
                    found[id(axis)] = axis
        return list(found.values())

    def bind(self, inputs: dict[str, Any], parameters: dict[str, Any]) -> Sizes:
        """Check the arrays against the inputs' specs; the sizes of the parametric dims."""
        sizes: Sizes = {}
        for spec in self.inputs:
            array = (inputs if spec.kind == "signal" else parameters)[spec.name]
            shape = tuple(array.shape)
            count = len(spec.axes)
            found = shape[len(shape) - count:] if spec.kind == "signal" else shape
            if len(shape) < count or (spec.kind == "parameter" and len(shape) != count):
                self._refuse(spec, shape, sizes)
            for axis, n in zip(spec.axes, found):
                if isinstance(axis, Dim) and axis.parametric:
                    if jax_symbol(n):
                        where = "inputs" if spec.kind == "signal" else "parameters"
                        raise ValueError(f"{where}[{spec.name!r}]: a symbolic size ({n}) for dim {axis.name} in shape "
                                         f"{shape}; the plan follows jax.export's symbolic batch axes only, since "
                                         f"it builds its constants per size of {axis.name}: export with it fixed")
                    if sizes.setdefault(axis, n) != n:
                        self._refuse(spec, shape, sizes)
                elif n != size(axis, sizes):
                    self._refuse(spec, shape, sizes)
        return sizes

    def _refuse(self, spec: InputSpec, shape: tuple[int, ...], sizes: Sizes) -> None:
        expected = ", ".join(str(sizes.get(a, a.size) if isinstance(a, Dim) and not a.parametric or a in sizes
                                 else "n" if isinstance(a, Dim) else a) for a in spec.axes)
        where = "inputs" if spec.kind == "signal" else "parameters"
        lead = "..., " if spec.kind == "signal" else ""
        raise ValueError(f"{where}[{spec.name!r}]: expected shape ({lead}{expected}){spec.describe_as}, got {shape}")

    def accepts(self, inputs: Any, parameters: Any = None) -> Call | None:
        """The checked call (`check`) when these arrays fit the plan (parametric dims bound consistently, pinned ones
        matching), else None."""
        try:
            return self.check(inputs, parameters)
        except (ValueError, KeyError, TypeError):
            return None

    def __call__(self, inputs: Any, parameters: Any = None) -> Any:
        """The plan on `inputs` (an array for a single signal, or a dict name -> array) and `parameters` (a dict
        name -> array).  Arrays may be numpy (autograd's traced ones too), torch or JAX arrays; the rule for
        mixing them is `kernels.arrays.registry`'.  The result is in the inputs' library, dtype and device.  Traced
        by torch.compile on torch tensors, the call is one operator (`kernels.arrays.torch_call`)."""
        if torch_compiling():
            operands = self._arrays(inputs, parameters)
            if torch_call.applies(operands):
                return torch_call.traced(self.key, operands)
        return self.run(self.check(inputs, parameters))

    def flat_call(self, operands: list[Any]) -> Any:
        """The plan on its inputs in its order (`_arrays`'), in one list (`kernels.arrays.torch_call`)."""
        given: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
        for spec, array in zip(self.inputs, operands):
            given[spec.kind != "signal"][spec.name] = array
        return self.run(self.check(*given))

    def check(self, inputs: Any, parameters: Any = None) -> Call:
        """The arguments of a call checked once (errors name the argument): their engine, the arrays in the
        registers they enter (numpy ones converted into the engine's library) and the sizes of the parametric dims;
        `run` executes it.  Every check reads only the arrays' types, dtypes, shapes, devices and layouts, so a call
        whose arrays match a recent checked one in all of them (numpy arrays and torch tensors, none converted) is
        not checked again."""
        arrays = self._arrays(inputs, parameters)
        signature = tuple(map(_signature, arrays))
        kept = bool(arrays) and None not in signature
        known = self._checked.get(signature) if kept else None
        if known is not None:
            return Call(known[0], {spec.register: a for spec, a in zip(self.inputs, arrays)}, dict(known[1]))
        call = self._checked_call(inputs, parameters)
        if kept and all(a is call.arrays[spec.register] for spec, a in zip(self.inputs, arrays)):  # none converted
            self._checked.put(signature, (call.engine, dict(call.sizes)))
        return call

    def _arrays(self, inputs: Any, parameters: Any) -> list[Any]:
        """The inputs' arrays in the order of `self.inputs` (that of `flat_call`'s operands), or none where the
        arguments are not given as a repeated call gives them (a dict of every signal, or one array for one signal,
        and a dict of every parameter, or a mapping that `_check_parameters` takes, such as torch's
        ``ParameterDict``)."""
        signals = {next(iter(self.signals)): inputs} if len(self.signals) == 1 and _is_array(inputs) else inputs
        parameters = {} if parameters is None else parameters
        if type(parameters) is not dict and _is_mapping(parameters):
            parameters = {name: parameters[name] for name in self.parameters if name in parameters.keys()}
        if type(signals) is not dict or type(parameters) is not dict:
            return []
        given = (signals, parameters)
        found = [given[spec.kind != "signal"].get(spec.name) for spec in self.inputs]
        return [] if any(a is None for a in found) else found

    def _checked_call(self, inputs: Any, parameters: Any) -> Call:
        inputs, parameters = self._check_inputs(inputs), self._check_parameters(parameters or {})
        named = {**{f"inputs[{n!r}]": a for n, a in inputs.items()},
                 **{f"parameters[{n!r}]": a for n, a in parameters.items()}}
        engine = engine_of(named)
        sizes = self.bind(inputs, parameters)
        owned = {argument: a for argument, a in named.items() if engine.owns(a)}
        if not engine.promotes:
            _check_one_dtype(engine, owned)
        like = next(iter(owned.values()), None)
        arrays = {}
        for spec in self.inputs:
            array = (inputs if spec.kind == "signal" else parameters)[spec.name]
            arrays[spec.register] = array if engine is NUMPY or engine.owns(array) else engine.convert(
                np.asarray(array), like)
        return Call(engine, arrays, sizes)

    def _check_inputs(self, inputs: Any) -> dict[str, Any]:
        if _is_array(inputs) or isinstance(inputs, (list, tuple)):
            if len(self.signals) != 1:
                raise ValueError(f"inputs: the expression has signals {sorted(self.signals)}; pass a dict")
            inputs = {next(iter(self.signals)): inputs}
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs: expected an array or a dict of arrays, got {type(inputs).__name__}")
        missing = sorted(set(self.signals) - set(inputs))
        if missing:
            raise ValueError(f"inputs: missing signal(s) {missing}")
        return {name: _real(inputs[name], f"inputs[{name!r}]") for name in self.signals}

    def _check_parameters(self, parameters: Any) -> dict[str, Any]:
        if not _is_mapping(parameters):
            raise TypeError(f"parameters: expected a dict name -> array, got {type(parameters).__name__}")
        missing = sorted(set(self.parameters) - set(parameters.keys()))
        if missing:
            raise ValueError(f"parameters: missing {missing} (expected shapes "
                             f"{ {n: self._shape_text(self.parameters[n]) for n in missing} })")
        return {name: _real(parameters[name], f"parameters[{name!r}]") for name in self.parameters}

    @staticmethod
    def _shape_text(spec: InputSpec) -> tuple[int, ...]:
        return tuple(a.size if isinstance(a, Dim) else a for a in spec.axes)

    @outside_torch_compile
    @with_jax_defaults
    def run(self, call: Call) -> Any:
        """Execute a checked call (`check`), unchecked, on its engine."""
        engine, sizes = call.engine, call.sizes
        registers: list[Any] = [None] * self.registers
        for register, array in call.arrays.items():
            registers[register] = array
        for step, release in zip(self.steps, self._release):
            step.run(engine, registers, sizes)
            for r in release:
                registers[r] = None
        return registers[self.output]

    def explain(self) -> str:
        """The program: inputs with their dims, then one line per step."""
        lines = [f"Plan for {self.name}: {len(self.steps)} steps, {self.registers} registers"]
        for spec in self.inputs:
            axes = ", ".join(repr(a) if isinstance(a, Dim) else str(a) for a in spec.axes)
            lines.append(f"  input r{spec.register}: {spec.kind} {spec.name!r} "
                         f"({'..., ' if spec.kind == 'signal' else ''}{axes})")
        parametric = self.parametric
        lines.append("  one plan for every size of " + ", ".join(d.name for d in parametric) if parametric else
                     "  fixed sizes")
        lines += ["  " + step.describe() for step in self.steps]
        lines.append(f"  output r{self.output}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Plan {self.name}: {len(self.steps)} step{'' if len(self.steps) == 1 else 's'}>"


if TYPE_CHECKING:
    #: Where a step's operand comes from.
    Source = Register | Constant | Ones | MaskArray
    #: The sizes of a call's parametric dims.
    Sizes = dict[Dim, int]
