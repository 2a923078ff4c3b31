"""An experiment's result: its configuration, seed, figures beside the paper's, and timings, as JSON.

>>> result = report("demo", quick=True, seed=0, config={"steps": 1}, rows=[row("R = 1", 0.5, paper=0.36)])
>>> result["rows"][0]["ours"], result["setting"]
(0.5, 'quick')
"""
from __future__ import annotations

import importlib
import json
import math
import os
import pathlib
import platform
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, Callable

import numpy as np


def check_setting(quick: object, seed: object) -> None:
    """The arguments every experiment's `run` takes: `quick` a bool, `seed` a non-negative int."""
    if not isinstance(quick, bool):
        raise TypeError(f"quick: expected a bool, got {type(quick).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed}")


#: What `check_out` calls a file that is not a regular one, by its ``stat`` type test.
_NOT_REGULAR = ((stat.S_ISDIR, "the existing directory"), (stat.S_ISLNK, "the symbolic link"),
                (stat.S_ISCHR, "the character device"), (stat.S_ISBLK, "the block device"),
                (stat.S_ISFIFO, "the FIFO"), (stat.S_ISSOCK, "the socket"))


def check_out(path: str | os.PathLike[str], quick: bool = False) -> pathlib.Path:
    """`path` as a file `write` can create or replace: a new path or an existing regular file (not a directory, a
    symbolic link, a device, a FIFO or a socket, which `write` would replace by a file), its parent an existing
    directory, and for a `quick` run not a full run's result (the results in the repository are replaced only by
    full runs).  A ValueError names ``out``, what it expected and what it found.
    """
    try:
        path = pathlib.Path(path)
        if "\0" in str(path):
            raise ValueError("a null byte")
        try:
            mode: int | None = path.lstat().st_mode         # the entry itself: a link is not followed
        except (FileNotFoundError, NotADirectoryError):   # a new path (its parent is checked below)
            mode = None
        parent = path.parent.is_dir()
    except TypeError as error:
        raise TypeError(f"out: expected a file path, got {type(path).__name__} ({error})") from None
    except (ValueError, OSError) as error:              # a null byte, a name the system refuses
        raise ValueError(f"out: expected a usable file path, got {str(path)!r:.80} ({error})") from None
    for test, kind in _NOT_REGULAR:
        if mode is not None and test(mode):
            raise ValueError(f"out: expected a file path, got {kind} {str(path)!r} (only a regular file or a new "
                             f"path is written)")
    if not parent:
        problem = "is not a directory" if path.parent.exists() else "does not exist (create it first)"
        raise ValueError(f"out: the parent {str(path.parent)!r} of {str(path)!r} {problem}")
    if quick and setting_of(path) == "full":
        raise ValueError(f"out: {str(path)!r} holds a full run's result, which a quick run does not replace; "
                         f"choose another path")
    return path


def setting_of(path: pathlib.Path) -> str | None:
    """The ``setting`` ("quick" or "full") of the result `write` wrote to `path`; None for anything else."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError, RecursionError):         # no file, not JSON or not text, nested too deeply
        return None
    return data.get("setting") if isinstance(data, dict) else None


def subsample(history: list[float], points: int) -> list[list[float]]:
    """About `points` evenly spaced [step, value] pairs of a loss curve, first and last included.

    >>> subsample([4.0, 3.0, 2.0, 1.0, 0.5], 3)
    [[0, 4.0], [2, 2.0], [4, 0.5]]
    """
    index = np.unique(np.linspace(0, len(history) - 1, points).round().astype(int))
    return [[int(i), history[i]] for i in index]


def row(name: str, ours: Any, paper: Any = None, **extra: Any) -> dict[str, Any]:
    """One line of a results table: our figure beside the paper's (None where the paper has none)."""
    return {"name": name, "ours": ours, "paper": paper, **extra}


def report(experiment: str, quick: bool, seed: int, config: dict, rows: list, timings: dict | None = None,
           engine: str = "numpy", **extra: Any) -> dict[str, Any]:
    """The result of one run, ready for `write`: with the engine it ran on and that library's version, and the
    machine (its CPUs and its one-minute load average when the run ended, which the timings depend on)."""
    version = importlib.import_module(engine).__version__
    machine = {"cpus": os.cpu_count(), "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg")
               else None}
    return {"experiment": experiment, "setting": "quick" if quick else "full", "seed": seed, "config": config,
            "rows": rows, "timings": timings or {}, "python": platform.python_version(),
            "numpy": np.__version__, "engine": {"name": engine, "version": version}, "machine": machine, **extra}


class Timings(dict):
    """Wall-clock seconds per named phase: ``with timings("train"): ...`` adds to ``timings["train"]``."""

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self[name] = self.get(name, 0.0) + time.perf_counter() - start


def _plain(value: Any) -> Any:
    """Plain JSON values: numpy ones as Python's, and a number that is not finite (a diverged loss) as null, which
    JSON has (NaN and Infinity are not JSON)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_atomically(path: str | os.PathLike[str], fill: Callable[[BinaryIO], object]) -> pathlib.Path:
    """Write `path` through ``fill(binary file)``: into a temporary file beside it that then replaces it, so a
    failure leaves any previous file intact and no temporary file behind.  Returns the path."""
    path = check_out(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            fill(file)
        os.chmod(temporary, 0o666 & ~_umask())        # mkstemp makes it private; give it an ordinary file's mode
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path


def write(result: dict, path: str | os.PathLike[str]) -> pathlib.Path:
    """Write `result` as indented JSON (numpy values become plain numbers), atomically (`replace_atomically`);
    returns the path."""
    text = json.dumps(_plain(result), indent=2, allow_nan=False) + "\n"
    return replace_atomically(path, lambda file: file.write(text.encode()))


def table(result: dict) -> str:
    """The rows as a small text table: name, ours, paper."""
    lines = [f"{result['experiment']} ({result['setting']}, seed {result['seed']})"]
    for line in result["rows"]:
        ours = line["ours"] if not isinstance(line["ours"], float) else f"{line['ours']:.4g}"
        paper = "-" if line["paper"] is None else line["paper"]
        lines.append(f"  {line['name']:<32} ours {ours:<10} paper {paper}")
    return "\n".join(lines)
