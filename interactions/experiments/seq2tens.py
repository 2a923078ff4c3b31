"""Seq2Tens time-series classification: LS2T and FCN-LS2T on sktime's JapaneseVowels and BasicMotions.

Inputs are standardised per coordinate with the mean and standard deviation of the training set over its kept
points (mask 1); padding stays 0.  With x~ the standardised sequence of n points, the models are

* LS2T (deep, D layers of width N and order M, the paper's LS2T^3_64):
  y^0_t = x~_t,  y^i_t = norm_m( <l^i_{m,j}, Phi(Delta u^i_0, ..., Delta u^i_t)> )  for i = 1..D,
  u^1_t = (y^0_t, t / (n - 1)),  u^i_t = W_i y^{i-1}_t (i > 1),  Delta u_t = u_t - u_{t-1} (u_{-1} = 0),
  with l^i_{m,j} = v^{i,1}_j (x) ... (x) v^{i,m}_j (m = 1..M, j = 1..N) and norm_m standardising level m's N
  values; `interactions.architectures.deep_ls2t` with time, difference, normalise;
* FCN-LS2T (the paper's FCN_64-LS2T^3_64): three convolution blocks in front,
  h^0 = x~,  h^k_t = relu(layernorm(sum_{s < p_k} K^k_s h^{k-1}_{t+c_k-s} + b^k))  (k = 1, 2, 3),
  with p = 8, 5, 3 taps centred by c_k = floor(p_k / 2) as in the FCN's "same" convolutions (h = 0 outside the
  sequence): the causal zero-padded convolution of `interactions.architectures.convolution` (``cyclic=False``)
  shifted c_k steps back; layernorm standardises the channels at each time step; then the LS2T stack on h^3;
* FCN-LS2T, batch norm (the original FCN's normalisation): layernorm replaced by batch normalisation,
  gamma_k (h - mu_k) / sqrt(sigma_k^2 + eps) + beta_k per channel, mu_k and sigma_k^2 the mean and variance over
  the batch and time (kept points only).  While training they are the minibatch's (and differentiated);
  at test time they are the training set's population moments (`Classifier.population_moments`, computed once
  after training layer by layer, each layer's input normalised by the moments of the layers before it) where
  a framework keeps running averages of the minibatch moments: the fixed-point these averages estimate, with
  no optimiser state to add to a functional training loop;

and both read out logits = A y^D_{n-1} + c, the last layer's features over the whole sequence.  Every layer
re-zeroes the padding and reads only kept points and zeros (LS2T is causal; a convolution looks c_k steps ahead,
past the end into zeros), so appended padding changes no prediction.  Training minimises the cross
entropy with Adam (cosine schedule, clipped gradients) on seeded minibatches; the figure is the test accuracy
in percent, the mean (and standard deviation) over ``seeds`` trainings as in the paper's tables.  `FULL` has the
paper's sizes (D = 3, N = 64, M = 2, 64 filters) but fewer steps (1,000 on JapaneseVowels, about 120 epochs
against the paper's up to 2,000; 40 on BasicMotions; batches of 32) and 5 seeds; `QUICK` (the tests) has D = 2, N = 8, 8 filters, one seed and 60 / 30 steps.

>>> import numpy as np
>>> x = np.array([[[1.], [3.], [0.]], [[5.], [0.], [0.]]]); mask = x[:, :, 0] != 0
>>> mean, std = statistics(x, mask)                  # over the kept points 1, 3, 5 only
>>> mean, standardise(x, mask, mean, std)[:, :, 0].round(2)
(array([3.]), array([[-1.22,  0.  ,  0.  ],
       [ 1.22,  0.  ,  0.  ]]))
>>> model = Classifier(d_in=1, classes=2, filters=4, widths=(3, 3), order=2)
>>> x, mask = np.pad(x, ((0, 0), (0, 1), (0, 0))), np.pad(mask, ((0, 0), (0, 1)))   # 8 taps: length >= 4
>>> model.apply(model.init(seed=0), standardise(x, mask, mean, std), mask).shape
(2, 2)
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..architectures import convolution, deep_ls2t
from ..architectures.model import check_seed
from ..feature_map import check_sequences, mask_like, zero_padding
from .datasets import time_series
from .report import Timings, check_setting, report, row
from ...kernels.arrays import adopt, owner, with_jax_defaults
from .training import accuracy, adam, cross_entropy, engine_named, minibatches, training_dtype

#: The engines it trains on: the masks of variable-length series are numpy arrays that a jitted JAX step cannot
#: take.
SUPPORTED = ("torch", "numpy")

#: The models, and the (filters or 0, normalisation) each has: "FCN-LS2T" normalises each time step's channels
#: (layer norm), "FCN-LS2T, batch norm" as the original FCN.
MODELS = ("LS2T", "FCN-LS2T", "FCN-LS2T, batch norm")
NORMS = ("layer", "batch")
#: The paper's test accuracies (%), mean +- std over its trainings (its FCN normalises by batch); BasicMotions is
#: not in its table.
PAPER = {("JapaneseVowels", "LS2T"): "98.4 +- 0.5", ("JapaneseVowels", "FCN-LS2T"): "99.1 +- 0.3",
         ("JapaneseVowels", "FCN-LS2T, batch norm"): "99.1 +- 0.3"}
#: The FCN's convolution taps (Wang et al. 2017, as in the paper).
KERNEL_SIZES = (8, 5, 3)
LAYERNORM_EPSILON = BATCHNORM_EPSILON = 1e-5
CURVE_POINTS = 50

QUICK = {"datasets": ("JapaneseVowels", "BasicMotions"), "models": MODELS, "seeds": 1, "widths": (8, 8), "order": 2,
         "filters": 8, "steps": {"JapaneseVowels": 60, "BasicMotions": 30}, "batch": 32, "lr": 1e-2, "clip": 1.0}
FULL = {"datasets": ("JapaneseVowels", "BasicMotions"), "models": MODELS, "seeds": 5, "widths": (64, 64, 64),
        "order": 2, "filters": 64, "steps": {"JapaneseVowels": 1000, "BasicMotions": 40}, "batch": 32, "lr": 3e-3,
        "clip": 1.0}


def statistics(x: Any, mask: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate mean and standard deviation of x (cases, length, d) over the kept points of `mask`."""
    x, mask = check_sequences(x, mask)
    if mask is None:
        raise ValueError("mask: expected a (cases, length) mask, got None")
    kept = x[mask]
    if len(kept) < 2:
        raise ValueError(f"mask: expected at least 2 kept points, got {len(kept)}")
    std = kept.std(axis=0)
    return kept.mean(axis=0), np.where(std > 0, std, 1.0)


