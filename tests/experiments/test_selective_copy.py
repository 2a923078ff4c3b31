"""The copy experiment: the selective-copying generator, bad input, and the quick run (rows, fields, determinism,
learning)."""
import numpy as np
import pytest
from interruption import training_stopped_at

from product_interactions.interactions.experiments import selective_copy
from product_interactions.interactions.experiments.selective_copy import FIRST_DATA, MARKER, NOISE, QUICK, generate

#: A configuration small enough to train in a fraction of a second.
TINY = dict(QUICK, length=12, tokens=2, steps=3, batch=4, test_samples=8, curve_points=3)


@pytest.fixture(scope="module")
def quick():
    return selective_copy.run(quick=True, seed=0, progress=False)


def test_generator_places_the_data_among_noise_then_the_markers():
    length, tokens, vocabulary = 40, 6, 5
    inputs, targets = generate(50, length, tokens, vocabulary, np.random.default_rng(3))
    assert inputs.shape == (50, length) and targets.shape == (50, tokens)
    assert np.all(inputs[:, length - tokens:] == MARKER)
    head = inputs[:, :length - tokens]
    assert np.all((head == NOISE) | ((head >= FIRST_DATA) & (head < FIRST_DATA + vocabulary)))
    assert np.all(np.sum(head != NOISE, axis=1) == tokens)                  # no data token left out or doubled
    for sequence, data in zip(head, targets):
        np.testing.assert_array_equal(sequence[sequence != NOISE], data)  # the targets, in order
    assert set(np.unique(targets)) == set(range(FIRST_DATA, FIRST_DATA + vocabulary))
    positions = np.nonzero(head != NOISE)[1].reshape(50, tokens)
    assert len({tuple(p) for p in positions}) > 40                           # positions vary between sequences


def test_generator_is_seeded():
    first = generate(4, 20, 3, 4, np.random.default_rng(7))
    again = generate(4, 20, 3, 4, np.random.default_rng(7))
    other = generate(4, 20, 3, 4, np.random.default_rng(8))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[0], other[0])


def test_generator_refuses_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="tokens: 6 data tokens and 6 markers do not fit in length 11"):
        generate(2, 11, 6, 4, rng)
    with pytest.raises(ValueError, match="vocabulary"):
        generate(2, 12, 3, 0, rng)
    with pytest.raises(TypeError, match="length"):
        generate(2, 12.0, 3, 4, rng)


def test_run_refuses_bad_arguments():
    with pytest.raises(TypeError, match="quick"):
        selective_copy.run(quick="yes")
    with pytest.raises(TypeError, match="seed"):
        selective_copy.run(quick=True, seed=1.5)


def test_quick_run_reports_one_row_per_rank(quick):
    assert quick["experiment"] == "copy" and quick["setting"] == "quick" and quick["seed"] == 0
    engine = quick["engine"]["name"]
    assert quick["config"] == dict(QUICK, engine=engine, dtype="float64" if engine == "numpy" else "float32",
                                   device=None)
    assert [line["name"] for line in quick["rows"]] == ["R = 1", "R = 2", "R = 4"]
    assert [line["paper"] for line in quick["rows"]] == [0.3603, 0.9173, 0.9239]
    assert all(0.0 <= line["ours"] <= 1.0 for line in quick["rows"])
    assert quick["rows"][0]["parameters"] < quick["rows"][1]["parameters"] < quick["rows"][2]["parameters"]
    assert set(quick["curves"]) == set(quick["by_marker"]) == {"R = 1", "R = 2", "R = 4"}
    assert all(len(curve) == QUICK["curve_points"] and curve[-1][0] == QUICK["steps"] - 1
               for curve in quick["curves"].values())
    assert all(len(accuracies) == QUICK["tokens"] for accuracies in quick["by_marker"].values())
    assert quick["timings"]["train and test"] > 0


def test_quick_run_learns(quick):
    chance = quick["chance"]
    assert chance == 1 / QUICK["vocabulary"]
    assert max(line["ours"] for line in quick["rows"]) > chance + 0.25
    for curve in quick["curves"].values():
        assert curve[-1][1] < 0.9 * curve[0][1]                               # the loss falls


def test_quick_run_is_deterministic_under_its_seed(quick):
    again = selective_copy.train(dict(QUICK), rank=1, seed=0)
    assert again["accuracy"] == quick["rows"][0]["ours"]
    assert again["curve"] == quick["curves"]["R = 1"]


def test_seeds_change_the_result_and_workers_do_not():
    one = selective_copy.train(TINY, rank=2, seed=0)
    assert one["curve"] == selective_copy.train(TINY, rank=2, seed=0)["curve"]
    assert one["curve"] != selective_copy.train(TINY, rank=2, seed=1)["curve"]
    alone = selective_copy._train_all(dict(TINY, workers=1), [0, 1], progress=False)
    pooled = selective_copy._train_all(dict(TINY, workers=2), [0, 1], progress=False)
    assert list(pooled) == [(r, s) for r in (1, 2, 4) for s in (0, 1)]
    assert [alone[key]["curve"] for key in alone] == [pooled[key]["curve"] for key in pooled]


def test_accuracy_curve_is_measured_every_eval_every_steps():
    result = selective_copy.train(dict(TINY, steps=5, eval_every=2), rank=1, seed=0)
    assert [step for step, _ in result["accuracy_curve"]] == [2, 4, 5]
    assert all(0.0 <= accuracy <= 1.0 for _, accuracy in result["accuracy_curve"])


def test_an_interrupted_run_resumes_from_its_checkpoint_exactly(tmp_path):
    config = dict(TINY, steps=6, eval_every=2)
    whole = selective_copy.train(config, rank=2, seed=0)
    with training_stopped_at(5):
        selective_copy.train(config, rank=2, seed=0, checkpoint=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["copy-R2-seed0.npz"]        # saved at step 4, no stray file
    resumed = selective_copy.train(config, rank=2, seed=0, checkpoint=tmp_path)
    assert resumed["curve"] == whole["curve"] and resumed["accuracy_curve"] == whole["accuracy_curve"]
    assert resumed["accuracy"] == whole["accuracy"] and resumed["by_marker"] == whole["by_marker"]


def test_a_checkpoint_of_another_configuration_or_a_broken_one_is_refused(tmp_path):
    selective_copy.train(dict(TINY, eval_every=1), rank=1, seed=0, checkpoint=tmp_path)
    with pytest.raises(ValueError, match="checkpoint: .*copy-R1-seed0.npz was saved with another configuration"):
        selective_copy.train(dict(TINY, eval_every=1, lr=0.5), rank=1, seed=0, checkpoint=tmp_path)
    (tmp_path / "copy-R1-seed0.npz").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="checkpoint: .*copy-R1-seed0.npz is not a readable checkpoint"):
        selective_copy.train(dict(TINY, eval_every=1), rank=1, seed=0, checkpoint=tmp_path)


def test_run_takes_steps_and_a_checkpoint_directory(tmp_path):
    result = selective_copy.run(quick=True, seed=0, progress=False, engine="numpy", steps=2, checkpoint=tmp_path)
    assert result["config"]["steps"] == 2
    assert all(curve[-1][0] == 1 for curve in result["curves"].values())
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"copy-R{r}-seed0.npz" for r in (1, 2, 4)]
    with pytest.raises(ValueError, match="steps"):
        selective_copy.run(quick=True, steps=0)
    with pytest.raises(ValueError, match="checkpoint: expected an existing directory"):
        selective_copy.run(quick=True, checkpoint=tmp_path / "absent")
