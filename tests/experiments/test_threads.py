"""Threads for a run: the number asked for, else the environment's, else one for the quick settings; set on torch,
numpy's BLAS and the compiled loop for the run and put back after it."""
import importlib.util

import pytest
from threadpoolctl import threadpool_info

from product_interactions.interactions import __main__ as cli
from product_interactions.interactions.experiments import run
from product_interactions.interactions.experiments.report import report, row
from product_interactions.interactions.experiments.threads import environment_threads, limited, run_threads
from product_interactions.interactions.experiments.training import engine_named
from product_interactions.kernels.native import clib


def blas_threads() -> list:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.mark.parametrize("environment, expected", [
    ({}, None), ({"OMP_NUM_THREADS": "3"}, 3), ({"OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "4"}, 2),
    ({"OMP_NUM_THREADS": "0", "MKL_NUM_THREADS": "5"}, 5), ({"OMP_NUM_THREADS": "two"}, None)])
def test_the_environment_sets_the_threads(environment, expected):
    assert environment_threads(environment) == expected
    assert run_threads(None, quick=False, environment=environment) == expected
    assert run_threads(None, quick=True, environment=environment) == (expected or 1)
    assert run_threads(6, quick=True, environment=environment) == 6


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-1, ValueError), (True, TypeError), ("2", TypeError),
                                        (1.5, TypeError)])
def test_bad_threads_are_refused_by_name(bad, error):
    with pytest.raises(error, match="threads"):
        run_threads(bad, quick=True)


@pytest.mark.parametrize("engine", ["numpy", pytest.param("torch", marks=pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch absent"))])
def test_limited_sets_every_pool_and_puts_it_back(engine):
    chosen = engine_named(engine)
    torch = chosen.xp if engine == "torch" else None
    before = (torch.get_num_threads() if torch else None, clib.THREADS, blas_threads())
    with limited(1, chosen):
        assert clib.THREADS == 1 and set(blas_threads()) <= {1}
        assert torch is None or torch.get_num_threads() == 1
    assert (torch.get_num_threads() if torch else None, clib.THREADS, blas_threads()) == before
    with limited(None, chosen):
        assert (torch.get_num_threads() if torch else None, clib.THREADS, blas_threads()) == before


def test_a_quick_run_takes_one_thread_and_records_it(monkeypatch):
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    seen = []
    monkeypatch.setattr("product_interactions.interactions.experiments.selective_copy.run",
                        lambda **options: seen.append(clib.THREADS) or report("copy", True, 0, {}, [row("R", 1.0)]))
    assert run("copy", quick=True, engine="numpy")["machine"]["threads"] == 1 and seen == [1]
    assert run("copy", quick=True, engine="numpy", threads=2)["machine"]["threads"] == 2 and seen == [1, 2]
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert run("copy", quick=True, engine="numpy")["machine"]["threads"] == 3 and seen == [1, 2, 3]


def test_the_command_line_passes_threads(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli, "run", lambda name, **options: calls.append(options) or
                        report(name, True, 0, {}, [row("R", 1.0)]))
    assert cli.main(["experiment", "copy", "--quick", "--engine", "numpy", "--threads", "2"]) == 0
    assert calls[0]["threads"] == 2
    with pytest.raises(SystemExit) as exit_code:
        cli.main(["experiment", "copy", "--threads", "0"])
    assert exit_code.value.code == 2 and "--threads: expected a positive int" in capsys.readouterr().err
