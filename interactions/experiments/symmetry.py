"""Table 2 of the paper: the multiplication operator O_K with learned structure constants on digits, with the
translation constraint exact, absent, or added to the loss as a regulariser.

The model (paper, eq. 11).  An image X = sum_{i,j} X_ij e_i (x) e_j lives in B (x) B, B a position algebra of
``size`` lattice points whose structure constants lam^n_{k,i} (``lam[k, i, n]``) are learned; channel c has its
own filter K^c, and

    O_{K^c}(X)_{nm} = sum_{k,l < taps} sum_{i,j} K^c_{kl} X_ij lam^n_{k,i} lam^m_{l,j},
    logits = W vec(avgpool(relu(O_{K^c}(X) + b_c))) + w_0.

The filter has support on the first ``taps`` components of each axis, so lam of shape (taps, size, size) enters:
one lam for both axes, shared by the channels (it is the algebra; the filters are the channels').  The paper's
setting is the whole lattice, ``taps = size`` (``"taps": "full"``): lam has size^3 free numbers.  Three settings
of lam:

* ``exact constraint``: lam solves the paper's constraint (13), lam^n_{k,i+a} = lam^{n-a}_{k,i} for every cyclic
  shift a, derived by the library: ``solve(equivariant_constraints((T.trivial_on(taps), T, T), bilinear_map(...)))``
  with T = ``translations(size)``.  Its parametrisation lam = solution(theta) is the general solution of (13),
  one free circulant per tap, lam^n_{k,i} = c_k(n - i): O_K is a cyclic 2-D convolution whose filter
  sum_{kl} K_kl c_k (x) c_l spans the whole image, and it commutes with every shift of the 2-D lattice (the
  product action of the 1-D ones).
* ``no constraint``: lam is free, taps * size^2 numbers.
* ``regulariser``: lam is free and L_reg = sum_{k,i,n,a} (lam^n_{k,i+a} - lam^{n-a}_{k,i})^2, the library's
  ``regulariser(..., over="elements")`` of the same constraint, is added to the loss with weight ``reg_weight``:
  1, the paper's plain sum (untuned).

All three start from lam entries of the same scale (1 / sqrt(size)), the same filters, head and minibatches, and
are trained with Adam on cross-entropy, on any engine (the fastest installed by default, in float32 on torch and
JAX); the figure is the accuracy on a held-out split, reported once (nothing is tuned on it).  The report adds,
per setting, the train accuracy, the number of free parameters (all, and those of lam), L_reg of the final lam
and the loss curve (subsampled; it includes the weighted penalty for the regulariser).  The support-size curve
trains the exact and the free lam again with filters of ``support_curve`` taps (the full lattice's figures close
it): test and train accuracy against the support, which shows where the constraint stops mattering.

The ablations (``run(setting="ablations")``, ``experiment symmetry --setting ablations``) test what might keep the
free lam from collapsing as the paper's did: each of `ABLATIONS` changes one option of the model or data and
trains the three settings again: ``"pool": 1`` (no pooling: the readout sees every pixel of every channel),
``"readout": "direct"`` (W vec(O_K(X)) + w_0: no bias, relu or pooling) and ``"train_images": 500`` (the first 500
of the training split); then the regulariser alone at each of ``reg_weights``.  ``paper_ordering`` says, per
ablation, whether exact > regulariser > none on the held-out split (`ordering`).

>>> import numpy as np
>>> solution = exact_parametrisation(taps=2, size=5)
>>> solution.method, solution.dim                     # one circulant per tap
('exact', 10)
>>> rng = np.random.default_rng(0)
>>> lam, K, X = solution(rng.standard_normal(10)), rng.standard_normal((3, 2, 2)), rng.standard_normal((1, 5, 5))
>>> moved = multiply(K, lam, np.roll(X, (1, 2), axis=(1, 2)))
>>> bool(np.allclose(moved, np.roll(multiply(K, lam, X), (1, 2), axis=(2, 3))))   # O_K(T X) = T O_K(X)
True
>>> penalty = paper_regulariser(taps=2, size=5)
>>> float(penalty(lam)), bool(penalty(rng.standard_normal((2, 5, 5))) > 1)
(0.0, True)
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ...algebra.symmetry import (Action, Solution, bilinear_map, equivariant_constraints, regulariser, solve,
                                 translations)
from ...algebra.symmetry._regulariser import Penalty as ExactPenalty
from ...algebra.symmetry.targets import BilinearMap
from ...kernels.arrays import engine_of, owner
from .datasets import digits, split
from .report import Timings, check_setting, report, row, subsample
from .training import PREFERENCE, accuracy, adam, cross_entropy, engine_named, minibatches, training_dtype

#: The engines it trains on.
SUPPORTED = PREFERENCE

#: The three settings and the paper's accuracy for each (Table 2).
PAPER = {"exact constraint": 0.988, "no constraint": 0.445, "regulariser": 0.943}
#: The settings the support-size curve trains at each support.
CURVE_SETTINGS = ("exact constraint", "no constraint")

QUICK = {"source": "sklearn", "test_fraction": 0.25, "taps": "full", "support_curve": [2], "channels": 8,
         "pool": 2, "readout": "pooled", "train_images": None, "steps": 250, "batch": 64, "lr": 0.01,
         "reg_weight": 1.0, "curve_points": 50}
FULL = {"source": "mnist", "test_fraction": 0.2, "taps": "full", "support_curve": [1, 2, 3, 5, 9, 14],
        "channels": 8, "pool": 4, "readout": "pooled", "train_images": None, "steps": 1500, "batch": 64,
        "lr": 0.005, "reg_weight": 1.0, "curve_points": 100}
#: The readouts: ``"pooled"``, W vec(avgpool(relu(O_K(X) + b))) + w_0; ``"direct"``, W vec(O_K(X)) + w_0 (no
#: bias, relu or pooling: a linear classifier of the image, parametrised through lam).
READOUTS = ("pooled", "direct")

#: The ablations (``setting="ablations"``): what each changes of the setting, trained for the three settings of
#: lam, then the regulariser alone at each of ``reg_weights`` (no support curve).
ABLATIONS = {"no pooling": {"pool": 1}, "direct readout": {"readout": "direct"},
             "500 training images": {"train_images": 500}}
QUICK_ABLATIONS = dict(QUICK, support_curve=[], steps=40, ablations={"no pooling": {"pool": 1},
                       "direct readout": {"readout": "direct"}, "200 training images": {"train_images": 200}},
                       reg_weights=[0.1, 10.0])
FULL_ABLATIONS = dict(FULL, support_curve=[], ablations=ABLATIONS, reg_weights=[0.01, 0.1, 1.0, 10.0])
#: The full settings by name (``--setting``; the first is the default), and the quick one of each.
SETTINGS = {"paper": (QUICK, FULL), "ablations": (QUICK_ABLATIONS, FULL_ABLATIONS)}

#: Images per forward pass when evaluating (bounds memory on 28 x 28).
EVAL_BATCH = 250


def _action(taps: int, size: int) -> tuple[tuple[Action, Action, Action], BilinearMap]:
    """Cyclic shifts of the lattice on the signal and output slots of lam; the filter slot is left alone."""
    T = translations(size)
    return (T.trivial_on(taps), T, T), bilinear_map(taps, size, size)


def exact_parametrisation(taps: int, size: int) -> Solution:
    """The library's exact solution of constraint (13) for lam of shape (taps, size, size): a `Solution`, so
    ``solution(theta)`` is an equivariant lam, differentiable in theta."""
    return solve(equivariant_constraints(*_action(taps, size)), method="exact")


def paper_regulariser(taps: int, size: int) -> ExactPenalty:
    """L_reg(lam) = sum_{k,i,n,a} (lam^n_{k,i+a} - lam^{n-a}_{k,i})^2 over all cyclic shifts a (numpy and autograd;
    `Penalty` evaluates it on any engine)."""
    return regulariser(*_action(taps, size), over="elements")


class Penalty:
    """`paper_regulariser` on any engine: the residuals ``penalty.matrix @ vec(lam)`` as one gather of lam's
    entries (the matrix's rows padded to the longest with zero weights) and a sum, differentiable by the engine."""

    def __init__(self, taps: int, size: int) -> None:
        self.exact = paper_regulariser(taps, size)
        matrix = self.exact.matrix.tocsr()
        counts = np.diff(matrix.indptr)
        rows = np.repeat(np.arange(matrix.shape[0]), counts)
        slots = np.arange(matrix.nnz) - np.repeat(matrix.indptr[:-1], counts)
        self.index = np.zeros((matrix.shape[0], max(int(counts.max(initial=0)), 1)), np.int64)
        self.weight = np.zeros(self.index.shape)
        self.index[rows, slots], self.weight[rows, slots] = matrix.indices, matrix.data
        self.valid = np.ones(self.index.shape, bool)

    def __call__(self, lam: Any) -> Any:
        engine = owner(lam)
        taken = engine.gather(engine.reshape(lam, (-1,)), 0, self.index, self.weight, self.valid)
        residual = engine.sum(taken, axis=-1)
        return engine.sum(residual * residual)


def multiply(filters: Any, lam: Any, images: Any) -> Any:
    """O_K(X) for each filter: ``out[b, c, n, m] = sum_{k,l,i,j} filters[c, k, l] lam[k, i, n] X[b, i, j]
    lam[l, j, m]`` with `filters` (channels, t, t), `lam` (t, size, size) and `images` (batch, size, size), arrays
    of one engine.  Three matrix products: the filters meet lam, G[c, n, (l, i)]; the images meet lam,
    R[(l, i), b, m]; then G R, one product over t size numbers.  No intermediate holds more than t size^2 numbers
    per image (the direct order makes channels t size^2)."""
    shapes = [tuple(np.shape(a)) if isinstance(a, (list, tuple)) else tuple(a.shape) for a in (filters, lam)]
    if len(shapes[1]) != 3 or shapes[1][1] != shapes[1][2] or len(shapes[0]) != 3 or shapes[0][1:] != shapes[1][:1] * 2:
        raise ValueError(f"filters, lam: expected shapes (channels, t, t) and (t, n, n), got {shapes[0]} and "
                         f"{shapes[1]}")
    (channels, taps, _), (_, size, _) = shapes
    if len(images.shape) != 3 or tuple(images.shape[1:]) != (size, size):
        raise ValueError(f"images: expected shape (batch, {size}, {size}), got {tuple(images.shape)}")
    engine = engine_of({"filters": filters, "lam": lam, "images": images})
    batch = images.shape[0]
    mixed = engine.matmul(engine.reshape(engine.transpose(filters, (0, 2, 1)), (channels * taps, taps)),
                          engine.reshape(lam, (taps, size * size)))                          # [(c, l), (i, n)]
    mixed = engine.transpose(engine.reshape(mixed, (channels, taps, size, size)), (0, 3, 1, 2))  # [c, n, l, i]
    right = engine.matmul(engine.reshape(images, (batch * size, size)),
                          engine.reshape(engine.transpose(lam, (1, 0, 2)), (size, taps * size)))  # [(b, i), (l, m)]
    right = engine.transpose(engine.reshape(right, (batch, size, taps, size)), (2, 1, 0, 3))     # [l, i, b, m]
    out = engine.matmul(engine.reshape(mixed, (channels * size, taps * size)),
                        engine.reshape(right, (taps * size, batch * size)))                  # [(c, n), (b, m)]
    return engine.transpose(engine.reshape(out, (channels, size, batch, size)), (2, 0, 1, 3))


def check_config(config: dict, size: int, train_count: int | None = None) -> None:
    """Refuse, by name, a model option of `config` that does not fit images of `size` x `size` (and a training set
    of `train_count` images): ``pool`` a positive int dividing `size`, ``readout`` one of `READOUTS`,
    ``train_images`` None or an int from 1 to `train_count`, ``reg_weight`` a non-negative number.

    >>> check_config(dict(FULL, pool=3), 28)
    Traceback (most recent call last):
    ...
    ValueError: pool: expected a positive int dividing the image size 28, got 3
    """
    pool, readout, count = config["pool"], config.get("readout", "pooled"), config.get("train_images")
    if isinstance(pool, bool) or not isinstance(pool, int) or pool < 1 or size % pool:
        raise ValueError(f"pool: expected a positive int dividing the image size {size}, got {pool!r}")
    if readout not in READOUTS:
        raise ValueError(f"readout: expected one of {list(READOUTS)}, got {readout!r}")
    upper = "" if train_count is None else f" to {train_count}"
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1
                              or (train_count is not None and count > train_count)):
        raise ValueError(f"train_images: expected None or an int from 1{upper}, got {count!r}")
    weight = config["reg_weight"]
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
        raise ValueError(f"reg_weight: expected a non-negative number, got {weight!r}")


