"""The dynamical experiment: the (I, H) grid against Mamba on sequential digits, its image reading and bad input."""
import numpy as np
import pytest
from interruption import training_stopped_at

from product_interactions.interactions.experiments import dynamical
from product_interactions.interactions.experiments.dynamical import QUICK, experiment, layer, run, sequences

ACCURACIES = ["Mamba", "I=3, H=2", "I=1, H=1", "bare layer I=3, H=2"]


def ratios(engine: str, bare: bool = True) -> list:
    return [f"{phase} throughput, {key} / Mamba ({engine})" for phase in ("training", "inference")
            for key in ("dynamical", "bare layer")[:1 + bare]]


@pytest.fixture(scope="module")
def quick():
    return run(quick=True, progress=False)


def test_quick_run_reports_accuracies_above_chance_orders_and_positive_ratios(quick):
    rows, RATIOS = {line["name"]: line for line in quick["rows"]}, ratios(quick["engine"]["name"])
    assert list(rows) == ACCURACIES + RATIOS and quick["setting"] == "quick" and quick["experiment"] == "dynamical"
    assert [rows[key]["paper"] for key in ACCURACIES + RATIOS] == [86.818, 87.118, 86.112, None, 2.69, None, 2.6,
                                                                    None]
    for key in ACCURACIES:
        assert 50 < rows[key]["ours"] <= 100 and rows[key]["seeds"] == [rows[key]["ours"]]     # chance is 10 %
        assert rows[key]["std"] == 0
    assert rows["Mamba"]["orders"] == {"input": 3, "hidden": 1, "output": 5}
    assert rows["I=3, H=2"]["orders"] == {"input": 3, "hidden": 2, "output": 5}          # in Mamba's block
    assert rows["I=1, H=1"]["orders"] == {"input": 1, "hidden": 1, "output": 3}
    assert rows["bare layer I=3, H=2"]["orders"] == {"input": 3, "hidden": 2, "output": 4}
    assert [rows[key]["block"] for key in ACCURACIES] == ["Mamba's block"] * 3 + ["bare layer"]
    for key in RATIOS:
        speeds, timed = rows[key]["it_per_s"], "bare layer" if "bare" in key else "dynamical"
        assert np.isclose(rows[key]["ours"], speeds[timed] / speeds["Mamba"]) and rows[key]["ours"] > 0
        assert rows[key]["dynamical"] == ("bare layer I=3, H=2" if timed == "bare layer" else "I=3, H=2")
    assert set(quick["timings"]) >= {"data", "train Mamba", f"throughput on {quick['engine']['name']}"}


def test_accuracies_are_deterministic_under_a_seed():
    config = {**QUICK, "grid": [(2, 1)], "steps": 15, "repeats": 1, "engine": "numpy"}
    first, second = (experiment(config, seed=3, progress=False, quick=True) for _ in range(2))
    assert [line["ours"] for line in first["rows"][:2]] == [line["ours"] for line in second["rows"][:2]]


def test_seeds_are_averaged_and_throughput_is_timed_on_each_engine_asked():
    config = {**QUICK, "grid": [(1, 1)], "bare": [], "steps": 6, "repeats": 1, "engine": "numpy", "seeds": 2,
              "throughput_on": ["numpy"]}
    result = experiment(config, seed=1, progress=False, quick=True)
    rows = {line["name"]: line for line in result["rows"]}
    assert list(rows) == ["Mamba", "I=1, H=1"] + ratios("numpy", bare=False)    # numpy timed once
    for key in ("Mamba", "I=1, H=1"):
        seeds = rows[key]["seeds"]
        assert len(seeds) == 2 and rows[key]["ours"] == pytest.approx(np.mean(seeds))
        assert rows[key]["std"] == pytest.approx(np.std(seeds))
    alone = experiment({**config, "seeds": 1, "throughput_on": []}, seed=1, progress=False, quick=True)
    assert [line["ours"] for line in alone["rows"][:2]] == [rows[key]["seeds"][0] for key in ("Mamba", "I=1, H=1")]
    with pytest.raises(ValueError, match="engine: expected one of"):
        experiment({**config, "throughput_on": ["cuda"]}, progress=False)


def test_steps_replace_the_settings(monkeypatch):
    seen = []
    monkeypatch.setattr(dynamical, "experiment", lambda config, **options: seen.append(config["steps"]))
    run(quick=True, progress=False, steps=7)
    run(quick=True, progress=False)
    assert seen == [7, QUICK["steps"]]
    with pytest.raises(ValueError, match="steps: expected a positive int, got 0"):
        run(quick=True, steps=0)


def test_settings_by_name_and_patches_read_forward_and_backward(monkeypatch):
    seen = []
    monkeypatch.setattr(dynamical, "experiment", lambda config, **options: seen.append(config))
    run(progress=False, setting="patches")
    run(progress=False)
    assert [config["reading"] for config in seen] == ["patches", "pixels"]
    assert seen[0]["bidirectional"] and not seen[1]["bidirectional"] and seen[0]["pool"] == 4
    from product_interactions.interactions import experiments
    assert experiments.SETTINGS["dynamical"] == tuple(dynamical.SETTINGS)        # the CLI's names are the module's
    for quick, setting in ((True, "patches"), (False, "rows")):
        with pytest.raises(ValueError, match=r"setting: expected one of \['patches', 'pixels'\]"):
            run(quick=quick, setting=setting)


def test_images_read_as_patches_in_raster_order():
    images = np.arange(32.0).reshape(2, 4, 4)
    patches = sequences(images, "patches", 2)
    assert patches.shape == (2, 4, 4)
    assert patches[0, 1].tolist() == [2.0, 3.0, 6.0, 7.0]                        # the top right 2 x 2 cell
    assert patches[1, 2].tolist() == [24.0, 25.0, 28.0, 29.0]                    # image 1, bottom left
    assert sequences(images, "patches", 1).tolist() == sequences(images, "pixels", 1).tolist()


