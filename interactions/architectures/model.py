"""`Model`: an architecture as an expression with named parameters, initialisation and a compiled apply.

Architectures build their expression from the nodes of `interactions`; `Model` compiles it into a plan and
checks parameters by name and shape.  A plan whose position sizes are parametric serves every input geometry
(sequence length, number of points), so most models compile once; a geometry no kept plan accepts is compiled
anew, and at most `PLANS_KEPT` plans are kept (the least recently used goes first).
"""
from __future__ import annotations

import html
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
from numpy.typing import DTypeLike

from ...algebra.algebra import check_count, check_seed
from ...kernels.arrays import NUMPY, array_kind, owner, with_jax_defaults
from ..expression import Expr, Parameter, Signal
from ..orders import order as self_interaction_order

if TYPE_CHECKING:
    from ...kernels import Plan

#: Compiled plans a model keeps (for geometries no other kept plan serves).
PLANS_KEPT = 8
#: Held while a model's kept plans are read or changed (a model served from several threads).
_PLANS_LOCK = threading.Lock()


#: The largest size hyperparameter (a width, a number of heads, states, channels, basis functions...): past any
#: layer these engines train, and small enough that a constructor refuses before anything is allocated.
MAX_WIDTH = 2**12


def check_width(value: object, argument: str, minimum: int = 1) -> int:
    """A size hyperparameter: an int from `minimum` to `MAX_WIDTH`, or a TypeError / ValueError naming it."""
    value = check_count(value, argument, minimum)
    if value > MAX_WIDTH:
        raise ValueError(f"{argument}: expected at most MAX_WIDTH = {MAX_WIDTH:,}, got {value:,}")
    return value


def check_positive(value: object, argument: str, largest: float = 1e100) -> float:
    """A real hyperparameter 0 < value <= largest (a radius, a step), as a float, or an error naming it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{argument}: expected a positive real number, got {type(value).__name__} {value!r}")
    if not 0 < float(value) <= largest:
        raise ValueError(f"{argument}: expected a real number in (0, {largest:g}], got {value!r}")
    return float(value)


def check_dtype(dtype: DTypeLike) -> np.dtype:
    """The floating dtype an `init(dtype=...)` makes its weights in, or a TypeError naming `dtype` (an int dtype
    would truncate the weights)."""
    try:
        found = np.dtype(dtype)
    except (TypeError, ValueError):                    # ValueError: a string numpy cannot parse, e.g. "1/0"
        raise TypeError(f"dtype: expected a floating dtype such as numpy.float32, got {dtype!r:.60}") from None
    if found.kind != "f":
        raise TypeError(f"dtype: expected a floating dtype (weights would be truncated), got {found}")
    return found


def _as_array(value: Any, argument: str) -> Any:
    """`value` where it is an array (any library), else numpy's array of it (a number, a nested list)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return value
    try:
        return np.asarray(value)
    except ValueError as error:                              # a ragged list
        raise TypeError(f"{argument}: expected an array of real numbers, got a ragged {type(value).__name__} "
                        f"({error})") from None


def check_signal(x: Any, argument: str = "x") -> Any:
    """`x` when it holds real numbers (any library) and none of its sizes but the batch's is 0 (an empty batch
    gives an empty result, as torch's layers do; no empty sequence or cloud), else a TypeError or ValueError naming
    it."""
    array = _as_array(x, argument)
    name, kind = str(array.dtype).split(".")[-1], array_kind(array)       # torch's and JAX's bfloat16: "f"
    if kind not in "biuf":
        raise TypeError(f"{argument}: expected an array of real numbers, got dtype {name}")
    engine = owner(x)
    if engine is not NUMPY:                    # torch and JAX compute in the input's dtype: it must be a float one
        why = engine.unusable(x)
        if why is not None:
            raise TypeError(f"{argument}: expected a dense {engine.name} array with values, got {why}")
        if kind != "f":
            how = f"{argument}.float() or {argument}.double()" if engine.name == "torch" else \
                f"{argument}.astype(jnp.float32)"
            raise TypeError(f"{argument}: expected floating-point values ({engine.name} computes in the input's "
                            f"dtype; convert with {how}), got {name}")
    shape = tuple(np.shape(x))
    if 0 in shape[1:]:
        raise ValueError(f"{argument}: expected positive sizes after the batch axis, got shape {shape}")
    return x


