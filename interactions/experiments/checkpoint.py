"""Checkpoints of a training run: an `Adam`'s state and the run's own arrays (loss history, accuracy curve) in one
``.npz``, written atomically, so that a run stopped at any step resumes exactly, on any engine.

A checkpoint records the run's configuration; resuming under another configuration is refused by name.  Files
are read without pickle.

>>> import pathlib, tempfile
>>> from product_interactions.interactions.experiments.training import Adam
>>> def loss(p, batch):
...     return ((p["w"] - batch) ** 2).sum()
>>> first = Adam(loss, {"w": np.zeros(2)}, lr=0.1)
>>> _ = [first.step(3.0) for _ in range(5)]
>>> path = pathlib.Path(tempfile.mkdtemp()) / "run.npz"
>>> save(path, first, {"lr": 0.1}, history=[1.0, 2.0])
>>> second = Adam(loss, {"w": np.zeros(2)}, lr=0.1)
>>> saved = load(path, second, {"lr": 0.1})
>>> second.count, saved["history"].tolist(), bool(np.all(second.params["w"] == first.params["w"]))
(5, [1.0, 2.0], True)
>>> load(path, second, {"lr": 0.2})
Traceback (most recent call last):
...
ValueError: checkpoint: ... was saved with another configuration ({"lr": 0.1}); this run has {"lr": 0.2}
"""
from __future__ import annotations

import json
import os
import pathlib
import zipfile
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .report import replace_atomically

if TYPE_CHECKING:
    from .training import Adam

#: The parts of an `Adam.state()` stored as one array per parameter.
PARTS = ("params", "first", "second")


def check_directory(directory: str | os.PathLike[str]) -> pathlib.Path:
    """`directory` as the existing directory checkpoints go to, or a ValueError naming `checkpoint`."""
    try:
        path = pathlib.Path(directory)
        found = path.is_dir()
    except TypeError as error:
        raise TypeError(f"checkpoint: expected a directory path, got {type(directory).__name__} ({error})") from None
    except (ValueError, OSError):                        # a null byte, a name the system refuses
        found = False
    if not found:
        raise ValueError(f"checkpoint: expected an existing directory, got {str(directory)!r:.80}")
    return path


def save(path: str | os.PathLike[str], optimiser: Adam, config: dict[str, Any], **arrays: ArrayLike) -> None:
    """Write `optimiser`'s state, `config` and the named `arrays` to `path` (a ``.npz``), atomically."""
    state = optimiser.state()
    content: dict[str, Any] = {"config": np.array(_text(config)), "count": np.array(state["count"]),
               **{f"{part}_{n}": a for part in PARTS for n, a in enumerate(state[part])},
               **{f"run_{name}": np.asarray(value) for name, value in arrays.items()}}
    replace_atomically(path, lambda file: np.savez(file, **content))


def load(path: str | os.PathLike[str], optimiser: Adam, config: dict[str, Any]) -> dict[str, np.ndarray]:
    """Resume `optimiser` from the checkpoint at `path`, saved under the same `config`; returns its named arrays.
    Refuses, naming the checkpoint, a file that is not one or was saved under another configuration."""
    try:
        _check_sizes(path)
        with np.load(path, allow_pickle=False) as stored:
            content = {name: stored[name] for name in stored.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, MemoryError) as error:
        raise ValueError(f"checkpoint: {path} is not a readable checkpoint ({error})") from None
    if "config" not in content or "count" not in content:
        raise ValueError(f"checkpoint: {path} is not a checkpoint (no config or count)")
    if str(content["config"]) != _text(config):
        raise ValueError(f"checkpoint: {path} was saved with another configuration ({content['config']}); "
                         f"this run has {_text(config)}")
    count = len(optimiser.shapes)
    try:
        state = {part: [content[f"{part}_{n}"] for n in range(count)] for part in PARTS}
    except KeyError as missing:
        raise ValueError(f"checkpoint: {path} lacks {missing}") from None
    optimiser.load({"count": int(content["count"]), **state})
    return {name[4:]: value for name, value in content.items() if name.startswith("run_")}


def _check_sizes(path: str | os.PathLike[str]) -> None:
    """A ValueError for a member of the ``.npz`` at `path` whose header claims more bytes than the member holds
    (read before numpy allocates what the header claims: a forged shape of 2^40 values asked for 8 TiB)."""
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            with archive.open(member) as stream:
                version = np.lib.format.read_magic(stream)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    np.lib.format.read_array_header_2_0
                shape, _, dtype = read(stream, max_header_size=10_000)
                claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if claimed > member.file_size:
                    raise ValueError(f"{member.filename}: its header claims shape {shape} of {dtype} "
                                     f"({claimed:,} bytes), more than the {member.file_size:,} bytes it holds")


def _text(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=str)
