"""Random unit vectors shared by the so3 tests."""
import numpy as np


def unit_points(n, seed=0):
    points = np.random.default_rng(seed).normal(size=(n, 3))
    return points / np.linalg.norm(points, axis=1, keepdims=True)