def test_the_bidirectional_classifier_adds_a_backward_block():
    from product_interactions.interactions.experiments.dynamical import SequenceClassifier
    x = np.random.default_rng(0).standard_normal((2, 5, 3))
    both, forward = (SequenceClassifier(layer((2, 1), d_model=4), 3, bidirectional=flag) for flag in (True, False))
    params = both.init(seed=1)
    assert len(params["backward"]) == 1 and "backward" not in forward.init(seed=1)
    silent = {**params, "backward": [{**params["backward"][0], "W_out": np.zeros((4, 8))}]}
    unidirectional = {key: value for key, value in params.items() if key != "backward"}
    np.testing.assert_allclose(both.logits(silent, x), forward.logits(unidirectional, x), rtol=1e-12)
    assert not np.allclose(both.logits(params, x), forward.logits(unidirectional, x))
    # backward: the reversed sequence's logits with the directions swapped
    swapped = {**params, "blocks": params["backward"], "backward": params["blocks"]}
    np.testing.assert_allclose(both.logits(params, x), both.logits(swapped, x[:, ::-1]), rtol=1e-10)


def test_images_pooled_before_reading():
    images = np.arange(32.0).reshape(2, 4, 4)
    pooled = sequences(images, "pixels", 2)
    assert pooled.shape == (2, 4, 1) and pooled[0, 0, 0] == np.mean([0, 1, 4, 5])
    assert sequences(np.ones((1, 5, 5)), "rows", 2).shape == (1, 2, 2)         # the fifth row and column drop
    for pool in (0, 6, 1.5, True):
        with pytest.raises(ValueError, match="pool: expected an int from 1 to 4"):
            sequences(images, "rows", pool)


def test_images_read_row_by_row_and_pixel_by_pixel():
    images = np.arange(12.0).reshape(2, 2, 3)                     # two images of 2 rows x 3 columns
    rows, pixels = sequences(images, "rows"), sequences(images, "pixels")
    assert rows.shape == (2, 2, 3) and rows[1, 0].tolist() == [6.0, 7.0, 8.0]     # step 0 of image 1: its row 0
    assert pixels.shape == (2, 6, 1) and pixels[1, :, 0].tolist() == [6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
    assert pixels[0, 4, 0] == images[0, 1, 1]                     # raster order: step 4 is row 1, column 1


def test_bad_input_raises_a_value_error_naming_the_argument():
    images = np.zeros((2, 4, 4))
    with pytest.raises(ValueError, match=r"reading: expected one of \('rows', 'pixels', 'patches'\), got 'columns'"):
        sequences(images, "columns")
    with pytest.raises(ValueError, match="images: expected shape"):
        sequences(images[0], "rows")
    for point in [(2, 2), (4, 1), "mamba", 3]:
        with pytest.raises(ValueError, match="point: expected 'Mamba' or an"):
            layer(point, d_model=4)
    with pytest.raises(ValueError, match="point: expected"):              # before any training
        experiment({**QUICK, "grid": [(3, 2), (3, 3)]}, progress=False)
    with pytest.raises(ValueError, match="point: expected"):
        experiment({**QUICK, "bare": [(0, 1)]}, progress=False)
    with pytest.raises(ValueError, match="grid: expected at least one"):
        experiment({**QUICK, "grid": []}, progress=False)
    assert dynamical.name((3, 1)) == "I=3, H=1" and dynamical.name((3, 1), bare=True) == "bare layer I=3, H=1"


def test_grid_points_sit_in_mambas_block_and_the_ablation_is_the_bare_layer():
    block, bare, baseline = layer((2, 1), d_model=4), layer((2, 1), d_model=4, bare=True), layer("Mamba", 4)
    frame = ("W_x", "W_z", "W_out", "conv_0", "conv_bias")
    assert [block.parameters[key] for key in frame] == [baseline.parameters[key] for key in frame]
    assert not set(frame) & set(bare.parameters) and bare.parameters["W_u"] == (4, 4)
    assert block.parameters["W_u"] == (8, 8)                                    # on d_inner = 2 d_model features


def test_an_interrupted_run_resumes_from_its_checkpoint_exactly(tmp_path, monkeypatch):
    """Stopped after its first checkpoint, a run resumes from it with the same batches: the same accuracies."""
    monkeypatch.setattr(dynamical, "CHECKPOINT_EVERY", 2)
    config = {**QUICK, "grid": [(1, 1)], "bare": [], "steps": 5, "repeats": 1, "engine": "numpy",
              "throughput_on": []}
    whole = experiment(config, seed=0, progress=False, quick=True)
    with training_stopped_at(3):
        experiment(config, seed=0, progress=False, quick=True, checkpoint=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["dynamical-Mamba-seed-0.npz"]   # saved at step 2
    resumed = experiment(config, seed=0, progress=False, quick=True, checkpoint=tmp_path)
    assert [line["ours"] for line in resumed["rows"][:2]] == [line["ours"] for line in whole["rows"][:2]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dynamical-I-1-H-1-seed-0.npz", "dynamical-Mamba-seed-0.npz"]
    with pytest.raises(ValueError, match="checkpoint: .*dynamical-Mamba-seed-0.npz was saved with another "
                                         "configuration"):
        experiment({**config, "lr": 0.5}, seed=0, progress=False, quick=True, checkpoint=tmp_path)
    with pytest.raises(ValueError, match="checkpoint: expected an existing directory"):
        run(quick=True, checkpoint=tmp_path / "absent")
