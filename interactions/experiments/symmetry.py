"""Table 2 of the paper: the multiplication operator O_K with learned structure constants on digits, with the
translation constraint exact, absent, or added to the loss as a regulariser.

The model (paper, eq. 11).  An image X = sum_{i,j} X_ij e_i (x) e_j lives in B (x) B, B a position algebra of
``size`` lattice points whose structure constants lam^n_{k,i} (``lam[k, i, n]``) are learned; channel c has its
own filter K^c, and

    O_{K^c}(X)_{nm} = sum_{k,l < taps} sum_{i,j} K^c_{kl} X_ij lam^n_{k,i} lam^m_{l,j},
    logits = W vec(avgpool(relu(O_{K^c}(X) + b_c))) + w_0.

The filter has support on the first ``taps`` components of each axis (as ``Parameter(support=...)`` in
`interactions.expression`), so only lam of shape (taps, size, size) enters: one lam for both axes, shared by the
channels (it is the algebra; the filters are the channels').  Three settings of lam:

* ``exact constraint``: lam solves the paper's constraint (13), lam^n_{k,i+a} = lam^{n-a}_{k,i} for every cyclic
  shift a, derived by the library: ``solve(equivariant_constraints((T.trivial_on(taps), T, T), bilinear_map(...)))``
  with T = ``translations(size)``.  Its parametrisation lam = solution(theta) is the general solution of (13),
  one free circulant per tap, lam^n_{k,i} = c_k(n - i): O_K is a cyclic 2-D convolution whose filter
  sum_{kl} K_kl c_k (x) c_l spans the whole image, and it commutes with every shift of the 2-D lattice (the
  product action of the 1-D ones).
* ``no constraint``: lam is free, taps * size^2 numbers.
* ``regulariser``: lam is free and L_reg = sum_{k,i,n,a} (lam^n_{k,i+a} - lam^{n-a}_{k,i})^2, the library's
  ``regulariser(..., over="elements")`` of the same constraint, is added to the loss with weight ``reg_weight``:
  1, the paper's plain sum (untuned; at the start on 28 x 28 it is some 3,000 times the cross-entropy).

All three start from lam entries of the same scale (1 / sqrt(size)), the same filters, head and minibatches, and
are trained with Adam on cross-entropy; the figure is the accuracy on a held-out split.  The report adds, per
setting, the train accuracy, the number of free parameters (all, and those of lam), L_reg of the final lam and
the loss curve (subsampled; it includes the weighted penalty for the regulariser).

>>> import numpy as np
>>> solution = exact_parametrisation(taps=2, size=5)
>>> solution.method, solution.dim                     # one circulant per tap
('exact', 10)
>>> rng = np.random.default_rng(0)
>>> lam, K, X = solution(rng.standard_normal(10)), rng.standard_normal((3, 2, 2)), rng.standard_normal((1, 5, 5))
>>> moved = multiply(K, lam, np.roll(X, (1, 2), axis=(1, 2)))
>>> bool(np.allclose(moved, np.roll(multiply(K, lam, X), (1, 2), axis=(1, 2))))   # O_K(T X) = T O_K(X)
True
>>> penalty = paper_regulariser(taps=2, size=5)
>>> float(penalty(lam)), bool(penalty(rng.standard_normal((2, 5, 5))) > 1)
(0.0, True)
"""
from __future__ import annotations

import autograd.numpy as anp
import numpy as np

from ...algebra.symmetry import bilinear_map, equivariant_constraints, regulariser, solve, translations

from .datasets import digits, split
from .report import Timings, check_setting, report, row, subsample
from .training import accuracy, adam, cross_entropy, engine_named, minibatches

#: The three settings and the paper's accuracy for each (Table 2).
PAPER = {"exact constraint": 0.988, "no constraint": 0.445, "regulariser": 0.943}

