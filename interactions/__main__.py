"""Command line: ``python -m interactions tour`` and ``python -m interactions derive NAME [--latex]``."""
from __future__ import annotations

import argparse
import sys

from . import tour
from .derive import SMALL, derive


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m interactions", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("tour", help="define an algebra, print a product formula and check it numerically")
    derivation = commands.add_parser("derive", help="an architecture's formula and self-interaction order")
    derivation.add_argument("name", choices=sorted(SMALL))
    derivation.add_argument("--latex", action="store_true", help="print the components in LaTeX")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the numeric checks")
    arguments = parser.parse_args(argv)
    if arguments.command == "tour":
        report = tour.run(seed=arguments.seed)
        return 0 if report["max_error"] < 1e-12 else 1
    print("\n".join(derive(arguments.name, arguments.latex)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