def batch_moments(h: Any, mask: Any) -> tuple[Any, Any]:
    """Per-channel mean and variance of h (cases, length, channels) over the cases and times that the (cases,
    length) `mask` (numpy, or of h's library: `mask_like`) keeps, in h's library (differentiable).

    >>> h, mask = np.array([[[1.0], [3.0], [9.0]]]), np.array([[True, True, False]])
    >>> batch_moments(h, mask)
    (array([2.]), array([1.]))
    """
    engine = owner(h)
    weights = engine.floats(mask_like(h, mask), h)[:, :, None]     # the call's data, not a constant to keep
    count = engine.maximum(engine.sum(weights), 1.0)
    mean = engine.sum(h * weights, axis=(0, 1)) / count
    centred = (h - mean) * weights
    return mean, engine.sum(centred * centred, axis=(0, 1)) / count


def standardise(x: Any, mask: Any, mean: np.ndarray, std: np.ndarray) -> Any:
    """(x - mean) / std at the kept points of `mask`, 0 on padding (which may hold anything, NaN included)."""
    x, mask = check_sequences(x, mask, np.shape(mean)[-1])
    return zero_padding((np.where(mask[:, :, None], x, 0.0) - mean) / std, mask)


class Classifier:
    """An optional FCN (``filters`` > 0: three convolution blocks, normalised by ``norm``, "layer" or "batch") and
    a deep LS2T, then a linear readout to `classes` logits (see the module docstring); `parameters`, `init(seed)`,
    `apply(params, x, mask, moments)` and, with batch norm, `population_moments`."""

    def __init__(self, d_in: int, classes: int, filters: int = 0, widths: Iterable[int] = (64, 64, 64), order: int = 2,
                 typical_length: int = 64, norm: str = "layer") -> None:
        self.classes, self.filters = int(classes), int(filters)
        if self.classes < 2 or self.filters < 0:
            raise ValueError(f"classes, filters: expected >= 2 and >= 0, got {classes!r}, {filters!r}")
        if norm not in NORMS:
            raise ValueError(f"norm: expected one of {NORMS}, got {norm!r}")
        self.norm = norm
        channels = (d_in,) + (self.filters,) * len(KERNEL_SIZES)
        self.convolutions = [convolution(c_in, c_out, size, cyclic=False) for c_in, c_out, size in
                             zip(channels, channels[1:], KERNEL_SIZES)] if self.filters else []
        self.ls2t = deep_ls2t(channels[-1] if self.filters else d_in, tuple(widths), order,
                              difference_between=True, static=None, time=True, difference=True, normalise=True,
                              typical_length=typical_length)
        self.d_in, self.features = d_in, self.ls2t.layers[-1].out_width

    @property
    def parameters(self) -> dict:
        """Parameter name -> shape: ``fcn{k}/K``, ``fcn{k}/b`` (and with batch norm its ``fcn{k}/gamma``,
        ``fcn{k}/beta``), ``ls2t/...``, ``readout/A``, ``readout/c``."""
        shapes = {}
        for k, layer in enumerate(self.convolutions):
            shapes[f"fcn{k}/K"], shapes[f"fcn{k}/b"] = layer.parameters["K"], (layer.channels_out,)
            if self.norm == "batch":
                shapes[f"fcn{k}/gamma"] = shapes[f"fcn{k}/beta"] = (layer.channels_out,)
        shapes.update({f"ls2t/{name}": shape for name, shape in self.ls2t.parameters.items()})
        shapes["readout/A"], shapes["readout/c"] = (self.features, self.classes), (self.classes,)
        return shapes

    def init(self, seed: int | np.random.Generator = 0) -> dict:
        """Seeded parameters: the layers' own initialisations, zero biases and a zero readout; batch norm's gains
        1 and shifts 0."""
        rng = check_seed(seed)
        params = {}
        for k, layer in enumerate(self.convolutions):
            params[f"fcn{k}/K"], params[f"fcn{k}/b"] = layer.init(rng)["K"], np.zeros(layer.channels_out)
            if self.norm == "batch":
                params[f"fcn{k}/gamma"], params[f"fcn{k}/beta"] = np.ones(layer.channels_out), np.zeros(
                    layer.channels_out)
        params.update({f"ls2t/{name}": value for name, value in self.ls2t.init(rng).items()})
        params["readout/A"], params["readout/c"] = np.zeros((self.features, self.classes)), np.zeros(self.classes)
        return params

    def fcn(self, params: Mapping[str, Any], x: Any, mask: Any,
            moments: list[tuple[Any, Any]] | None = None) -> tuple[Any, list[tuple[Any, Any]]]:
        """The FCN's output on standardised x (cases, length, d_in) with its mask, and the batch norm moments
        (mean, variance) it used per block: `moments` (test time) or, when None, the batch's (training)."""
        x, mask = check_sequences(x, mask, self.d_in)
        if mask is None:
            mask = np.ones(np.shape(x)[:2], bool)
        engine, arrays = adopt({"readout/A": params.get("readout/A"), "x": x})
        mask = mask_like(arrays["x"], mask)                # converted once, used twice a block
        h, used = zero_padding(arrays["x"], mask), []
        for k, layer in enumerate(self.convolutions):
            ahead = layer.size // 2                 # centre the causal taps: look `ahead` steps into the zero padding
            h = engine.concatenate([h, engine.zeros((h.shape[0], ahead, h.shape[2]), h)], axis=1)
            h = layer.apply({"K": params[f"fcn{k}/K"]}, h)[:, ahead:] + params[f"fcn{k}/b"]
            if self.norm == "layer":
                h = engine.layer_norm(h, LAYERNORM_EPSILON)
            else:
                mean, variance = batch_moments(h, mask) if moments is None else (
                    engine.constant(np.asarray(value), h) for value in moments[k])
                used.append((mean, variance))
                h = (h - mean) / engine.sqrt(variance + BATCHNORM_EPSILON) * params[f"fcn{k}/gamma"] + \
                    params[f"fcn{k}/beta"]
            h = zero_padding(engine.pointwise("relu", h), mask)
        return h, used

    def population_moments(self, params: Mapping[str, Any], x: Any, mask: Any) -> list[tuple[Any, Any]]:
        """Batch norm's test-time moments: the FCN's per-block (mean, variance) over all of x (the training set),
        as numpy arrays; block k's are of its input normalised by the population moments of blocks < k."""
        if self.norm != "batch" or not self.convolutions:
            raise ValueError(f"norm: population moments need an FCN with batch norm, got norm {self.norm!r}, "
                             f"{self.filters} filters")
        _, used = self.fcn(params, x, mask)
        return [(owner(mean).value(mean), owner(variance).value(variance)) for mean, variance in used]

    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], x: Any, mask: Any, moments: list[tuple[Any, Any]] | None = None) -> Any:
        """Logits (cases, classes) of standardised x (cases, length, d_in) with its mask; with batch norm, the
        `moments` of `population_moments` at test time (None: the batch's, as in training)."""
        x, mask = check_sequences(x, mask, self.d_in)
        h, _ = self.fcn(params, x, mask, moments)
        features = self.ls2t.apply({name[5:]: value for name, value in params.items() if name.startswith("ls2t/")},
                                   h, mask)
        return features @ params["readout/A"] + params["readout/c"]