QUICK = {"source": "sklearn", "test_fraction": 0.25, "taps": 3, "channels": 8, "pool": 2, "steps": 250,
         "batch": 64, "lr": 0.01, "reg_weight": 1.0, "curve_points": 50}
FULL = {"source": "mnist", "test_fraction": 0.2, "taps": 5, "channels": 8, "pool": 4, "steps": 1500,
        "batch": 64, "lr": 0.005, "reg_weight": 1.0, "curve_points": 100}

#: Images per forward pass when evaluating (bounds memory on 28 x 28).
EVAL_BATCH = 250


def _action(taps: int, size: int):
    """Cyclic shifts of the lattice on the signal and output slots of lam; the filter slot is left alone."""
    T = translations(size)
    return (T.trivial_on(taps), T, T), bilinear_map(taps, size, size)


def exact_parametrisation(taps: int, size: int):
    """The library's exact solution of constraint (13) for lam of shape (taps, size, size): a `Solution`, so
    ``solution(theta)`` is an equivariant lam, differentiable in theta."""
    return solve(equivariant_constraints(*_action(taps, size)))


def paper_regulariser(taps: int, size: int):
    """L_reg(lam) = sum_{k,i,n,a} (lam^n_{k,i+a} - lam^{n-a}_{k,i})^2 over all cyclic shifts a (differentiable)."""
    return regulariser(*_action(taps, size), over="elements")


def multiply(filters, lam, images):
    """O_K(X) for each filter: ``out[b, n, m, c] = sum_{k,l,i,j} filters[c, k, l] lam[k, i, n] X[b, i, j] lam[l, j, m]``
    with `filters` (channels, taps, taps), `lam` (taps, size, size) and `images` (batch, size, size)."""
    if np.ndim(lam) != 3 or np.shape(lam)[1] != np.shape(lam)[2] or np.ndim(filters) != 3 \
            or np.shape(filters)[1:] != np.shape(lam)[:1] * 2:
        raise ValueError(f"filters, lam: expected shapes (channels, t, t) and (t, n, n), got {np.shape(filters)} "
                         f"and {np.shape(lam)}")
    taps, size = np.shape(lam)[:2]
    if np.ndim(images) != 3 or np.shape(images)[1:] != (size, size):
        raise ValueError(f"images: expected shape (batch, {size}, {size}), got {np.shape(images)}")
    batch = len(images)
    rows = anp.matmul(anp.transpose(lam, (0, 2, 1))[None], images[:, None])        # [b, k, n, j]
    both = anp.dot(anp.reshape(rows, (-1, size)), anp.reshape(anp.transpose(lam, (1, 0, 2)), (size, -1)))
    both = anp.transpose(anp.reshape(both, (batch, taps, size, taps, size)), (0, 2, 4, 1, 3))   # [b, n, m, k, l]
    return anp.matmul(anp.reshape(both, (batch, size, size, taps * taps)),
                      anp.reshape(filters, (len(filters), -1)).T)


def logits(params: dict, lam, images, pool: int):
    """The classifier: relu(O_K(X) + b), average pooling over pool x pool cells, a linear readout."""
    size = images.shape[1]
    hidden = anp.maximum(multiply(params["filters"], lam, images) + params["bias"], 0.0)
    cells = size // pool
    pooled = anp.mean(anp.reshape(hidden, (len(images), cells, pool, cells, pool, -1)), axis=(2, 4))
    return anp.dot(anp.reshape(pooled, (len(images), -1)), params["readout"]) + params["offset"]


