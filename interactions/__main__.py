"""Command line: ``product-interactions tour`` (or ``python -m product_interactions tour``), ``derive NAME [--latex]`` and
``experiment NAME [--quick] [--seed S] [--engine numpy|torch|jax] [--steps N] [--checkpoint DIR]
[--out results.json]``."""
from __future__ import annotations

import argparse
import sys

from . import tour
from .derive import SMALL, derive
from .experiments import EXPERIMENTS, resumable_options, run, table, write
from .experiments.report import check_out
from .experiments.training import PREFERENCE


def seed(text: str) -> int:
    """A seed on the command line: a non-negative int."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a non-negative int, got {text!r}")
    return int(text)


def count(text: str) -> int:
    """A number of steps on the command line: a positive int."""
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {text!r}")
    return int(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="product-interactions", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    touring = commands.add_parser("tour", help="define an algebra, derive attention and convolution, compile, "
                                               "check, and run the quick copy experiment")
    touring.add_argument("--seed", type=seed, default=0, help="random seed")
    derivation = commands.add_parser("derive", help="an architecture's formula and self-interaction order")
    derivation.add_argument("name", choices=sorted(SMALL))
    derivation.add_argument("--latex", action="store_true", help="print the components in LaTeX")
    experiment = commands.add_parser("experiment", help="run an experiment and print (and save) its figures")
    experiment.add_argument("name", choices=sorted(EXPERIMENTS))
    experiment.add_argument("--quick", action="store_true", help="the small setting the tests run")
    experiment.add_argument("--seed", type=seed, default=0, help="random seed")
    experiment.add_argument("--engine", choices=PREFERENCE,
                            help="the array library to train on (default: the fastest installed, torch first)")
    experiment.add_argument("--steps", type=count, help="training steps, replacing the setting's (copy only)")
    experiment.add_argument("--checkpoint", metavar="DIR",
                            help="save each training run in this directory and resume those it holds (copy only)")
    experiment.add_argument("--out", help="write the result as JSON to this path")
    arguments = parser.parse_args(argv)
    if arguments.command == "tour":
        return 0 if tour.run(seed=arguments.seed)["passed"] else 1
    if arguments.command == "derive":
        print("\n".join(derive(arguments.name, arguments.latex)))
        return 0
    if arguments.out is not None:
        try:
            check_out(arguments.out)
        except ValueError as error:
            experiment.error(f"--{error}")
    try:
        options = resumable_options(arguments.name, arguments.steps, arguments.checkpoint)
    except ValueError as error:
        experiment.error(f"--{error}")
    try:
        result = run(arguments.name, quick=arguments.quick, seed=arguments.seed, engine=arguments.engine, **options)
    except ValueError as error:
        if not str(error).startswith("checkpoint:"):             # a checkpoint of another run: the user's to fix
            raise
        experiment.error(f"--{error}")
    print(table(result))
    if arguments.out is not None:
        try:
            write(result, arguments.out)
        except OSError as error:
            print(f"could not write {arguments.out}: {error}", file=sys.stderr)
            return 1
        print(f"written to {arguments.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
