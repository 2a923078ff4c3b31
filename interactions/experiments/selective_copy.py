"""Table 3 of the paper: selective copying with attention of projection rank R = 1, 2, 4.

The task.  A sequence of ``length`` tokens holds ``tokens`` data tokens (drawn from ``vocabulary`` symbols) at
random positions among noise tokens in its first ``length - tokens`` places, then ``tokens`` markers.  At the k-th
marker the model must output the k-th data token: it copies the data tokens, in order, skipping the noise.  The
figure is the accuracy over the copied tokens of fresh test sequences (chance is 1 / vocabulary).  Guessing the
k-th data token from positions alone (the data token nearest to where the k-th one lies on average) scores about
0.39 at length 192 with 16 tokens and 8 symbols; beating it takes counting the data tokens.

The model.  Each layer is the attention of the paper with a rank-R projection,

    P^c(F(P^R(X T(X))) T(X)),

the library's ``attention(d_model, heads=1, causal=True, rank=R, d_head=d_head)``: R score channels, each with its
own query, key and value of size d_head, softmax F over the causal keys, P^c summing over them; the projection keeps
R * d_head numbers per position pair.  Around it a small causal transformer in autograd.numpy: a token embedding
plus a sinusoidal position code, ``layers`` pre-norm residual blocks (attention, then a ReLU MLP), and a linear
readout to the data symbols at the marker positions.  Every rank is trained with Adam on the cross-entropy of the
copied tokens, on the same stream of fresh random sequences, and tested on the same held-out sequences.  ``d_head``
is small (4) so that the projection rank, not the width, bounds what a layer can pass on.  The full setting trains
the ranks in ``workers`` processes at once (the two cores of a small machine).

>>> import numpy as np
>>> inputs, targets = generate(2, length=10, tokens=3, vocabulary=4, rng=np.random.default_rng(0))
>>> inputs.shape, targets.shape
((2, 10), (2, 3))
>>> bool(np.all(inputs[:, -3:] == MARKER)), bool(np.all(targets >= FIRST_DATA))
(True, True)
>>> [sequence[sequence >= FIRST_DATA].tolist() == data.tolist() for sequence, data in zip(inputs, targets)]
[True, True]
>>> model = CopyModel(dict(QUICK, length=10, tokens=3, vocabulary=4), rank=2)
>>> model.logits(model.init(seed=0), inputs).shape           # (batch, tokens, vocabulary)
(2, 3, 4)
"""
from __future__ import annotations

import math
import os
import pathlib
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
from tqdm import tqdm

from ...algebra.algebra import check_count

from ..architectures import attention
from ..architectures.model import check_seed
from ...kernels.arrays import owner
from . import checkpoint as checkpoints
from .report import Timings, check_setting, report, row, subsample
from .training import PREFERENCE, Adam, cross_entropy, engine_named, leaves, training_dtype

#: The engines it trains on.
SUPPORTED = PREFERENCE

#: Token ids: noise, marker, then the data symbols FIRST_DATA, ..., FIRST_DATA + vocabulary - 1.
NOISE, MARKER, FIRST_DATA = 0, 1, 2

#: The paper's accuracy for each projection rank R (Table 3, length 192).
PAPER = {1: 0.3603, 2: 0.9173, 4: 0.9239}

QUICK = {"length": 32, "tokens": 4, "vocabulary": 8, "d_model": 32, "d_head": 4, "layers": 2, "ranks": [1, 2, 4],
         "steps": 120, "batch": 16, "lr": 0.006, "schedule": "cosine", "clip": 1.0, "test_samples": 256,
         "workers": 1, "curve_points": 50, "seeds": 1, "eval_every": 40, "curve_samples": 64}
FULL = {"length": 192, "tokens": 16, "vocabulary": 8, "d_model": 32, "d_head": 4, "layers": 2, "ranks": [1, 2, 4],
        "steps": 10000, "batch": 8, "lr": 0.003, "schedule": "cosine", "clip": 1.0, "test_samples": 512,
        "workers": 2, "curve_points": 100, "seeds": 2, "eval_every": 500, "curve_samples": 256}

#: Sequences per forward pass when testing (bounds the memory of the length x length scores).
EVAL_BATCH = 64


