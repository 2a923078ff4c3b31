"""`Attend`: a plan's softmax attention, run through the engine's fused attention kernel where it has one.

A plan computes attention in three steps: the scores contract two sides over a query and a key label, the masked
softmax normalises them along the key, and a second contraction mixes values over the key.  `fuse_attention`
finds that pattern and puts one `Attend` step in place of the three.  At each call, `Attend` factors the scores'
contraction into queries and keys, and the mixing one into values and what follows.  For every operand that
touches neither label, it picks the side with the narrowest bridge: attention's d_head, not d_model.  Then it
calls the engine's fused kernel (torch's ``scaled_dot_product_attention``).

It runs the three steps as they were where the engine has no fused kernel (numpy, where the masked softmax works
in place), where the mask leaves a query with no key, and where the engine's kernel declines the call: torch's
does on the CPU when a key or value is not finite, since its kernel would not keep a non-finite key causal (on a
GPU, where the check's read would wait for the device, it keeps such keys out itself and each query that sees
one is NaN, as under JAX's jit); JAX's keeps it causal itself, so it runs under jit too.  Every path gives the
same numbers, to rounding, where the inputs are finite.

>>> from product_interactions.interactions.architectures import attention
>>> [line.strip() for line in attention(d_model=8, heads=2).explain().splitlines() if "attention (" in line]
['r11 = attention (fused by the engine where it can):']
"""
from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..arrays.bounded_cache import BoundedCache
from ..arrays.example_sizes import example_shape
from ..native import memory
from .masks import Mask
from .plan import Constant, Contract, MaskArray, Register, Softmax, Step, size

if TYPE_CHECKING:
    from ..arrays.engine import Engine
    from .plan import Dim

#: Operand positions taken and the einsum equation that makes one part of a factoring.
Part = tuple[list[int], str]
#: A factoring's fields: q, k, v, rest, scalars1, scalars2, bridge, carried (see `Factoring`).
Fields = tuple[Part, Part, Part, Part, list[int], list[int], int, tuple[int, ...]]
#: A split's cost: ``cost(first side, second side)`` -> (size, bridge labels), or None where it does not fit.
SplitCost = Callable[[list[int], list[int]], tuple[int, str] | None]

#: Factorings kept per step (one per distinct set of operand shapes).
FACTORINGS_KEPT = 16
#: Operands touching neither label, beyond which no factoring is searched (2^count candidates).
FREE_OPERANDS = 6


def fuse_attention(steps: list[Step], output: int) -> list[Step]:
    """`steps` with each (scores, softmax, mix) pattern replaced by one `Attend` (at the mix's place)."""
    readers: dict[int, int] = {}
    for step in steps:
        for r in step.reads:
            readers[r] = readers.get(r, 0) + 1
    producer = {step.output: step for step in steps}
    fused, dropped = {}, set()
    for softmax in steps:
        if not isinstance(softmax, Softmax) or not isinstance(softmax.mask, (MaskArray, type(None))):
            continue
        scores = producer.get(softmax.reads[0])
        mix = [step for step in steps if softmax.output in step.reads]
        if not (isinstance(scores, Contract) and scores.exclusion is None and len(mix) == 1
                and isinstance(mix[0], Contract) and readers[scores.output] == 1 and readers[softmax.output] == 1
                and output not in (scores.output, softmax.output) and softmax.axis == -1
                and (softmax.mask is None or softmax.mask_axes[1] == -1)):  # type: ignore[index]  # with a mask
            continue
        fused[id(mix[0])] = Attend(scores, softmax, mix[0])
        dropped |= {id(scores), id(softmax)}
    return [fused.get(id(step), step) for step in steps if id(step) not in dropped]


def _labels(term: str) -> str:
    return term.replace("...", "")


