"""Command line: ``python -m interactions tour``."""
from __future__ import annotations

import argparse
import sys

from . import tour


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m interactions", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("tour", help="define an algebra, print a product formula and check it numerically")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the numeric checks")
    arguments = parser.parse_args(argv)
    if arguments.command == "tour":
        report = tour.run(seed=arguments.seed)
        return 0 if report["max_error"] < 1e-12 else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