def generate(count: int, length: int, tokens: int, vocabulary: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """`count` selective-copying sequences: (inputs, targets), integer arrays of shapes (count, length) and
    (count, tokens).

    Each row of `inputs` has `tokens` data symbols (ids FIRST_DATA to FIRST_DATA + vocabulary - 1, drawn uniformly)
    at distinct random positions among the first ``length - tokens`` places, NOISE elsewhere there, and MARKER in
    the last `tokens` places; `targets` holds the data symbols in the order they appear.

    >>> inputs, targets = generate(1, length=8, tokens=2, vocabulary=3, rng=np.random.default_rng(1))
    >>> inputs[0, -2:].tolist(), int(np.sum(inputs[0, :-2] != NOISE))
    ([1, 1], 2)
    """
    count, length, tokens, vocabulary = (check_count(value, name) for value, name in
                                         ((count, "count"), (length, "length"), (tokens, "tokens"),
                                          (vocabulary, "vocabulary")))
    if 2 * tokens > length:
        raise ValueError(f"tokens: {tokens} data tokens and {tokens} markers do not fit in length {length}")
    places = length - tokens
    positions = np.sort(np.argsort(rng.random((count, places)), axis=1)[:, :tokens], axis=1)
    targets = rng.integers(FIRST_DATA, FIRST_DATA + vocabulary, size=(count, tokens))
    inputs = np.full((count, length), NOISE, dtype=np.int64)
    np.put_along_axis(inputs, positions, targets, axis=1)
    inputs[:, places:] = MARKER
    return inputs, targets


def position_code(length: int, d_model: int) -> np.ndarray:
    """The sinusoidal position code, shape (length, d_model): sines then cosines of position times rates
    1, 10000^(-1/h), ..., with h = ceil(d_model / 2)."""
    half = -(-d_model // 2)
    angles = np.arange(length)[:, None] / 10000.0 ** (np.arange(half) / half)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)[:, :d_model]


class CopyModel:
    """The causal transformer of the module docstring, with `config["layers"]` rank-R attention layers."""

    def __init__(self, config: dict, rank: int) -> None:
        self.config = config
        self.attention = attention(config["d_model"], heads=1, causal=True, rank=rank, d_head=config["d_head"])
        self.code = position_code(config["length"], config["d_model"])

    def init(self, seed: int) -> dict:
        """Seeded parameters: the embedding, per layer the attention's and the MLP's, the readout."""
        rng = check_seed(seed)
        d, vocabulary = self.config["d_model"], self.config["vocabulary"]
        params = {"embed": rng.standard_normal((FIRST_DATA + vocabulary, d)),
                  "readout": rng.standard_normal((d, vocabulary)) / np.sqrt(d), "offset": np.zeros(vocabulary)}
        for layer in range(self.config["layers"]):
            params[f"attention{layer}"] = self.attention.init(rng)
            params[f"up{layer}"] = rng.standard_normal((d, 2 * d)) / np.sqrt(d)
            params[f"down{layer}"] = rng.standard_normal((2 * d, d)) / np.sqrt(2 * d)
        return params

    def logits(self, params: dict, inputs: Any) -> Any:
        """Logits over the data symbols at the marker positions: shape (batch, tokens, vocabulary)."""
        engine = owner(params["embed"])
        if isinstance(inputs, np.ndarray):                      # to the embedding's device (JAX's jit traces them)
            inputs = engine.convert(inputs, params["embed"])
        h = params["embed"][inputs]
        h = h + engine.constant(self.code, h)[: inputs.shape[1]]
        for layer in range(self.config["layers"]):
            h = h + self.attention.apply(params[f"attention{layer}"], engine.layer_norm(h))
            h = h + engine.pointwise("relu", engine.layer_norm(h) @ params[f"up{layer}"]) @ params[f"down{layer}"]
        return engine.layer_norm(h[:, -self.config["tokens"]:]) @ params["readout"] + params["offset"]


def train(config: dict, rank: int, seed: int, progress: bool = False,
          checkpoint: str | os.PathLike[str] | None = None) -> dict:
    """Train and test the rank-`rank` model: accuracy, accuracy per marker, loss curve, accuracy curve, parameter
    count, seconds.  ``config["engine"]`` (absent or None: the fastest installed) trains in ``config["dtype"]``
    (absent: `training_dtype`).

    The training sequences (fresh ones at every step, drawn from the seed and the step) and the test sequences
    depend on `seed` only, so every rank sees the same data.  Every ``config["eval_every"]`` steps, the accuracy
    on ``config["curve_samples"]`` held-out sequences joins the accuracy curve.  With `checkpoint` (a directory)
    the run saves itself there at those steps (``copy-R{rank}-seed{seed}.npz``, `checkpoint.save`) and, when the
    file exists, resumes from it exactly, on any engine.
    """
    start = time.perf_counter()
    model = CopyModel(config, rank)
    shape = (config["length"], config["tokens"], config["vocabulary"])

    def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
        inputs, targets = generate(config["batch"], *shape, np.random.default_rng([seed, 1, step]))
        return inputs, targets - FIRST_DATA

    def loss(params: dict, batch: tuple[Any, Any]) -> Any:
        return cross_entropy(model.logits(params, batch[0]), batch[1])

    engine = engine_named(config.get("engine"))
    if config["workers"] > 1 and engine.name == "torch":        # one share of the run's threads (`threads.limited`)
        engine.xp.set_num_threads(max(1, engine.threads() // config["workers"]))  # type: ignore[attr-defined]
    optimiser = Adam(loss, model.init(seed), lr=config["lr"], clip=config["clip"], schedule=config["schedule"],
                     steps=config["steps"], engine=engine.name,
                     dtype=config.get("dtype") or training_dtype(engine.name), device=config.get("device"))
    held_out = generate(config["curve_samples"], *shape, np.random.default_rng([seed, 3]))
    history: list[float] = []
    accuracy_curve: list[list[float]] = []
    path: pathlib.Path | None = None
    run_config = {k: v for k, v in config.items() if k not in ("engine", "workers", "device")}
    if checkpoint is not None:
        path = pathlib.Path(checkpoint) / f"copy-R{rank}-seed{seed}.npz"
        if path.exists():
            saved = checkpoints.load(path, optimiser, run_config)
            history, accuracy_curve = saved["history"].tolist(), saved["accuracy_curve"].tolist()
    for step in tqdm(range(optimiser.count, config["steps"]), desc=f"copy R = {rank}, seed {seed}",
                     disable=not progress, leave=False):
        history.append(optimiser.step(batch(step)))
        if (step + 1) % config["eval_every"] == 0 or step + 1 == config["steps"]:
            accuracy_curve.append([step + 1, float(np.mean(_correct(model, optimiser.params, *held_out)))])
            if path is not None:
                checkpoints.save(path, optimiser, run_config, history=history, accuracy_curve=accuracy_curve)
    params = optimiser.params
    correct = _correct(model, params, *generate(config["test_samples"], *shape, np.random.default_rng([seed, 2])))
    return {"accuracy": float(np.mean(correct)), "by_marker": np.mean(correct, axis=0).tolist(),
            "curve": subsample(history, config["curve_points"]), "accuracy_curve": accuracy_curve,
            "parameters": sum(math.prod(a.shape) for a in leaves(params)[1]),
            "seconds": time.perf_counter() - start}


def _correct(model: CopyModel, params: dict, inputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Whether each marker's prediction is right: bool (sequences, tokens), in batches of EVAL_BATCH."""
    engine = owner(params["embed"])
    predicted = np.concatenate([np.argmax(engine.value(model.logits(params, inputs[i:i + EVAL_BATCH])), axis=-1)
                                for i in range(0, len(inputs), EVAL_BATCH)])
    return predicted == targets - FIRST_DATA


def _train_all(config: dict, seeds: list, progress: bool, checkpoint: str | os.PathLike[str] | None = None) -> dict:
    """`train` for every rank and seed: {(rank, seed): result}, in `config["workers"]` processes (largest rank
    first) when more than one."""
    runs = [(rank, seed) for rank in sorted(config["ranks"], reverse=True) for seed in seeds]
    if config["workers"] == 1:
        return {key: train(config, *key, progress, checkpoint) for key in sorted(runs)}
    with ProcessPoolExecutor(max_workers=config["workers"]) as pool:
        futures = {key: pool.submit(train, config, *key, False, checkpoint) for key in runs}
        return {key: futures[key].result() for key in tqdm(sorted(runs), desc="copy", disable=not progress)}


def run(quick: bool = False, seed: int = 0, progress: bool = True, engine: str | None = None,
        steps: int | None = None, checkpoint: str | os.PathLike[str] | None = None, device: str | None = None) -> dict:
    """Train every rank on the same data on `engine` (None: the fastest installed), with ``config["seeds"]``
    seeds from `seed` on; rows of copy accuracy (mean over the seeds, with their spread) beside Table 3, plus loss
    and accuracy curves and the accuracy at each marker for plots.  `steps` replaces the setting's number of
    steps (a longer run: on a GPU, say); `checkpoint` (an existing directory) saves every run there and resumes
    those already saved (`train`); `device` ("cuda", say) is where the parameters train (None: the engine's
    default)."""
    check_setting(quick, seed)
    engine = engine_named(engine).name
    config: dict[str, Any] = dict(QUICK if quick else FULL, engine=engine, dtype=training_dtype(engine),
                                  device=device)
    if steps is not None:
        config["steps"] = check_count(steps, "steps")
    if checkpoint is not None:
        checkpoints.check_directory(checkpoint)
    seeds = [seed + n for n in range(config["seeds"])]
    timings = Timings()
    with timings("train and test"):
        results = _train_all(config, seeds, progress, checkpoint)
    rows = []
    for rank in config["ranks"]:
        accuracies = [results[rank, s]["accuracy"] for s in seeds]
        rows.append(row(f"R = {rank}", float(np.mean(accuracies)), paper=PAPER[rank], seeds=accuracies,
                        std=float(np.std(accuracies)), parameters=results[rank, seed]["parameters"],
                        seconds=round(sum(results[rank, s]["seconds"] for s in seeds), 2)))
    name = {key: f"R = {key[0]}" + (f", seed {key[1]}" if len(seeds) > 1 else "") for key in results}
    return report("copy", quick, seed, config, rows, dict(timings), engine=engine, chance=1 / config["vocabulary"],
                  curves={name[key]: result["curve"] for key, result in sorted(results.items())},
                  accuracy_curves={name[key]: result["accuracy_curve"] for key, result in sorted(results.items())},
                  by_marker={name[key]: result["by_marker"] for key, result in sorted(results.items())})