def check_params(params: Any, shapes: Mapping[str, tuple[int, ...]]) -> Any:
    """`params` holding exactly the names of `shapes` (name -> shape), each an array of numbers in its shape
    (numpy, autograd, torch or JAX), or a TypeError or ValueError naming the parameter."""
    if not (hasattr(params, "keys") and hasattr(params, "__getitem__")):          # dicts, autograd's DictBox
        raise TypeError(f"params: expected a dict name -> array, got {type(params).__name__}")
    names = set(params.keys())
    missing, unexpected = sorted(set(shapes) - names), sorted(names - set(shapes))
    if missing:
        raise ValueError(f"params: missing {missing} (expected shapes { {name: shapes[name] for name in missing} })")
    if unexpected:
        raise ValueError(f"params: unexpected {unexpected} (expected only {sorted(shapes)})")
    for name, shape in shapes.items():
        value = params[name]
        array = _as_array(value, f"params[{name!r}]")
        if array_kind(array) not in "iuf":
            got = f"of dtype {str(array.dtype).split('.')[-1]}" if array is value else f"{value!r:.60}"
            raise TypeError(f"params[{name!r}]: expected an array of numbers, got {type(value).__name__} {got}")
        if tuple(np.shape(value)) != tuple(shape):
            raise ValueError(f"params[{name!r}]: expected shape {tuple(shape)}, got {tuple(np.shape(value))}")
    return params


def parameter_summary(parameters: Mapping[str, tuple[int, ...]]) -> str:
    """'N parameters (M numbers)' for a map of parameter shapes (the reprs of the models)."""
    return f"{len(parameters)} parameters ({sum(math.prod(shape) for shape in parameters.values()):,} numbers)"


