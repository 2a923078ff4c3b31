"""The experiments' shared tools: training loops, reports, datasets and the runner's bad input."""
import json
import os

import autograd.numpy as anp
from autograd import grad
import numpy as np
import pytest

from product_interactions.interactions.experiments import run
from product_interactions.interactions.experiments.datasets import digits, split, time_series
from product_interactions.interactions.experiments.report import Timings, report, row, table, write
from product_interactions.interactions.experiments.training import accuracy, adam, cross_entropy, lbfgs, minibatches


def test_cross_entropy_and_accuracy_against_hand_formulas():
    rng = np.random.default_rng(0)
    logits, labels = 50 * rng.standard_normal((7, 5)), rng.integers(0, 5, 7)
    probabilities = np.exp(logits - logits.max(1, keepdims=True))
    probabilities /= probabilities.sum(1, keepdims=True)
    assert np.isclose(cross_entropy(logits, labels), -np.mean(np.log(probabilities[np.arange(7), labels])))
    assert accuracy(logits, labels) == np.mean(logits.argmax(1) == labels)
    gradient = grad(cross_entropy)(logits, labels)                      # softmax minus one-hot, over the batch
    assert np.allclose(gradient, (probabilities - np.eye(5)[labels]) / 7)


def test_adam_fits_least_squares_on_minibatches():
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((64, 3)), np.array([1.0, -2.0, 0.5])
    b = a @ w
    stream = minibatches(64, 16, np.random.default_rng(2))
    batches = lambda step: next(stream)
    loss = lambda p, index: anp.mean((anp.dot(a[index], p["w"]) - b[index]) ** 2)
    params, history = adam(loss, {"w": np.zeros(3)}, steps=600, batches=batches, lr=0.05, schedule="cosine",
                           clip=10.0, progress=False)
    assert np.allclose(params["w"], w, atol=1e-3) and history[-1] < 1e-4 < history[0]


def test_lbfgs_matches_the_normal_equations():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((30, 4)), rng.standard_normal(30)
    params = lbfgs(lambda p: anp.sum((anp.dot(a, p["w"]) + p["c"] - b) ** 2), {"w": np.zeros(4), "c": np.zeros(())})
    design = np.hstack([a, np.ones((30, 1))])
    assert np.allclose(np.append(params["w"], params["c"]), np.linalg.lstsq(design, b, rcond=None)[0], atol=1e-5)


def test_minibatches_cover_each_epoch_once():
    stream = minibatches(10, 5, np.random.default_rng(0))
    assert sorted(np.concatenate([next(stream), next(stream)])) == list(range(10))
    assert len(next(minibatches(3, 8, np.random.default_rng(0)))) == 3         # a batch larger than the data
    with pytest.raises(ValueError, match="minibatches"):
        next(minibatches(0, 5, np.random.default_rng(0)))


def test_adam_refuses_non_finite_losses_and_unknown_schedules():
    with pytest.raises(FloatingPointError, match="step 0"):
        adam(lambda p, _: anp.sum(p["w"]) * np.inf, {"w": np.ones(2)}, 3, lambda step: None, progress=False)
    with pytest.raises(ValueError, match="schedule"):
        adam(lambda p, _: anp.sum(p["w"]), {"w": np.ones(2)}, 3, lambda step: None, schedule="linear")


def test_report_round_trips_through_json(tmp_path):
    timings = Timings()
    with timings("train"):
        pass
    with timings("train"):
        pass
    result = report("demo", quick=False, seed=3, config={"width": np.int64(4)},
                    rows=[row("R = 1", np.float64(0.25), paper=0.36)], timings=timings, curve=np.arange(3))
    loaded = json.loads(write(result, tmp_path / "demo.json").read_text())
    assert loaded["config"] == {"width": 4} and loaded["rows"][0] == {"name": "R = 1", "ours": 0.25, "paper": 0.36}
    assert loaded["setting"] == "full" and loaded["seed"] == 3 and loaded["curve"] == [0, 1, 2]
    assert set(loaded["timings"]) == {"train"} and loaded["timings"]["train"] >= 0
    assert loaded["machine"]["cpus"] == os.cpu_count() and loaded["machine"]["load_average"] >= 0
    assert loaded["engine"] == {"name": "numpy", "version": np.__version__}
    assert "R = 1" in table(result) and "0.36" in table(result)


def test_digits_and_split():
    images, labels = digits("mnist")
    assert images.shape == (5000, 28, 28) and 0 <= images.min() and images.max() == 1 and labels.shape == (5000,)
    train, test = split(10, 0.3, np.random.default_rng(0))
    assert len(train) == 7 and sorted(np.concatenate([train, test])) == list(range(10))
    with pytest.raises(ValueError, match="source"):
        digits("cifar")
    with pytest.raises(ValueError, match="test_fraction"):
        split(10, 1.5, np.random.default_rng(0))


def test_time_series_are_padded_at_the_end_with_masks():
    data = time_series("JapaneseVowels")
    assert data["x_train"].shape == (270, 26, 12) and data["x_test"].shape[0] == 370 and len(data["classes"]) == 9
    lengths = data["mask_train"].sum(1)
    assert lengths.min() == 7 and np.all(data["mask_train"] == (np.arange(26) < lengths[:, None]))
    assert np.all(data["x_train"][~data["mask_train"]] == 0) and np.all(np.abs(data["x_train"][data["mask_train"]]).sum(-1) > 0)
    assert sorted(set(data["y_test"])) == list(range(9))
    with pytest.raises(ValueError, match="name"):
        time_series("Vowels")


def test_run_refuses_unknown_experiments_and_seeds():
    with pytest.raises(ValueError, match="name: expected one of"):
        run("cifar")
    with pytest.raises(TypeError, match="seed"):
        run("copy", seed=1.5)


def test_timings_add_up_a_repeated_phase(monkeypatch):
    """Issue 39: ``Timings`` documents that a phase timed twice adds to its total (not the last run alone); with a
    scripted clock the totals are exact, including a phase that raises."""
    import product_interactions.interactions.experiments.report as report_module
    ticks = iter([0.0, 1.5, 10.0, 12.25, 20.0, 20.5, 30.0, 34.0])

    class Clock:
        @staticmethod
        def perf_counter():
            return next(ticks)
    monkeypatch.setattr(report_module, "time", Clock)
    timings = Timings()
    with timings("train"):
        pass
    with timings("evaluate"):
        pass
    with timings("train"):
        pass
    with pytest.raises(RuntimeError), timings("train"):
        raise RuntimeError("stopped")
    assert timings == {"train": 1.5 + 0.5 + 4.0, "evaluate": 2.25}