def train(model: Classifier, data: Mapping[str, Any], steps: int, batch: int, lr: float, clip: float | None,
          rng: np.random.Generator, progress: bool = True, description: str = "adam", engine: str = "numpy",
          dtype: str = "float64", device: str | None = None) -> tuple[dict, list[float]]:
    """Fit `model` on ``data["x_train"]`` (standardised) by Adam with a cosine schedule on minibatches of `batch`
    cases drawn by `rng` (which also initialises the parameters), on `engine` in `dtype` on `device`; returns (params,
    per-step losses)."""
    x, mask, y = data["x_train"].astype(dtype), data["mask_train"], data["y_train"]
    stream = minibatches(len(y), min(batch, len(y)), rng)

    def loss(params: Mapping[str, Any], indices: np.ndarray) -> Any:
        return cross_entropy(model.apply(params, x[indices], mask[indices]), y[indices])

    return adam(loss, model.init(rng), steps, lambda step: next(stream), lr=lr, clip=clip, schedule="cosine",
                progress=progress, description=description, engine=engine, dtype=dtype, device=device)


def prepare(name: str) -> dict:
    """`time_series(name)` with both splits standardised by the training statistics."""
    data = time_series(name)
    mean, std = statistics(data["x_train"], data["mask_train"])
    for split in ("train", "test"):
        data[f"x_{split}"] = standardise(data[f"x_{split}"], data[f"mask_{split}"], mean, std)
    return data


