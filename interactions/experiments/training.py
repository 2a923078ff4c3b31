"""Training loops on parameter dicts, on any engine: Adam on minibatches (numpy with autograd, torch with its
autograd, or JAX with the whole step under jit), and scipy's L-BFGS (numpy).

One Adam serves every engine: the update is written in the engines' shared numpy vocabulary, and only the
gradient comes from the engine's own differentiation.  The same losses on the same batches therefore take the
same steps on numpy, torch and JAX (to rounding).

>>> import numpy as np
>>> loss = lambda p, batch: ((p["w"] - 3.0) ** 2).sum()
>>> params, history = adam(loss, {"w": np.zeros(2)}, steps=300, batches=lambda step: None, lr=0.1, progress=False)
>>> bool(np.allclose(params["w"], 3.0, atol=1e-2)), len(history)
(True, 300)
>>> bool(np.allclose(lbfgs(lambda p: loss(p, None), {"w": np.zeros(2)})["w"], 3.0))
True
"""
from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Callable

import numpy as np
from numpy.typing import DTypeLike
import scipy.optimize
from autograd import value_and_grad
from autograd.misc import flatten
from tqdm import tqdm

from ...extras import MissingExtra, install_command
from ...kernels.arrays import ENGINES, Engine, counting, owner

#: Engines in the order experiments prefer them when none is named: the fastest installed first.
PREFERENCE = ("torch", "jax", "numpy")


def installed_engines() -> list[str]:
    """The names of the engines whose library is installed, fastest first (numpy always)."""
    return [name for name in PREFERENCE if name == "numpy" or importlib.util.find_spec(name) is not None]


def engine_named(name: str | None = None, supported: tuple[str, ...] = PREFERENCE) -> Engine:
    """The engine called `name` among `supported` ("numpy", "torch", "jax"); None picks the fastest installed one.
    A `MissingExtra` says how to install an engine that is not.

    >>> engine_named("numpy").name
    'numpy'
    """
    if name is None:
        return ENGINES[next(found for found in installed_engines() if found in supported)]
    if not isinstance(name, str) or name not in supported:
        raise ValueError(f"engine: expected one of {list(supported)}, got {name!r}")
    if name not in installed_engines():
        raise MissingExtra(f"engine: {name} is not installed: {install_command(name)}")
    return ENGINES[name]


def training_dtype(engine: str) -> str:
    """The dtype experiments train in: float32 on torch and JAX, float64 on numpy (the reference engine)."""
    return "float64" if engine == "numpy" else "float32"


def leaves(params: Any) -> tuple[Any, list[Any]]:
    """(structure, arrays) of nested dicts, lists and tuples of arrays (dict keys in sorted order); `rebuild`
    inverts it.

    >>> structure, arrays = leaves({"b": 1, "a": [2, {"c": 3}]})
    >>> arrays, rebuild(structure, [10, 20, 30])
    ([2, 3, 1], {'a': [10, {'c': 20}], 'b': 30})
    """
    arrays: list[Any] = []

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: walk(node[key]) for key in sorted(node)}
        if isinstance(node, (list, tuple)):
            return type(node)(walk(value) for value in node)
        arrays.append(node)
        return None
    return walk(params), arrays