def _split(terms: list[str], first: str, second: str, cost: SplitCost,
           pinned: tuple[int, ...] = ()) -> tuple[tuple[list[int], list[int]], str] | None:
    """The cheapest split of `terms` into (first side, second side) positions: terms with label `first` (and not
    `second`) go first, terms with `second` (and not `first`) and the `pinned` ones second, each other term where
    ``cost(first side, second side)`` (a number, or None where the split does not fit) is least.  None when no
    split fits."""
    if any(first in t and second in t for t in terms):
        return None
    one = [n for n, t in enumerate(terms) if first in t]
    two = [n for n, t in enumerate(terms) if second in t or n in pinned]
    free = [n for n in range(len(terms)) if n not in one and n not in two]
    if len(free) > FREE_OPERANDS:
        return None
    best = None
    for choice in itertools.product((0, 1), repeat=len(free)):
        sides = (sorted(one + [n for n, c in zip(free, choice) if c == 0]),
                 sorted(two + [n for n, c in zip(free, choice) if c == 1]))
        found = cost(*sides)
        if found is not None and (best is None or found[0] < best[0]):
            best = (found[0], sides, found[1])
    return None if best is None else best[1:]


class Factoring:
    """How one call's operands make queries, keys and values: einsum equations for each (with the operand
    positions each takes), and the one that finishes the mix from the attention's output.  `valid` is False when
    the pattern does not factor so.  `query_axis` is the scores' query axis (from the end), or None (no mask) to
    take the output label that factors best."""

    def __init__(self, scores: Contract, mix: Contract, position: int, shapes1: Sequence[tuple[int, ...]],
                 shapes2: Sequence[tuple[int, ...] | None], query_axis: int | None = None) -> None:
        inputs1, out1 = scores.equation.split("->")
        terms1, terms2 = inputs1.split(","), mix.equation.split("->")[0].split(",")
        sizes: dict[str, int] = {}
        for term, shape in zip(terms1 + terms2, list(shapes1) + list(shapes2)):
            if shape is not None:
                labels = _labels(term)
                sizes.update(zip(labels, shape[len(shape) - len(labels):]))
        self.valid, labels = False, _labels(out1)
        axes = [query_axis] if query_axis is not None else range(-len(labels), -1)
        best = None
        for axis in axes:
            found = self._factor(scores, mix, position, sizes, len(labels) + axis)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        if best is not None:
            self.valid = True
            self.q, self.k, self.v, self.rest, self.scalars1, self.scalars2, self.bridge, self.carried = best[1]

    @staticmethod
    def _factor(scores: Contract, mix: Contract, position: int, sizes: dict[str, int],
                at: int) -> tuple[int, Fields] | None:
        """(cost, fields) with the query at position `at` of the scores' labels; None where that does not fit."""
        inputs1, out1 = scores.equation.split("->")
        inputs2, out2 = mix.equation.split("->")
        terms1, terms2 = inputs1.split(","), inputs2.split(",")
        lead = "..." if out1.startswith("...") else ""
        labels, weights = _labels(out1), _labels(terms2[position])
        if len(set(weights)) != len(weights) or len(weights) != len(labels) or \
                not terms2[position].startswith(lead):
            return None
        query, key, batch = labels[at], labels[-1], labels[:at] + labels[at + 1:-1]
        query2, key2, batch2 = weights[at], weights[-1], weights[:at] + weights[at + 1:-1]
        arrays1 = [n for n, t in enumerate(terms1) if t != ""]
        others = [n for n, t in enumerate(terms2) if t != "" and n != position]
        labels_of = lambda terms, side: set("".join(_labels(terms[n]) for n in side))    # noqa: E731
        leading = lambda terms, side: not lead or any("..." in terms[n] for n in side)  # noqa: E731

        def score_cost(one: list[int], two: list[int]) -> tuple[int, str] | None:
            terms = [terms1[n] for n in arrays1]
            first, second = labels_of(terms, one), labels_of(terms, two)
            if not (set(batch) <= first & second and leading(terms, one) and leading(terms, two)):
                return None
            bridge = "".join(sorted((first & second) - set(batch)))
            return math.prod(sizes[c] for c in bridge), bridge

        def mix_cost(one: list[int], two: list[int]) -> tuple[int, str] | None:
            terms = [terms2[n] for n in others] + [out2]
            values, rest = labels_of(terms, one), labels_of(terms, two)
            if not (set(batch2) <= values and leading(terms, one)):
                return None
            carried = "".join(sorted((values & rest) - set(batch2)))
            return math.prod(sizes[c] for c in carried), carried

        scored = _split([terms1[n] for n in arrays1], query, key, score_cost)
        mixed = None if key2 in out2 or not out2 else \
            _split([terms2[n] for n in others] + [out2], key2, query2, mix_cost, pinned=(len(others),))
        if scored is None or mixed is None:
            return None
        (q_side, k_side), bridge = scored
        (v_side, rest), carried = mixed
        rest = [n for n in rest if n < len(others)]                 # the output's own term is not an operand
        fields = (([arrays1[n] for n in q_side], ",".join(terms1[arrays1[n]] for n in q_side) +
                   f"->{lead}{batch}{query}{bridge}"),
                  ([arrays1[n] for n in k_side], ",".join(terms1[arrays1[n]] for n in k_side) +
                   f"->{lead}{batch}{key}{bridge}"),
                  ([others[n] for n in v_side], ",".join(terms2[others[n]] for n in v_side) +
                   f"->{lead}{batch2}{key2}{carried}"),
                  ([others[n] for n in rest], ",".join([f"{lead}{batch2}{query2}{carried}"] +
                                                       [terms2[others[n]] for n in rest]) + f"->{out2}"),
                  [n for n, t in enumerate(terms1) if t == ""], [n for n, t in enumerate(terms2) if t == ""],
                  len(bridge), tuple(sizes[c] for c in carried))
        return math.prod(sizes[c] for c in bridge) + math.prod(sizes[c] for c in carried), fields