def _initial(setting: str, config: dict, size: int, solution, seed: int) -> dict:
    """Parameters: filters and head drawn alike for every setting, lam (or theta) entries of scale 1/sqrt(size)."""
    rng = np.random.default_rng(seed)
    taps, channels = config["taps"], config["channels"]
    features = channels * (size // config["pool"]) ** 2
    params = {"filters": rng.standard_normal((channels, taps, taps)) / taps, "bias": np.zeros(channels),
              "readout": rng.standard_normal((features, 10)) / np.sqrt(features), "offset": np.zeros(10)}
    lam_rng = np.random.default_rng([seed, 1])
    if setting == "exact constraint":
        # Scaled so that each entry of lam = sum_b theta_b basis_b has variance 1 / size, like the free lam.
        spread = np.sqrt(np.mean(np.sum(solution.basis ** 2, axis=0)))
        params["theta"] = lam_rng.standard_normal(solution.dim) / (spread * np.sqrt(size))
    else:
        params["lam"] = lam_rng.standard_normal((taps, size, size)) / np.sqrt(size)
    return params


def _structure_constants(params: dict, solution):
    return solution(params["theta"]) if "theta" in params else params["lam"]


def _predict(params: dict, solution, images, pool: int) -> np.ndarray:
    lam = _structure_constants(params, solution)
    return np.concatenate([logits(params, lam, images[start:start + EVAL_BATCH], pool)
                           for start in range(0, len(images), EVAL_BATCH)])


def train_setting(setting: str, config: dict, images, labels, solution, penalty, seed: int, progress: bool = True):
    """Adam on cross-entropy (plus ``reg_weight * L_reg`` for the regulariser); returns (params, per-step losses).
    Every setting sees the same minibatches for a given seed."""
    weight = config["reg_weight"] if setting == "regulariser" else 0.0
    pool = config["pool"]

    def loss(params, batch):
        lam = _structure_constants(params, solution)
        value = cross_entropy(logits(params, lam, images[batch], pool), labels[batch])
        return value + weight * penalty(lam) if weight else value

    stream = minibatches(len(images), config["batch"], np.random.default_rng([seed, 2]))
    return adam(loss, _initial(setting, config, images.shape[1], solution, seed), config["steps"],
                lambda step: next(stream), lr=config["lr"], schedule="cosine", progress=progress,
                description=f"symmetry: {setting}")


def run(quick: bool = False, seed: int = 0, progress: bool = True, engine: str | None = None) -> dict:
    """Train the three settings on the same split and minibatches; rows of held-out accuracy beside Table 2.
    `engine`: numpy only for now (the regulariser is a scipy sparse product under autograd)."""
    check_setting(quick, seed)
    engine_named(engine, supported=("numpy",))
    config = dict(QUICK if quick else FULL)
    timings = Timings()
    with timings("data"):
        images, labels = digits(config["source"])
        train, test = split(len(images), config["test_fraction"], np.random.default_rng(seed))
    size = images.shape[1]
    with timings("solve and regulariser"):
        solution = exact_parametrisation(config["taps"], size)
        penalty = paper_regulariser(config["taps"], size)
    rows, extras = [], {"free_parameters": {}, "structure_constant_parameters": {}, "final_regulariser": {},
                        "loss_curves": {}, "train_accuracy": {}}
    for setting, paper in PAPER.items():
        with timings(f"train {setting}"):
            params, history = train_setting(setting, config, images[train], labels[train], solution, penalty, seed,
                                            progress)
        with timings("evaluate"):
            ours = accuracy(_predict(params, solution, images[test], config["pool"]), labels[test])
            extras["train_accuracy"][setting] = accuracy(_predict(params, solution, images[train], config["pool"]),
                                                         labels[train])
        lam = _structure_constants(params, solution)
        rows.append(row(setting, ours, paper=paper))
        extras["free_parameters"][setting] = int(sum(np.size(value) for value in params.values()))
        extras["structure_constant_parameters"][setting] = int(np.size(params.get("theta", params.get("lam"))))
        extras["final_regulariser"][setting] = float(penalty(lam))
        extras["loss_curves"][setting] = subsample(history, config["curve_points"])
    return report("symmetry", quick, seed, config, rows, timings, size=size, train_count=len(train),
                  test_count=len(test), exact_method=solution.method, **extras)
