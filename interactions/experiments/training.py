"""Training loops on parameter dicts, with gradients from autograd: Adam on minibatches, scipy's L-BFGS.

>>> import numpy as np, autograd.numpy as anp
>>> loss = lambda p, batch: anp.sum((p["w"] - 3.0) ** 2)
>>> params, history = adam(loss, {"w": np.zeros(2)}, steps=300, batches=lambda step: None, lr=0.1, progress=False)
>>> bool(np.allclose(params["w"], 3.0, atol=1e-2)), len(history)
(True, 300)
>>> bool(np.allclose(lbfgs(lambda p: loss(p, None), {"w": np.zeros(2)})["w"], 3.0))
True
"""
from __future__ import annotations

from typing import Callable

import autograd.numpy as anp
import numpy as np
import scipy.optimize
from autograd import value_and_grad
from autograd.misc import flatten
from tqdm import tqdm


def cross_entropy(logits, labels):
    """Mean negative log-likelihood of integer `labels` under softmax(`logits`) on the last axis."""
    shifted = logits - anp.max(logits, axis=-1, keepdims=True)
    log_probabilities = shifted - anp.log(anp.sum(anp.exp(shifted), axis=-1, keepdims=True))
    one_hot = np.asarray(labels)[..., None] == np.arange(np.shape(logits)[-1])
    return -anp.sum(log_probabilities * one_hot) / one_hot[..., 0].size


def accuracy(logits, labels) -> float:
    """Fraction of rows whose arg-max equals the label."""
    return float(np.mean(np.argmax(np.asarray(logits), axis=-1) == np.asarray(labels)))


def minibatches(count: int, size: int, rng: np.random.Generator):
    """An endless stream of index arrays: shuffled epochs of `count` items cut into batches of `size`."""
    if count < 1 or size < 1:
        raise ValueError(f"minibatches: expected count >= 1 and size >= 1, got {count}, {size}")
    while True:
        order = rng.permutation(count)
        for start in range(0, count - size + 1 if count >= size else 1, size):
            yield order[start:start + size]


def adam(loss: Callable, params: dict, steps: int, batches: Callable, lr: float = 1e-3, betas=(0.9, 0.999),
         eps: float = 1e-8, clip: float | None = None, schedule: str = "constant", progress: bool = True,
         description: str = "adam"):
    """Minimise ``loss(params, batches(step))`` with Adam; returns (params, per-step losses).

    `clip` bounds the global gradient norm; ``schedule="cosine"`` decays the rate to 0 over `steps`.
    """
    if schedule not in ("constant", "cosine"):
        raise ValueError(f"schedule: expected 'constant' or 'cosine', got {schedule!r}")
    flat, unflatten = flatten(params)
    objective = value_and_grad(lambda vector, batch: loss(unflatten(vector), batch))
    first, second = np.zeros_like(flat), np.zeros_like(flat)
    history = []
    bar = tqdm(range(steps), desc=description, disable=not progress, leave=False)
    for step in bar:
        value, gradient = objective(flat, batches(step))
        gradient = np.asarray(gradient)
        if not np.isfinite(value) or not np.all(np.isfinite(gradient)):
            raise FloatingPointError(f"adam: the loss or its gradient is not finite at step {step} ({value})")
        if clip is not None:
            norm = np.linalg.norm(gradient)
            gradient = gradient * min(1.0, clip / (norm + 1e-12))
        first = betas[0] * first + (1 - betas[0]) * gradient
        second = betas[1] * second + (1 - betas[1]) * gradient ** 2
        rate = lr if schedule == "constant" else lr * 0.5 * (1 + np.cos(np.pi * step / steps))
        corrected = rate * np.sqrt(1 - betas[1] ** (step + 1)) / (1 - betas[0] ** (step + 1))
        flat = flat - corrected * first / (np.sqrt(second) + eps)
        history.append(float(value))
        if step % 10 == 0:
            bar.set_postfix(loss=f"{float(value):.4f}")
    return unflatten(flat), history


def lbfgs(loss: Callable, params: dict, maxiter: int = 200) -> dict:
    """Minimise the full-batch ``loss(params)`` with scipy's L-BFGS-B; returns the parameters."""
    flat, unflatten = flatten(params)
    objective = value_and_grad(lambda vector: loss(unflatten(vector)))

    def function(vector):
        value, gradient = objective(vector)
        return float(value), np.asarray(gradient, dtype=np.float64)

    solution = scipy.optimize.minimize(function, flat, jac=True, method="L-BFGS-B", options={"maxiter": maxiter})
    return unflatten(solution.x)