class Model:
    """Subclasses define ``build(geometry) -> (expr, signal)``, ``geometry_of(x)`` and the default `geometry`.

    `scales` maps a parameter name to the standard deviation of its normal initialisation (default
    1 / sqrt(fan-in), the last axis).
    """

    geometry: tuple[int, ...] = ()
    scales: dict[str, float] = {}

    def __init__(self) -> None:
        self._default: tuple[Expr, Signal] | None = None
        self._parameters: dict[str, tuple[int, ...]] | None = None
        self._plans: OrderedDict[tuple[int, ...], Plan] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        """The model pickled without what it builds again on use, its expression and its plans (whose compiled
        kernels do not pickle: a used model had failed to, and a module of it with ``torch.save``)."""
        return {**self.__dict__, "_default": None, "_plans": OrderedDict()}

    @property
    def name(self) -> str:
        """What the model is called in its display, its plans and its torch module (default: its class's name)."""
        return type(self).__name__

    # ------------------------------------------------------------------ expression
    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        raise NotImplementedError

    def geometry_of(self, x: Any) -> tuple[int, ...]:
        raise NotImplementedError

    def _built(self) -> tuple[Expr, Signal]:
        if self._default is None:
            self._default = self.build(self.geometry)
        return self._default

    @property
    def expr(self) -> Expr:
        """The expression at the default geometry (small, for inspection and formulas)."""
        return self._built()[0]

    @property
    def signal(self) -> Signal:
        """The input Signal of `expr`."""
        return self._built()[1]

    def plan(self, geometry: Iterable[int] | None = None) -> Plan:
        """The compiled plan for an input geometry (default: the inspected one), kept or compiled now (see the module
        docstring)."""
        geometry = self.geometry if geometry is None else tuple(geometry)
        with _PLANS_LOCK:
            plan = self._plans.get(geometry)
        if plan is None:
            plan = (self._built()[0] if geometry == self.geometry else self.build(geometry)[0]).compile()
            plan.name = f"{self.name} at {geometry}" if geometry else self.name
        self._keep(geometry, plan)
        return plan

    def _keep(self, geometry: tuple[int, ...], plan: Plan) -> None:
        """Keep `plan` for `geometry`, the most recently used, within `PLANS_KEPT`."""
        with _PLANS_LOCK:
            self._plans[geometry] = plan
            self._plans.move_to_end(geometry)
            while len(set(map(id, self._plans.values()))) > PLANS_KEPT or len(self._plans) > 4 * PLANS_KEPT:
                self._plans.popitem(last=False)

    def checked(self, geometry: tuple[int, ...], x: Any, params: Mapping[str, Any]) -> tuple[Plan, Any]:
        """(plan, checked call) for inputs of `geometry`: the plan kept for it, else a kept plan that accepts the
        arrays (parametric dims), else one compiled now; the arrays are checked once, by the plan that runs them."""
        with _PLANS_LOCK:
            plan = self._plans.get(geometry)
            others = [] if plan is not None else list(reversed(self._plans.values()))
        if plan is not None:
            self._keep(geometry, plan)
            return plan, plan.check(x, params)
        for kept in others:
            call = kept.accepts(x, params)
            if call is not None:
                self._keep(geometry, kept)
                return kept, call
        plan = self.plan(geometry)
        return plan, plan.check(x, params)

    def explain(self, geometry: Iterable[int] | None = None) -> str:
        """The compiled plan, step by step (`kernels.plans.plan.Plan.explain`)."""
        return self.plan(geometry).explain()

    def order(self) -> int:
        """The self-interaction order in the input."""
        return self_interaction_order(self.expr, self.signal)

    @overload
    def formula(self, *, latex: Literal[False] = False, softmax: str = "expand",
                max_terms: int = ...) -> np.ndarray: ...
    @overload
    def formula(self, *, latex: Literal[True], softmax: str = "expand", max_terms: int = ...) -> str: ...
    @overload
    def formula(self, *, latex: bool, softmax: str = "expand", max_terms: int = ...) -> np.ndarray | str: ...
    def formula(self, **options: Any) -> np.ndarray | str:
        """The component formula at the default geometry."""
        return self.expr.formula(**options)

    # ------------------------------------------------------------------ parameters
    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        """Parameter name -> array shape (found in the expression once)."""
        if self._parameters is None:
            self._parameters = {node.name: node.shape for node in self.expr.walk() if isinstance(node, Parameter)}
        return dict(self._parameters)

    def init(self, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> dict[str, np.ndarray]:
        """Seeded random parameters of a floating `dtype`: normal with standard deviation `scales[name]` or
        1/sqrt(last axis)."""
        dtype = check_dtype(dtype)
        rng = check_seed(seed)
        params = {}
        for name, shape in self.parameters.items():
            scale = self.scales.get(name, 1.0 / np.sqrt(shape[-1]))
            params[name] = (scale * rng.standard_normal(shape)).astype(dtype)
        return params

    # ------------------------------------------------------------------ display
    def _where(self) -> str:
        """' at geometry (...)' for a model built per geometry, '' for one expression at its own sizes."""
        return f" at geometry {self.geometry}" if self.geometry else ""

    def __repr__(self) -> str:
        return (f"<{self.name}: {parameter_summary(self.parameters)}, input {self.signal.name} in "
                f"{self.signal.algebra.name}{self._where()}, order {self.order()}>")

    def _repr_html_(self) -> str:
        """A summary: the input, its algebra and the order, then one row per parameter with its shape."""
        rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{shape}</td><td>{math.prod(shape):,}</td></tr>"
                       for name, shape in self.parameters.items())
        return (f"<p><b>{html.escape(self.name)}</b>: input {html.escape(self.signal.name)} in "
                f"{html.escape(self.signal.algebra.name)}{self._where()}; self-interaction order "
                f"{self.order()}</p><table><tr><th>parameter</th><th>shape</th><th>numbers</th></tr>{rows}</table>")

    def to_torch(self, seed: int | np.random.Generator = 0, dtype: Any = np.float64) -> Any:
        """This model as a `torch.nn.Module` whose parameters start at ``init(seed, dtype)``
        (`interactions.torch_module`)."""
        from ..torch_module import to_torch
        return to_torch(self, seed, dtype)

    # ------------------------------------------------------------------ numerics
    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], x: Any) -> Any:
        """The model on a batch of inputs (autograd arrays welcome)."""
        check_signal(x)
        check_params(params, self.parameters)
        plan, call = self.checked(self.geometry_of(x), x, params)
        return plan.run(call)