def logits(params: dict, lam: Any, images: Any, pool: int, readout: str = "pooled") -> Any:
    """The classifier: relu(O_K(X) + b), average pooling over pool x pool cells (pool 1: none), a linear readout;
    or for the ``"direct"`` readout the linear readout of O_K(X) itself."""
    engine = engine_of({"lam": lam, "images": images})
    batch, size = images.shape[0], images.shape[1]
    if readout == "direct":
        return engine.matmul(engine.reshape(multiply(params["filters"], lam, images), (batch, -1)),
                             params["readout"]) + params["offset"]
    channels, cells = params["filters"].shape[0], size // pool
    hidden = engine.pointwise("relu", multiply(params["filters"], lam, images)
                              + engine.reshape(params["bias"], (channels, 1, 1)))
    pooled = engine.mean(engine.reshape(hidden, (batch, channels, cells, pool, cells, pool)), axis=(3, 5))
    return engine.matmul(engine.reshape(pooled, (batch, -1)), params["readout"]) + params["offset"]


class Parametrisation:
    """lam from the parameters: the exact solution's basis applied to theta (on any engine), or lam itself."""

    def __init__(self, setting: str, taps: int, size: int) -> None:
        self.shape = (taps, size, size)
        self.solution = exact_parametrisation(taps, size) if setting == "exact constraint" else None
        self.basis = None if self.solution is None else self.solution.basis.reshape(self.solution.dim, -1)

    def __call__(self, params: dict) -> Any:
        if self.solution is None:
            return params["lam"]
        theta = params["theta"]
        engine = owner(theta)
        return engine.reshape(engine.matmul(theta, engine.constant(self.basis, theta)), self.shape)

    def initial(self, config: dict, size: int, seed: int) -> dict:
        """Parameters: filters and head drawn alike for every setting, lam (or theta) entries of scale
        1/sqrt(size)."""
        rng = np.random.default_rng(seed)
        taps, channels = self.shape[0], config["channels"]
        direct = config.get("readout", "pooled") == "direct"
        features = channels * (size // (1 if direct else config["pool"])) ** 2
        params = {"filters": rng.standard_normal((channels, taps, taps)) / taps, "bias": np.zeros(channels),
                  "readout": rng.standard_normal((features, 10)) / np.sqrt(features), "offset": np.zeros(10)}
        if direct:                                  # no bias: the readout reads O_K(X) itself
            del params["bias"]
        lam_rng = np.random.default_rng([seed, 1])
        if self.solution is not None:
            # Scaled so that each entry of lam = sum_b theta_b basis_b has variance 1 / size, like the free lam.
            spread = np.sqrt(np.mean(np.sum(self.basis ** 2, axis=0)))  # type: ignore[operator]  # with the solution
            params["theta"] = lam_rng.standard_normal(self.solution.dim) / (spread * np.sqrt(size))
        else:
            params["lam"] = lam_rng.standard_normal(self.shape) / np.sqrt(size)
        return params


def _predict(params: dict, lam_of: Parametrisation, images: Any, pool: int, readout: str) -> np.ndarray:
    lam = lam_of(params)
    engine = owner(lam)
    return np.concatenate([engine.value(logits(params, lam, images[start:start + EVAL_BATCH], pool, readout))
                           for start in range(0, len(images), EVAL_BATCH)])


def engine_arrays(engine: str, dtype: DTypeLike, *arrays: np.ndarray, device: str | None = None) -> list:
    """numpy `arrays` as `engine`'s on `device`: floating ones in `dtype`, integer ones as they are."""
    found = engine_named(engine)
    like = found.like(dtype, device)
    return [found.convert(np.asarray(a), like) for a in arrays]


def train_setting(setting: str, taps: int, config: dict, images: np.ndarray, labels: np.ndarray, seed: int,
                  penalty: Callable[[Any], Any] | None = None, progress: bool = True,
                  engine: str = "numpy") -> tuple[dict, Parametrisation, list[float]]:
    """Adam on cross-entropy (plus ``reg_weight * penalty(lam)`` for the regulariser, `penalty` a `Penalty`) on
    `engine`'s arrays of ``config["dtype"]``; returns (params, lam's parametrisation, per-step losses).  Every
    setting and support sees the same minibatches for a given seed."""
    check_config(config, images.shape[1])
    weight = config["reg_weight"] if setting == "regulariser" else 0.0
    pool, readout, size = config["pool"], config.get("readout", "pooled"), images.shape[1]
    lam_of = Parametrisation(setting, taps, size)
    dtype = config.get("dtype") or training_dtype(engine)
    data, targets = engine_arrays(engine, dtype, images, labels, device=config.get("device"))

    def loss(params: dict, batch: np.ndarray) -> Any:
        lam = lam_of(params)
        value = cross_entropy(logits(params, lam, data[batch], pool, readout), targets[batch])
        return value + weight * penalty(lam) if weight else value  # type: ignore[misc]  # weight: the regulariser's

    stream = minibatches(len(images), config["batch"], np.random.default_rng([seed, 2]))
    params, history = adam(loss, lam_of.initial(config, size, seed), config["steps"], lambda step: next(stream),
                           lr=config["lr"], schedule="cosine", progress=progress,
                           description=f"symmetry: {setting}, {taps} taps", engine=engine, dtype=dtype,
                           device=config.get("device"))
    return params, lam_of, history


def ordering(accuracies: dict[str, float]) -> bool:
    """Whether held-out `accuracies` by setting show the paper's ordering, exact > regulariser > none.

    >>> ordering({"exact constraint": 0.988, "no constraint": 0.445, "regulariser": 0.943})
    True
    """
    return accuracies["exact constraint"] > accuracies["regulariser"] > accuracies["no constraint"]


def run(quick: bool = False, seed: int = 0, progress: bool = True, engine: str | None = None,
        device: str | None = None, setting: str | None = None) -> dict:
    """Train the three settings on the full lattice, and the support-size curve, on the same split and
    minibatches, on `engine` (None: the fastest installed) and `device` (None: its default); rows of held-out
    accuracy beside Table 2.  `setting` "ablations" (`SETTINGS`; None is "paper") trains the three settings again
    under each of the config's ``ablations`` (rows "ABLATION: SETTING", and ``paper_ordering``: whether each shows
    the paper's ordering) and the regulariser at each of its ``reg_weights`` (rows "regulariser weight W"), with
    no support curve; `quick` takes the setting's small version."""
    check_setting(quick, seed)
    if setting is not None and setting not in SETTINGS:
        raise ValueError(f"setting: expected one of {list(SETTINGS)}, got {setting!r}")
    engine = engine_named(engine).name
    config: dict[str, Any] = dict(SETTINGS[setting or "paper"][0 if quick else 1], engine=engine,
                                  dtype=training_dtype(engine), device=device)
    timings = Timings()
    with timings("data"):
        images, labels = digits(config["source"])
        train, test = split(len(images), config["test_fraction"], np.random.default_rng(seed))
        data, = engine_arrays(engine, config["dtype"], images, device=config.get("device"))
    size = images.shape[1]
    variants = {name: dict(config, **change) for name, change in config.get("ablations", {}).items()}
    for variant in [config, *variants.values()]:
        check_config(variant, size, len(train))
    full = size if config["taps"] == "full" else int(config["taps"])
    supports = sorted({min(int(t), size) for t in config["support_curve"]} - {full})

    def trained(setting: str, taps: int, options: dict, penalty: Penalty | None = None, name: str | None = None
                ) -> tuple[dict, Parametrisation, list[float], list[float]]:
        chosen = train[:options["train_images"]]                       # None: all of them
        with timings(f"train {name or setting}, {taps} taps"):
            params, lam_of, history = train_setting(setting, taps, options, images[chosen], labels[chosen], seed,
                                                    penalty, progress, engine)
        with timings("evaluate"):
            scores = [accuracy(_predict(params, lam_of, data[part], options["pool"], options["readout"]),
                               labels[part]) for part in (test, chosen)]
        return params, lam_of, history, scores

    with timings("regulariser"):
        penalty = Penalty(full, size)
    rows: list[dict[str, Any]]
    extras: dict[str, dict[Any, Any]]
    rows, extras = [], {"free_parameters": {}, "structure_constant_parameters": {}, "final_regulariser": {},
                        "loss_curves": {}, "train_accuracy": {}}
    # (ablation, its config, the row name of each setting of lam it trains)
    runs: list[tuple[str, dict, dict[str, str]]]
    if setting == "ablations":
        extras["paper_ordering"] = {}
        runs = [(name, variant, {s: f"{name}: {s}" for s in PAPER}) for name, variant in variants.items()]
        runs += [("", dict(config, reg_weight=weight), {"regulariser": f"regulariser weight {weight:g}"})
                 for weight in config["reg_weights"]]
    else:
        extras["support_curve"] = {s: [] for s in CURVE_SETTINGS}
        runs = [("", config, {s: s for s in PAPER})]
    for ablation, options, names in runs:
        held_out = {}
        for name, key in names.items():
            params, lam_of, history, (ours, train_score) = trained(name, full, options, penalty, key)
            rows.append(row(key, ours, paper=PAPER[name], train=train_score))
            held_out[name] = ours
            lam = np.asarray(engine_named(engine).value(lam_of(params)), dtype=np.float64)
            extras["train_accuracy"][key] = train_score
            extras["free_parameters"][key] = sum(math.prod(value.shape) for value in params.values())
            extras["structure_constant_parameters"][key] = math.prod(
                params.get("theta", params.get("lam")).shape)  # type: ignore[union-attr]  # one of them is there
            extras["final_regulariser"][key] = float(penalty.exact(lam))
            extras["loss_curves"][key] = subsample(history, config["curve_points"])
            if "support_curve" in extras and name in CURVE_SETTINGS:
                extras["support_curve"][name].append([full, ours, train_score])
        if ablation:
            extras["paper_ordering"][ablation] = ordering(held_out)
    for taps in supports:
        for name in CURVE_SETTINGS:
            *_, (ours, train_score) = trained(name, taps, config)
            extras["support_curve"][name].append([taps, ours, train_score])
    for name in extras.get("support_curve", {}):
        extras["support_curve"][name].sort()
    return report("symmetry", quick, seed, config, rows, timings, engine=engine, size=size, taps=full,
                  train_count=len(train), test_count=len(test), **extras)