def rebuild(structure: Any, arrays: Iterable[Any]) -> Any:
    """The nested containers of `structure` (from `leaves`) holding `arrays` in order."""
    remaining = iter(arrays)

    def fill(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: fill(value) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return type(node)(fill(value) for value in node)
        return next(remaining)
    return fill(structure)


def to_engine(params: dict, engine: Engine, dtype: DTypeLike = np.float64, device: Any = None) -> dict:
    """Numpy parameters as `engine`'s arrays of `dtype` on `device` (None: the library's default; arrays already
    of the engine are cast and moved)."""
    structure, arrays = leaves(params)
    like = engine.like(dtype, device)
    converted = [engine.convert(np.asarray(engine.value(a) if engine.owns(a) else a, dtype=dtype), like)
                 for a in arrays]
    return rebuild(structure, converted)


def to_numpy(params: dict) -> dict:
    """Parameters of any engine as plain numpy arrays."""
    structure, arrays = leaves(params)
    return rebuild(structure, [owner(a).value(a) for a in arrays])


def cross_entropy(logits: Any, labels: Any) -> Any:
    """Mean negative log-likelihood of integer `labels` under softmax(`logits`) on the last axis (any engine;
    numpy labels are converted into the logits' library)."""
    engine = owner(logits)
    if not engine.owns(labels) or engine.name == "numpy":
        labels = engine.convert(np.asarray(labels), logits)
    log_probabilities = engine.log_softmax(logits, axis=-1)
    one_hot = engine.floats(labels[..., None] == engine.constant(counting(logits.shape[-1]), logits), logits)
    return -engine.sum(log_probabilities * one_hot) / math.prod(labels.shape)


def accuracy(logits: Any, labels: Any) -> float:
    """Fraction of rows whose arg-max equals the label (any engine)."""
    predicted = np.argmax(owner(logits).value(logits), axis=-1)
    return float(np.mean(predicted == np.asarray(labels)))


def minibatches(count: int, size: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """An endless stream of index arrays: shuffled epochs of `count` items cut into batches of `size`."""
    if count < 1 or size < 1:
        raise ValueError(f"minibatches: expected count >= 1 and size >= 1, got {count}, {size}")
    while True:
        order = rng.permutation(count)
        for start in range(0, count - size + 1 if count >= size else 1, size):
            yield order[start:start + size]


def value_and_gradient(engine: Engine, loss: Callable, structure: Any) -> Callable:
    """``(arrays, batch) -> (loss, gradients)`` of ``loss(params, batch)``, with params the `structure` (from
    `leaves`) holding a list of the engine's arrays (None: params is that list), by the engine's own
    differentiation."""
    def of_arrays(arrays: list[Any], batch: Any) -> Any:
        return loss(arrays if structure is None else rebuild(structure, arrays), batch)
    if engine.name == "numpy":
        return value_and_grad(of_arrays)
    if engine.name == "jax":
        import jax
        return jax.value_and_grad(of_arrays)
    import torch

    def torch_value_and_grad(arrays: list[Any], batch: Any) -> tuple[Any, list[Any]]:
        arrays = [a.detach().requires_grad_() for a in arrays]
        value = of_arrays(arrays, batch)
        gradients = torch.autograd.grad(value, arrays, allow_unused=True)
        return value.detach(), [torch.zeros_like(a) if g is None else g for a, g in zip(arrays, gradients)]
    return torch_value_and_grad


class Adam:
    """Adam on a parameter dict, one ``step(batch)`` at a time, on any engine; ``state()`` and ``load(state)``
    checkpoint it (plain numpy arrays and the step count), so a run can stop and resume.

    `params` (numpy, or the engine's) are trained as `engine`'s arrays of `dtype`; ``loss(params, batch)`` is
    written in the engines' vocabulary (operators, `Engine` methods, the library's architectures).  `clip` bounds
    the global gradient norm; ``schedule="cosine"`` decays the rate to 0 over `steps`.  The parameters live in one
    flat vector (each parameter a view of it; gradients are taken by parameter, then joined), so an update is a
    handful of array calls however many parameters there are.  On JAX the whole step (gradient and update) is
    compiled once, under jit.  With a `device` ("cuda", "cuda:1", JAX's "gpu"), the parameters and the moments
    live there (the library's models bring numpy inputs to their parameters' device).  The update is Kingma and
    Ba's, as ``torch.optim.Adam`` and optax take it: `eps` is added to the bias-corrected root mean square (the
    corrections are folded into the rate and into `eps`, so the step is one pass over the parameters).

    >>> optimiser = Adam(lambda p, batch: ((p["w"] - batch) ** 2).sum(), {"w": np.zeros(2)}, lr=0.1)
    >>> losses = [optimiser.step(3.0) for _ in range(300)]
    >>> bool(np.allclose(optimiser.params["w"], 3.0, atol=1e-2)), optimiser.count
    (True, 300)
    """

    def __init__(self, loss: Callable, params: dict, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, clip: float | None = None, schedule: str = "constant", steps: int | None = None,
                 engine: str | None = "numpy", dtype: DTypeLike = np.float64, device: Any = None) -> None:
        if schedule not in ("constant", "cosine"):
            raise ValueError(f"schedule: expected 'constant' or 'cosine', got {schedule!r}")
        if schedule == "cosine" and steps is None:
            raise ValueError("steps: the cosine schedule needs the number of steps, got None")
        self.lr, self.betas, self.eps, self.clip, self.schedule, self.steps = lr, betas, eps, clip, schedule, steps
        self.engine = engine_named(engine)
        self.structure, arrays = leaves(to_engine(params, self.engine, dtype, device))
        self.shapes = [tuple(a.shape) for a in arrays]
        flat = self._flatten(arrays)
        self._vectors, self.count = (flat, flat * 0, flat * 0), 0
        gradient_of = value_and_gradient(self.engine, loss, self.structure)
        self._update = self._compiled(gradient_of)

    def _flatten(self, arrays: Sequence[Any]) -> Any:
        return self.engine.concatenate([self.engine.reshape(a, (-1,)) for a in arrays], axis=0)

    def _split(self, vector: Any) -> list[Any]:
        ends = np.cumsum([math.prod(shape) for shape in self.shapes])
        return [self.engine.reshape(vector[end - math.prod(shape):end], shape) for end, shape in zip(ends, self.shapes)]

    def _unflatten(self, vector: Any) -> dict:
        return rebuild(self.structure, self._split(vector))

    def _compiled(self, gradient_of: Callable) -> Callable:
        engine, betas, clip = self.engine, self.betas, self.clip

        def update(state: tuple[Any, Any, Any], batch: Any, rate: float, eps: float
                   ) -> tuple[tuple[Any, Any, Any], Any]:
            vector, first, second = state
            value, gradients = gradient_of(self._split(vector), batch)      # by parameter: no slicing to undo
            gradient = self._flatten(gradients)
            norm = engine.sqrt(engine.sum(gradient * gradient))
            if clip is not None:
                gradient = gradient * (clip / engine.maximum(norm + 1e-12, clip))
            first = betas[0] * first + (1 - betas[0]) * gradient
            second = betas[1] * second + (1 - betas[1]) * gradient * gradient
            # the loss and the gradient norm in one array: the step reads them from the device in one transfer
            return (vector - rate * first / (engine.sqrt(second) + eps), first, second), engine.stack([value, norm])
        if engine.name == "jax":
            import jax
            return jax.jit(update)
        return update

    @property
    def params(self) -> dict:
        """The current parameters, as the engine's arrays."""
        return self._unflatten(self._vectors[0])

    def step(self, batch: Any) -> float:
        """One update on `batch`; returns the loss before it.  A non-finite loss or gradient raises
        FloatingPointError and leaves the parameters as they were."""
        step, rate = self.count, self.lr
        if self.schedule == "cosine":
            rate = self.lr * 0.5 * (1 + math.cos(math.pi * min(step, self.steps)  # type: ignore[type-var, operator]
                                                 / self.steps))                   # (cosine: steps is given)
        # rate / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps), both corrections folded: the same step
        root = math.sqrt(1 - self.betas[1] ** (step + 1))
        corrected = rate * root / (1 - self.betas[0] ** (step + 1))
        state, numbers = self._update(self._vectors, batch, corrected, self.eps * root)
        value, norm = map(float, self.engine.value(numbers))
        if not math.isfinite(value) or not math.isfinite(norm):
            raise FloatingPointError(f"adam: the loss or its gradient is not finite at step {step} ({value})")
        self._vectors, self.count = state, step + 1
        return value

    def state(self) -> dict:
        """A checkpoint: the step count, and the parameters and moments (one list of arrays each, in the order
        of `leaves`) as plain numpy arrays."""
        split = {key: [self.engine.value(a) for a in self._split(vector)]
                 for key, vector in zip(("params", "first", "second"), self._vectors)}
        return {"count": self.count, **split}

    def load(self, state: dict) -> None:
        """Resume from a `state` of an Adam on the same parameter shapes (any engine's)."""
        if not isinstance(state, dict) or set(state) != {"count", "params", "first", "second"}:
            raise ValueError("state: expected the dict of Adam.state() (count, params, first, second)")
        for key in ("params", "first", "second"):
            if [np.shape(a) for a in state[key]] != self.shapes:
                raise ValueError(f"state[{key!r}]: expected shapes {self.shapes}, got "
                                 f"{[np.shape(a) for a in state[key]]}")
        like = self._vectors[0]
        self._vectors = tuple(self.engine.convert(np.concatenate([np.ravel(a) for a in state[key]]), like)
                              for key in ("params", "first", "second"))
        self.count = int(state["count"])


def adam(loss: Callable, params: dict, steps: int, batches: Callable, lr: float = 1e-3,
         betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, clip: float | None = None,
         schedule: str = "constant", progress: bool = True, description: str = "adam", engine: str | None = "numpy",
         dtype: DTypeLike = np.float64, device: Any = None) -> tuple[dict, list[float]]:
    """Minimise ``loss(params, batches(step))`` for `steps` steps of `Adam` (same options); returns (params as the
    engine's arrays, per-step losses)."""
    optimiser = Adam(loss, params, lr, betas, eps, clip, schedule, steps, engine, dtype, device)
    history: list[float] = []
    bar = tqdm(range(steps), desc=description, disable=not progress, leave=False)
    for step in bar:
        history.append(optimiser.step(batches(step)))
        if step % 10 == 0:
            bar.set_postfix(loss=f"{history[-1]:.4f}")
    return optimiser.params, history


def lbfgs(loss: Callable, params: dict, maxiter: int = 200) -> dict:
    """Minimise the full-batch ``loss(params)`` with scipy's L-BFGS-B (numpy engine); returns the parameters."""
    flat, unflatten = flatten(params)
    objective = value_and_grad(lambda vector: loss(unflatten(vector)))

    def function(vector: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = objective(vector)
        return float(value), np.asarray(gradient, dtype=np.float64)

    solution = scipy.optimize.minimize(function, flat, jac=True, method="L-BFGS-B", options={"maxiter": maxiter})
    return unflatten(solution.x)
