"""Small, seeded, offline experiments; each returns its figures as data (see `report`) and can write them as JSON.

``run(name, quick=..., seed=..., out=..., engine=..., threads=..., device=...)`` or ``product-interactions
experiment NAME [--quick] [--seed S] [--engine numpy|torch|jax] [--device D] [--threads N] [--steps N]
[--checkpoint DIR] [--out FILE]``.
NAME is one of `EXPERIMENTS`:

* ``copy``: selective copying at length 192 with attention of projection rank R = 1, 2, 4 (`selective_copy`);
* ``symmetry``: the multiplication operator O_K on digits over the whole lattice, exact translation constraint vs
  none vs the regulariser, and accuracy against the filter's support (`symmetry`);
* ``seq2tens``: LS2T and FCN-LS2T classification of sktime's JapaneseVowels and BasicMotions (`seq2tens`);
* ``dynamical``: the dynamical layer's (I, H) grid against Mamba on digits read pixel by pixel, 3 seeds, and
  their throughput on the training engine and on numpy (`dynamical`).

``--quick`` is the setting the tests run (well under a minute); the full setting reproduces the paper's trend.
``--engine`` picks the array library the models train on (`training.engine_named`): by default the fastest
installed one (torch, then JAX, then numpy), in float32 on torch and JAX and float64 on numpy; the JSON records
the engine and its version.  ``--device`` (``cuda``, ``cuda:1``; JAX's ``gpu``) is where the parameters and the
optimiser's state live and the models run (the JSON's ``config.device``).  Each experiment names the engines it supports (its ``SUPPORTED``).  ``--threads``
sets the threads of torch, numpy's BLAS and the compiled loop for the run (by default the environment's, such as
``OMP_NUM_THREADS``, else one for ``--quick``: `threads`); the JSON records them under ``machine``.  The copy
and dynamical experiments also take ``--steps`` (a longer run, on a GPU say) and ``--checkpoint DIR``, where they
save each training run as it goes and from which they resume one that stopped; the dynamical experiment takes
``--setting pixels|patches`` too, the symmetry experiment ``--setting paper|ablations`` (the ablations of its
free model and the regulariser's weight, with ``--quick`` too: `symmetry.SETTINGS`).
symmetry, seq2tens and dynamical read their data from packages of the ``experiments`` extra (`datasets`).
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from .checkpoint import check_directory
from .report import check_out, check_setting, table, write
from .threads import limited, run_threads
from .training import engine_named

if TYPE_CHECKING:
    from ...kernels.arrays import Engine

EXPERIMENTS = {"copy": "selective_copy", "symmetry": "symmetry", "seq2tens": "seq2tens", "dynamical": "dynamical"}


#: The experiments that take a checkpoint directory (`run`'s `checkpoint`), and those that take a number of
#: training steps (`run`'s `steps`).
RESUMABLE = ("copy", "dynamical")
STEPPED = ("copy", "dynamical")
#: The experiments with full settings to choose from by name (`run`'s `setting`; the first is the default).
SETTINGS = {"dynamical": ("pixels", "patches"), "symmetry": ("paper", "ablations")}


def resumable_options(name: str, steps: int | None = None, checkpoint: str | os.PathLike[str] | None = None,
                      setting: str | None = None) -> dict[str, Any]:
    """The given ones of `steps`, `checkpoint` and `setting` as options for experiment `name`, checked: only the
    `STEPPED` experiments take `steps`, only the `RESUMABLE` ones `checkpoint`, only those of `SETTINGS` a
    `setting` (one of theirs), and a checkpoint directory must exist (a ValueError names the option).

    >>> resumable_options("dynamical", steps=600)
    {'steps': 600}
    >>> resumable_options("seq2tens", checkpoint="runs")
    Traceback (most recent call last):
    ...
    ValueError: checkpoint: only copy, dynamical takes it, not seq2tens
    >>> resumable_options("dynamical", setting="patches")
    {'setting': 'patches'}
    """
    for option, value, takers in (("steps", steps, STEPPED), ("checkpoint", checkpoint, RESUMABLE),
                                  ("setting", setting, tuple(SETTINGS))):
        if value is not None and name not in takers:
            raise ValueError(f"{option}: only {', '.join(takers)} takes it, not {name}")
    if setting is not None and setting not in SETTINGS[name]:
        raise ValueError(f"setting: expected one of {list(SETTINGS[name])} for {name}, got {setting!r}")
    options = {key: value for key, value in (("steps", steps), ("checkpoint", checkpoint), ("setting", setting))
               if value is not None}
    if checkpoint is not None:
        check_directory(checkpoint)
    return options


def engine_for(name: str, engine: str | None = None) -> Engine:
    """The engine experiment `name` trains on: `engine` (a ValueError if the experiment does not support it, a
    `MissingExtra` if it is not installed), or for None the fastest installed one that it supports.

    >>> engine_for("copy", "numpy").name
    'numpy'
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"name: expected one of {sorted(EXPERIMENTS)}, got {name!r}")
    return engine_named(engine, importlib.import_module(f".{EXPERIMENTS[name]}", __name__).SUPPORTED)


def run(name: str, quick: bool = False, seed: int = 0, out: str | os.PathLike[str] | None = None, progress: bool = True,
        engine: str | None = None, steps: int | None = None,
        checkpoint: str | os.PathLike[str] | None = None, threads: int | None = None,
        device: str | None = None, setting: str | None = None) -> dict[str, Any]:
    """Run experiment `name` on `engine` (None: the fastest installed that it supports), `device` ("cuda", say;
    None: the engine's default) and `threads` (`threads.run_threads`); writes the result as JSON to `out` when
    given (checked before the run), and returns it.  The `STEPPED` experiments also take `steps` (replacing the
    setting's), the `RESUMABLE` ones `checkpoint` (a directory to save to and resume from), those of `SETTINGS`
    a full `setting` by name.  Every argument is checked before the run starts."""
    check_setting(quick, seed)
    chosen = engine_for(name, engine)
    check_device(chosen, device)
    if out is not None:
        check_out(out, quick)
    options = resumable_options(name, steps, checkpoint, setting)
    count = run_threads(threads, quick)
    module = importlib.import_module(f".{EXPERIMENTS[name]}", __name__)
    with limited(count, chosen):
        result = module.run(quick=quick, seed=seed, progress=progress, engine=chosen.name, device=device, **options)
    result["machine"] = dict(result["machine"], threads=count)
    if out is not None:
        write(result, out)
    return result


def check_device(engine: Engine, device: str | None) -> None:
    """Refuse, by name, a `device` the engine cannot place arrays on (before anything runs).

    >>> check_device(engine_for("copy", "numpy"), "cuda")
    Traceback (most recent call last):
    ...
    ValueError: device: the numpy engine has only the CPU, got 'cuda'
    """
    if device is not None:
        engine.like("float32", device)


__all__ = ["EXPERIMENTS", "check_device", "RESUMABLE", "SETTINGS", "STEPPED", "engine_for", "resumable_options", "run",
           "table", "write"]