def run(quick: bool = False, seed: int = 0, progress: bool = True, engine: str | None = None,
        device: str | None = None) -> dict:
    """Train and test every (dataset, model) of `QUICK` or `FULL` ``seeds`` times; rows give the test accuracy
    in percent (mean over the seeds, with the population ``std``, the per-seed ``accuracies`` and the model's
    ``parameters``) beside the paper's; ``curves`` holds the training losses, every steps / 50-th.  `engine`:
    numpy or torch (None: torch when installed); the masks of these variable-length series are numpy arrays
    that a jitted JAX step cannot take, so JAX is refused.  `device`: where the parameters train (None: the
    engine's default)."""
    check_setting(quick, seed)
    engine = engine_named(engine, SUPPORTED).name
    config: dict[str, Any] = dict(QUICK if quick else FULL, engine=engine, dtype=training_dtype(engine),
                                  device=device)
    seeds = config["seeds"]
    timings, rows, curves = Timings(), [], {}
    for dataset in config["datasets"]:
        with timings(f"load {dataset}"):
            data = prepare(dataset)
        length = int(round(data["mask_train"].sum(axis=1).mean()))
        for name in config["models"]:
            filters, scores = (0 if name == "LS2T" else config["filters"]), []
            norm = "batch" if name.endswith("batch norm") else "layer"
            for replicate in range(seeds):
                model = Classifier(data["x_train"].shape[2], len(data["classes"]), filters, config["widths"],
                                   config["order"], typical_length=max(length, config["order"]), norm=norm)
                label = f"{dataset}, {name}, seed {replicate}"
                with timings(f"{dataset}, {name}"):
                    params, history = train(model, data, config["steps"][dataset], config["batch"], config["lr"],
                                            config["clip"], np.random.default_rng((seed, replicate)), progress, label,
                                            engine, config["dtype"], device)
                    moments = model.population_moments(params, data["x_train"].astype(config["dtype"]),
                                                       data["mask_train"]) if norm == "batch" else None
                    logits = model.apply(params, data["x_test"].astype(config["dtype"]), data["mask_test"],
                                         moments)
                scores.append(round(100 * accuracy(logits, data["y_test"]), 2))
                curves[label] = history[::max(1, len(history) // CURVE_POINTS)]
            rows.append(row(f"{dataset}, {name} (test %, {seeds} seed{'s' * (seeds > 1)})",
                            round(float(np.mean(scores)), 2), paper=PAPER.get((dataset, name)),
                            std=round(float(np.std(scores)), 2), accuracies=scores, unit="test accuracy, %",
                            parameters=sum(math.prod(value.shape) for value in params.values())))
    return report("seq2tens", quick, seed, config, rows, timings, engine=engine, curves=curves)
