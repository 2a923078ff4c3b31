"""The command line, ``product-interactions`` (or ``python -m product_interactions``): ``tour``, ``derive NAME``
and ``experiment NAME``; ``product-interactions COMMAND --help`` shows each one's options and examples.

Exit codes: 0 success; 1 the tour's checks failed, or the results could not be written; 2 a usage error (a bad
argument, named in the message, or a missing extra, with the command that installs it); 130 interrupted (Ctrl-C),
with a one-line message and no file half-written.  Each command's help lists the codes it can return.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..extras import MissingExtra
from . import tour
from .derive import MAX_SIZE, SMALL, derive
from .experiments import EXPERIMENTS, check_device, engine_for, resumable_options, run, table, write
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


DESCRIPTION = """Product Interactions: define algebras, derive architectures as products in them, compile and
train them.  Each command's --help shows its options and examples."""

USAGE = "a usage error: a bad argument, named in the message, or a missing extra, with its install command"
INTERRUPTED = 130
STOPPED = "interrupted (Ctrl-C): stopped, no file half-written"

#: The exit codes each command can return, and what they mean; None: the whole program's.
EXIT_CODES: dict[str | None, dict[int, str]] = {
    None: {0: "success", 1: "the tour's checks failed, or the experiment's results could not be written", 2: USAGE,
           INTERRUPTED: STOPPED},
    "tour": {0: "success", 1: "the tour's checks failed", 2: USAGE, INTERRUPTED: STOPPED},
    "derive": {0: "success", 2: USAGE, INTERRUPTED: STOPPED},
    "experiment": {0: "success", 1: "the results could not be written", 2: USAGE, INTERRUPTED: STOPPED},
}


def exit_codes(command: str | None = None) -> str:
    """The help's list of the exit codes `command` can return (None: the whole program's).

    >>> print(exit_codes("derive"))
    exit codes:
      0  success
      2  a usage error: a bad argument, named in the message, or a missing extra, with its install command
      130  interrupted (Ctrl-C): stopped, no file half-written
    """
    return "\n".join(["exit codes:", *(f"  {code}  {meaning}" for code, meaning in EXIT_CODES[command].items())])


EXAMPLES = {
    "tour": """examples:
  product-interactions tour
  product-interactions tour --seed 3""",
    "derive": f"""examples:
  product-interactions derive gating
  product-interactions derive attention --size 3 --simplify
  product-interactions derive tfn --latex

--size is the sequence length, the number of points or the signal length (1 to {MAX_SIZE}).""",
    "experiment": """examples:
  product-interactions experiment symmetry --quick
  product-interactions experiment copy --quick --threads 1 --out copy-quick.json
  product-interactions experiment copy --engine torch --out copy.json
  product-interactions experiment copy --steps 50000 --checkpoint runs/   (resumes a stopped run)
  product-interactions experiment dynamical --setting patches --out dynamical-patches.json
  product-interactions experiment symmetry --setting ablations --engine torch --threads 1

--quick is the setting the tests run (seconds); without it, at most 15 minutes on 2 CPU cores.  A --quick run
does not replace a full run's result file.""",
}


def size(text: str) -> int:
    """A formula size on the command line: an int from 1 to `MAX_SIZE`."""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"expected an int from 1 to {MAX_SIZE}, got {text!r}")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on `argv` (default: sys.argv); returns the exit code (`EXIT_CODES`).  Ctrl-C anywhere
    prints one line and returns 130: results are written atomically, so none is left half-written."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(f"product-interactions: {STOPPED}", file=sys.stderr)
        return INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="product-interactions", description=DESCRIPTION, epilog=exit_codes(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=summary, description=summary,
                                   epilog=f"{EXAMPLES[name]}\n\n{exit_codes(name)}",
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    touring = command("tour", "define an algebra, derive attention and convolution, compile, check, and run the "
                              "quick copy experiment")
    touring.add_argument("--seed", type=seed, default=0, help="random seed")
    derivation = command("derive", "an architecture's formula and self-interaction order, at a small size")
    derivation.add_argument("name", choices=sorted(SMALL))
    derivation.add_argument("--latex", action="store_true", help="print the components in LaTeX")
    derivation.add_argument("--size", type=size, help="the length, points or signal size (default: the "
                                                      "architecture's smallest telling one)")
    derivation.add_argument("--simplify", action="store_true",
                            help="put each component over one denominator and merge powers")
    experiment = command("experiment", "run an experiment and print (and save) its figures")
    experiment.add_argument("name", choices=sorted(EXPERIMENTS))
    experiment.add_argument("--quick", action="store_true", help="the small setting the tests run")
    experiment.add_argument("--seed", type=seed, default=0, help="random seed")
    experiment.add_argument("--engine", choices=PREFERENCE,
                            help="the array library to train on (default: the fastest installed, torch first)")
    experiment.add_argument("--device", metavar="D",
                            help="where to train: cuda, cuda:1, JAX's gpu (default: the engine's own default)")
    experiment.add_argument("--threads", type=count, metavar="N",
                            help="threads for torch, numpy's BLAS and the compiled loop (default: OMP_NUM_THREADS "
                                 "or the like if set, else 1 with --quick, else the libraries' own)")
    experiment.add_argument("--steps", type=count, help="training steps, replacing the setting's (copy and dynamical)")
    experiment.add_argument("--setting", metavar="NAME",
                            help="a setting by name, replacing the default one (dynamical: pixels, patches; "
                                 "symmetry: paper, ablations)")
    experiment.add_argument("--checkpoint", metavar="DIR",
                            help="save each training run in this directory and resume those it holds (copy, "
                                 "dynamical)")
    experiment.add_argument("--out", help="write the result as JSON to this path (a new path or a regular file, "
                                          "replaced atomically)")
    arguments = parser.parse_args(argv)
    if arguments.command == "tour":
        return 0 if tour.run(seed=arguments.seed)["passed"] else 1
    if arguments.command == "derive":
        try:
            lines = derive(arguments.name, arguments.latex, arguments.size, arguments.simplify)
        except ValueError as error:
            derivation.error(f"--{error}")
        print("\n".join(lines))
        return 0
    try:
        chosen = engine_for(arguments.name, arguments.engine)
        check_device(chosen, arguments.device)
        engine = chosen.name
        if arguments.out is not None:
            check_out(arguments.out, arguments.quick)
        options = resumable_options(arguments.name, arguments.steps, arguments.checkpoint, arguments.setting)
    except (ValueError, MissingExtra) as error:
        experiment.error(f"--{error}")
    try:
        result = run(arguments.name, quick=arguments.quick, seed=arguments.seed, engine=engine,
                     threads=arguments.threads, device=arguments.device, **options)
    except MissingExtra as error:                                # data of an extra that is not installed
        experiment.error(str(error))
    except ValueError as error:
        if not str(error).startswith(("checkpoint:", "setting:")):   # another run's checkpoint, a quick setting
            raise
        experiment.error(f"--{error}")
    print(table(result))
    if arguments.out is not None:
        try:
            write(result, arguments.out)
        except (OSError, ValueError) as error:                # ValueError: --out became unfit during the run
            print(f"could not write {arguments.out}: {error}", file=sys.stderr)
            return 1
        print(f"written to {arguments.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