def _flatten_last(array: Any, engine: Engine, count: int) -> Any:
    """`array` with its last `count` axes merged into one (a new axis of 1 when count is 0)."""
    if count == 1:
        return array
    shape = tuple(array.shape)
    return engine.reshape(array, shape[:len(shape) - count] + (math.prod(shape[len(shape) - count:]),))


#: A factoring's key: the shapes of the scores' and the mix's operands.
FactoringKey = tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...] | None, ...]]


class Attend(Step):
    """The three steps of an attention (`fuse_attention`), run through the engine's fused kernel when it has one
    and the call allows (see the module docstring), else one after the other."""

    def __init__(self, scores: Contract, softmax: Softmax, mix: Contract) -> None:
        self.scores, self.softmax, self.mix, self.output = scores, softmax, mix, mix.output
        softmax.consumed = True                             # its scores come from `scores` and go nowhere else
        internal = {scores.output, softmax.output}
        self.reads = tuple(dict.fromkeys(r for step in (scores, softmax, mix) for r in step.reads
                                         if r not in internal))
        self.position = next(n for n, s in enumerate(mix.operands)
                             if isinstance(s, Register) and s.index == softmax.output)
        self._factorings: BoundedCache[FactoringKey, Factoring] = BoundedCache(FACTORINGS_KEPT)
        self._keeps: BoundedCache[tuple[int, ...], bool] = BoundedCache(FACTORINGS_KEPT)
        # the scores' positive scalar constants, handed to the kernel as its scale instead of multiplying q
        self._scales = {n: float(s.value) for n, s in enumerate(scores.operands) if isinstance(s, Constant)
                        and s.value.ndim == 0 and s.value.dtype.kind in "biuf" and 0 < s.value < math.inf}
        mask = softmax.mask
        self._causal = isinstance(mask, MaskArray) and mask.mask == Mask.causal() and mask.supports == (None, None)

    def sources(self) -> list:
        return self.scores.sources() + self.softmax.sources() + self.mix.sources()

    def run(self, engine: Engine, registers: list[Any], sizes: dict[Dim, int]) -> None:
        result = self._fused(engine, registers, sizes) if engine.attention is not None else None
        if result is None:
            self._check_scores(engine, registers, sizes)
            for step in (self.scores, self.softmax, self.mix):
                step.run(engine, registers, sizes)
            registers[self.scores.output] = registers[self.softmax.output] = None
        else:
            registers[self.output] = result

    def _check_scores(self, engine: Engine, registers: list[Any], sizes: dict[Dim, int]) -> None:
        """Refuse (`MemoryLimitError`) scores that would not fit `kernels.MEMORY_LIMIT`, before computing them."""
        like = next(registers[r] for r in self.scores.reads if registers[r] is not None)
        needed = self.scores.output_count(registers, sizes) * engine.dtype(like).itemsize
        if needed > memory.limit():
            raise memory.MemoryLimitError(
                f"inputs: the attention scores need {memory.format_bytes(needed)}, more than kernels.MEMORY_LIMIT = "
                f"{memory.format_bytes(memory.limit())}; on numpy they are held whole: shorten the sequences, "
                f"split the batch, or run on torch or JAX, whose fused attention does not hold them")

    def describe(self) -> str:
        steps = "\n    ".join(step.describe() for step in (self.scores, self.softmax, self.mix))
        return f"r{self.output} = attention (fused by the engine where it can):\n    {steps}"

    def _factoring(self, shapes1: tuple[tuple[int, ...], ...],
                   shapes2: tuple[tuple[int, ...] | None, ...]) -> Factoring:
        query = None if self.softmax.mask is None else \
            self.softmax.mask_axes[0]  # type: ignore[index]  # given with a mask
        return self._factorings.kept((shapes1, shapes2), lambda: Factoring(self.scores, self.mix, self.position,
                                                                           shapes1, shapes2, query))

    def _every_query_keeps_a_key(self, mask: MaskArray, registers: list[Any], sizes: dict[Dim, int]) -> bool:
        """Whether each query of `mask` keeps a key at these sizes (the fused kernel gives a query without one no
        zero row): a pass over the (queries, keys) mask, so kept per size, like the factorings."""
        return self._keeps.kept(tuple(size(d, sizes) for d in mask.dims),
                                lambda: bool(mask.array(registers, sizes).any(axis=1).all()))

    def _fused(self, engine: Engine, registers: list[Any], sizes: dict[Dim, int]) -> Any:
        """The fused result, or None where this call must run the three steps."""
        raw1 = [source.array(registers, sizes) for source in self.scores.operands]
        like = next(a for a, s in zip(raw1, self.scores.operands) if isinstance(s, Register))
        arrays1 = [a if isinstance(s, Register) or n in self._scales else engine.constant(a, like)
                   for n, (a, s) in enumerate(zip(raw1, self.scores.operands))]
        arrays2 = [None if n == self.position else source.array(registers, sizes) if isinstance(source, Register)
                   else engine.constant(source.array(registers, sizes), like)
                   for n, source in enumerate(self.mix.operands)]
        plan = self._factoring(tuple(example_shape(a.shape) for a in arrays1),
                               tuple(None if a is None else example_shape(a.shape) for a in arrays2))
        mask = self.softmax.mask
        if not plan.valid or (mask is not None and not self._every_query_keeps_a_key(
                mask, registers, sizes)):  # type: ignore[arg-type]  # fuse_attention fuses MaskArray masks only
            return None
        q, k, v = (engine.contract(equation, *[source[n] for n in positions])
                   for (positions, equation), source in ((plan.q, arrays1), (plan.k, arrays1), (plan.v, arrays2)))
        scale = math.prod(self._scales[n] for n in plan.scalars1 if n in self._scales)
        for n in plan.scalars1:
            if n not in self._scales:
                q = q * arrays1[n]
        leading = [tuple(q.shape[:len(q.shape) - plan.bridge - 1]), tuple(k.shape[:len(k.shape) - plan.bridge - 1]),
                   tuple(v.shape[:len(v.shape) - len(plan.carried) - 1])]
        if leading.count(leading[0]) != 3:                 # a list: torch.export's symbols have no hash
            return None
        keep, causal = None, False
        if mask is not None:
            causal = self._causal and q.shape[-2] == k.shape[-2]
            keep = None if causal else engine.constant(np.asarray(mask.array(registers, sizes), bool), q)
        q, k, v = (_flatten_last(a, engine, count) for a, count in
                   ((q, plan.bridge), (k, plan.bridge), (v, len(plan.carried))))
        out = engine.attention(q, k, v, keep, causal, scale)  # type: ignore[misc]  # run calls this only with one
        if out is None:
            return None
        out = out if len(plan.carried) == 1 else engine.reshape(out, tuple(out.shape[:-1]) + plan.carried)
        positions, equation = plan.rest
        result = engine.contract(equation, out, *[arrays2[n] for n in positions])
        for n in plan.scalars2:
            result = result * arrays2[n]
        return result
