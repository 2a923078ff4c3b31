"""The hostile cases of issue 36, each run once and classified: ``clear`` (refused or reported by name), ``ok`` (the
right answer), ``unclear`` (an error that does not say what was wrong, or an internal one), ``silent`` (a wrong
answer without a word), ``hang`` (past its time limit) or ``security`` (another user's or a device's content
trusted or replaced).  Prints one line per case and the counts per class.

    python benchmarks/audit.py [--only WORD]

Runs in one process (a SIGALRM per case bounds the hangs), in temporary folders; the cases that need another user
or a device node run only as root.  Not part of the test suite: the tests check each case; this counts them.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from typing import Any, Callable

import numpy as np

CLASSES = ("clear", "ok", "unclear", "silent", "hang", "security")
NOBODY = 65534


class Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout


# ---------------------------------------------------------------------- expectations
def error(pattern: str) -> Callable[[Any, BaseException | None, list], str]:
    """The right outcome is an error whose message matches `pattern` (the argument named)."""
    def judge(result: Any, raised: BaseException | None, caught: list) -> str:
        if raised is None:
            return "silent"
        return "clear" if re.search(pattern, f"{type(raised).__name__}: {raised}") else "unclear"
    return judge


def value(check: Callable[[Any], bool], wrong: str = "silent") -> Callable[[Any, BaseException | None, list], str]:
    """The right outcome is a result passing `check`; a failing one is `wrong` (silent, or security)."""
    def judge(result: Any, raised: BaseException | None, caught: list) -> str:
        if raised is not None:
            return "unclear"
        return "ok" if check(result) else wrong
    return judge


def warned(pattern: str) -> Callable[[Any, BaseException | None, list], str]:
    """The right outcome is a warning matching `pattern` (or a clear error)."""
    def judge(result: Any, raised: BaseException | None, caught: list) -> str:
        if raised is not None:
            return "clear" if re.search(pattern, str(raised)) else "unclear"
        return "clear" if any(re.search(pattern, str(w.message)) for w in caught) else "silent"
    return judge


# ---------------------------------------------------------------------- cases
def _so3_negated() -> bool:
    import importlib
    from fractions import Fraction
    from product_interactions.algebra.so3 import cache, clebsch_gordan
    cg = importlib.import_module("product_interactions.algebra.so3._clebsch_gordan")
    cg.path_table.cache_clear()
    fresh = clebsch_gordan(2).entries()
    file = os.path.join(os.environ["PRODUCT_INTERACTIONS_CACHE"], "so3", f"clebsch_gordan-lmax2-v{cache.VERSION}.json")
    payload = json.load(open(file))
    for path, entries in payload["paths"]:
        if path in ([1, 2, 2], [2, 1, 2]):
            for entry in entries:
                negated = [[s, str(-Fraction(c))] for s, c in payload["values"][entry[3]]]
                payload["values"].append(negated)
                entry[3] = len(payload["values"]) - 1
    payload["sha256"] = cache.checksum(payload["values"], payload["paths"])
    json.dump(payload, open(file, "w"))
    cg.path_table.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clebsch_gordan(2).entries() == fresh


def _so3_planted(where: str) -> bool:
    """A table planted (one value changed, checksum recomputed) in a linked so3 folder or one owned by nobody:
    True when the victim neither reads it (no "invalid disk cache" warning) nor writes there, and computes the
    right table."""
    import importlib
    from product_interactions.algebra.so3 import cache, clebsch_gordan
    cg = importlib.import_module("product_interactions.algebra.so3._clebsch_gordan")
    root = os.environ["PRODUCT_INTERACTIONS_CACHE"]
    cg.path_table.cache_clear()
    fresh = clebsch_gordan(1).entries()
    name = f"clebsch_gordan-lmax1-v{cache.VERSION}.json"
    folder = os.path.join(root, "so3")
    payload = json.load(open(os.path.join(folder, name)))
    index = next(e[3] for p, entries in payload["paths"] if p == [1, 1, 0] for e in entries if e[:3] == [0, 0, 0])
    payload["values"][index][0][1] = "1/2"
    payload["sha256"] = cache.checksum(payload["values"], payload["paths"])
    if where == "link":
        elsewhere = tempfile.mkdtemp()
        os.rename(folder, os.path.join(elsewhere, "so3"))
        os.symlink(os.path.join(elsewhere, "so3"), folder)
        folder = os.path.join(elsewhere, "so3")
    planted = os.path.join(folder, name)
    json.dump(payload, open(planted, "w"))
    if where == "nobody":
        os.chown(folder, NOBODY, NOBODY)
    before = open(planted).read()
    cg.path_table.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        right = clebsch_gordan(1).entries() == fresh
    read = any("disk cache" in str(w.message) for w in caught)
    return right and not read and open(planted).read() == before and os.listdir(folder) == [name]


def _cli_out(target: str, quick: bool) -> tuple[int, bool]:
    """`experiment symmetry --out target` with an instant experiment: (exit code, whether target is still what it
    was)."""
    from product_interactions.interactions import __main__ as cli
    from product_interactions.interactions.experiments.report import report, row
    before = os.lstat(target)
    original = cli.run
    cli.run = lambda name, quick, seed, engine, threads: report(name, quick=quick, seed=seed, config={},
                                                                rows=[row("R = 1", 0.5)])
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                code = cli.main(["experiment", "symmetry", "--out", target] + (["--quick"] if quick else []))
            except SystemExit as exit:
                code = exit.code
    finally:
        cli.run = original
    after = os.lstat(target)
    return code, (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)


def _device(place: str) -> str:
    path = os.path.join(place, "full")
    os.mknod(path, 0o666 | 0o020000, os.makedev(1, 7))
    return path


def _fifo(place: str) -> str:
    path = os.path.join(place, "fifo")
    os.mkfifo(path)
    return path


def _noisy_H(tol: float = 1e-9):
    from product_interactions.algebra import Algebra, quaternions
    H = quaternions()
    lam = H.structure_constants().astype(float)
    noise = np.random.default_rng(0).uniform(-1, 1, lam.shape)
    return Algebra.from_structure_constants(lam + noise * 7.3e-10 / np.abs(noise).max(), basis=H.basis,
                                            exact=False, tol=tol)


def _big_H():
    from product_interactions.algebra import Algebra, quaternions
    return Algebra.from_structure_constants(1e200 * quaternions().structure_constants().astype(float),
                                            exact=False, tol=1e-9)


def _causal(engine: str) -> bool:
    from product_interactions.interactions.architectures import convolution
    model = convolution(channels_in=4, channels_out=3, size=3, cyclic=False)
    x = np.random.default_rng(2).standard_normal((2, 12, 4))
    x[0, 6, 1] = np.nan
    if engine == "torch":
        import torch
        out = model.apply({k: torch.tensor(v) for k, v in model.init(seed=1).items()}, torch.tensor(x)).numpy()
    else:
        import jax.numpy as jnp
        out = np.asarray(model.apply({k: jnp.asarray(v) for k, v in model.init(seed=1).items()}, jnp.asarray(x)))
    return bool(np.all(np.isfinite(out[0, :6])))


def _small_outputs_kept() -> bool:
    """auto's product of translation(128) on 1 to 4 rows keeps an output of 1.0 beside one of 1e16 (the FFT lost it)."""
    from product_interactions import kernels
    from product_interactions.algebra import translation
    kernel = kernels.product(translation(128))
    for rows in range(1, 5):
        x, y = np.zeros((rows, 128)), np.zeros((rows, 128))
        x[:, 0], x[:, 1], y[:, 0] = 1e16, 1.0, 1.0
        if not (kernel(x, y)[:, 1] == 1.0).all():
            return False
    return True


def _torch_model(kind: str, dtype: str = "float64", device: str = "cpu"):
    import torch
    from product_interactions.interactions.architectures import attention, mamba, ssm
    model = {"attention": lambda: attention(d_model=4, heads=2), "ssm": lambda: ssm(channels=4, d_state=2),
             "mamba": lambda: mamba(d_model=4, d_state=2)}[kind]()
    params = {k: torch.tensor(v, device=device) for k, v in model.init(seed=0).items()}
    x = torch.ones(1, 5, 4, dtype=getattr(torch, dtype), device=device)
    if dtype in ("float16", "bfloat16"):
        params = {k: v.to(x.dtype) for k, v in params.items()}
    return model.apply(params, x)


def _checkpoint_header() -> Any:
    import zipfile
    from product_interactions.interactions.experiments import checkpoint
    from product_interactions.interactions.experiments.training import Adam
    optimiser = Adam(lambda p, batch: (p["w"] ** 2).sum() * batch, {"w": np.ones(2)}, lr=0.1)
    path = os.path.join(tempfile.mkdtemp(), "c.npz")
    checkpoint.save(path, optimiser, {"lr": 0.1})
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
    members["params_0.npy"] = header.getvalue() + b"\0" * 16
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return checkpoint.load(path, optimiser, {"lr": 0.1})


def _ctrl_c() -> tuple[int, str]:
    out = os.path.join(tempfile.mkdtemp(), "copy.json")
    process = subprocess.Popen([sys.executable, "-m", "product_interactions", "experiment", "copy", "--quick",
                                "--engine", "numpy", "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    time.sleep(6)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    return process.returncode, stderr


#: The memory a case run apart (`isolated`) may take: a blow-up is classed a hang, not left to the OOM killer.
ISOLATED_BYTES = 3 * 2**30


def isolated(call: Callable[[], Any], seconds: float) -> Callable[[], Any]:
    """`call` run in a forked child limited to `ISOLATED_BYTES` of memory and `seconds`: returns the child's
    outcome as ``("value", repr)`` or raises what it raised (as a RuntimeError with its text), or Timeout."""
    def run() -> Any:
        import resource
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:                                                     # the child
            os.close(read)
            resource.setrlimit(resource.RLIMIT_AS, (ISOLATED_BYTES, ISOLATED_BYTES))
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                outcome = ("value", repr(call())[:200])
            except Timeout:
                outcome = ("timeout", "")
            except BaseException as error:
                outcome = ("error", f"{type(error).__name__}: {error}"[:400])
            os.write(write, json.dumps(outcome).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        kind, text = json.loads(data) if data else ("timeout", "")
        if kind == "timeout":
            raise Timeout
        if kind == "error":
            raise RuntimeError(text)
        return text
    return run


def cases(place: str) -> list[tuple[str, str, Callable[[], Any], Callable, float]]:
    """(class of the issue, name, call, judge, seconds allowed)."""
    import sympy
    from product_interactions import kernels
    from product_interactions.algebra import (Algebra, DirectSum, TensorProduct, clebsch_gordan, cyclic_generators,
                                              diagonal, group_algebra, quaternions, symmetric_generators)
    from product_interactions.interactions import Signal
    from product_interactions.kernels import selective_scan
    root = os.getuid() == 0 if hasattr(os, "getuid") else False
    found: list[tuple[str, str, Callable[[], Any], Callable, float]] = []

    def add(kind: str, name: str, call: Callable[[], Any], judge: Callable, seconds: float = 20) -> None:
        found.append((kind, name, call, judge, seconds))

    # security
    add("security", "so3: a whole path negated with its mirror, sha256 recomputed", _so3_negated,
        value(bool, "security"))
    add("security", "so3: a table planted through a linked so3 folder", lambda: _so3_planted("link"),
        value(bool, "security"))
    if root:
        add("security", "so3: a table planted in a so3 folder owned by nobody", lambda: _so3_planted("nobody"),
            value(bool, "security"))
        add("security", "--out onto a character device (a mknod copy of /dev/full)",
            lambda: _cli_out(_device(tempfile.mkdtemp(dir=place)), False),
            lambda r, e, w: "unclear" if e is not None else "clear" if r == (2, True) else "security")
    add("security", "--out onto a FIFO with --quick", lambda: _cli_out(_fifo(tempfile.mkdtemp(dir=place)), True),
        lambda r, e, w: "unclear" if e is not None else "clear" if r == (2, True) else "security", 5)
    # silent wrong answers
    add("silent", "convolution(cyclic=False) on torch, NaN at step 6: earlier outputs finite", lambda: _causal("torch"),
        value(bool))
    add("silent", "convolution(cyclic=False) on jax, NaN at step 6: earlier outputs finite", lambda: _causal("jax"),
        value(bool))
    add("silent", "(1e200 * quaternions).is_associative()", lambda: _big_H().is_associative(), value(bool))
    add("silent", "(1e200 * quaternions).is_alternative()", lambda: _big_H().is_alternative(), value(bool))
    add("silent", "(1e200 * quaternions) derivations", lambda: len(_big_H().derivations()), value(lambda n: n == 3))
    add("silent", "H + noise 7.3e-10, tol 1e-9: exact() == H", lambda: _noisy_H().exact() == quaternions(),
        value(bool))
    add("silent", "H + noise: is_associative()", lambda: _noisy_H().is_associative(), value(bool))
    add("silent", "H + noise: derivations", lambda: len(_noisy_H().derivations()), value(lambda n: n == 3))
    add("silent", "H + noise: unit", lambda: _noisy_H().unit(), value(lambda u: u is not None))
    add("silent", "H + noise: centre dimension", lambda: len(_noisy_H().center()), value(lambda n: n == 1))
    add("silent", "H + noise: x = 1e-10 * 1 == 0 has no inverse", lambda: _noisy_H().element([1e-10, 0, 0, 0]) ** -1,
        error(r"x: .*(no inverse|not invertible)"))
    add("silent", "auto on translation(128), 1-4 rows, entries 1e16 and 1: z_1 exactly 1", _small_outputs_kept,
        value(bool))
    add("silent", "selective_scan, positive A and large steps", lambda: selective_scan(
        np.ones((1, 10, 2)), np.full((1, 10, 2), 100.0), np.array([[1.0], [2.0]]), np.ones((1, 10, 1)),
        np.ones((1, 10, 1))), warned(r"selective_scan: .*A has positive entries"))
    add("silent", "from_structure_constants([[[False]]])", lambda: Algebra.from_structure_constants([[[False]]]),
        error(r"lam\[0, 0, 0\]: .*bool"))
    add("silent", "symbols('x', real='maybe')", lambda: quaternions().symbols("x", real="maybe"),
        error(r"real: expected True or False"))
    add("silent", "symbols('x', foo=True)", lambda: quaternions().symbols("x", foo=True), error(r"foo: expected"))
    # hangs and blow-ups
    add("hang", "group_algebra(cyclic_generators(10**6))", isolated(
        lambda: group_algebra(cyclic_generators(10**6)), 15), error(r"ValueError: generators: .*1,000,000"), 30)
    add("hang", "symmetric_generators(10**9)", isolated(lambda: symmetric_generators(10**9), 15),
        error(r"ValueError: n: "), 30)
    add("hang", "group_algebra(symmetric_generators(6)).radical()", isolated(
        lambda: group_algebra(symmetric_generators(6)).radical(), 20), error(r"radical: .*products"), 40)
    # unclear or internal errors
    import torch
    meta = torch.ones(3, 4, device="meta")
    add("unclear", "a product of meta tensors", lambda: kernels.product(quaternions())(meta, meta),
        error(r"^TypeError: x: expected a dense torch"))
    add("unclear", "attention on meta tensors", lambda: _torch_model("attention", device="meta"),
        error(r"^TypeError: x: expected a dense torch"))
    add("unclear", "ssm on meta tensors", lambda: _torch_model("ssm", device="meta"),
        error(r"^TypeError: x: expected a dense torch"))
    sparse = torch.ones(3, 4, dtype=torch.float64).to_sparse()
    add("unclear", "a product of a sparse COO tensor", lambda: kernels.product(quaternions())(
        sparse, torch.ones(3, 4, dtype=torch.float64)), error(r"^TypeError: x: expected a dense torch"))
    add("unclear", "mamba on an int64 torch input", lambda: _torch_model("mamba", "int64"), error(r"^TypeError: x: "))
    add("unclear", "mamba on a bool torch input", lambda: _torch_model("mamba", "bool"), error(r"^TypeError: x: "))
    add("unclear", "a float64 to_torch() module on float32 input", lambda: __import__(
        "product_interactions.interactions.architectures", fromlist=["x"]).attention(d_model=4, heads=2).to_torch()(
        torch.ones(1, 5, 4)), error(r"^TypeError: x: expected torch.float64"))
    add("unclear", "ssm in float16", lambda: _torch_model("ssm", "float16"), error(r"^TypeError: x: .*float16"))
    add("unclear", "ssm in bfloat16", lambda: _torch_model("ssm", "bfloat16"), error(r"^TypeError: x: .*bfloat16"))
    add("unclear", "DirectSum([1, 2])", lambda: DirectSum([1, 2]), error(r"^TypeError: algebras\[0\]"))
    add("unclear", "TensorProduct(['a'])", lambda: TensorProduct(["a"]), error(r"^TypeError: algebras\[0\]"))
    add("unclear", "structure_constants() of a symbolic algebra", lambda: Algebra.from_structure_constants(
        {(0, 0): {0: sympy.Symbol("a")}}, dim=1).structure_constants(), error(r"lam\[0, 0, 0\] = a"))
    X = Signal("x", diagonal(3))
    add("unclear", "a compiled expression called on strings", lambda: (X * X).compile()(["a", "b", "c"]),
        error(r"^TypeError: inputs\['x'\]"))
    add("unclear", "numeric overflow names an operand the caller passed", lambda: quaternions().numeric().element(
        [1e300, 0, 0, 0]) * quaternions().numeric().element([1e300, 0, 0, 0]), error(r"ValueError: \*: "))
    add("unclear", "a cache path component over 255 characters", lambda: _with_cache(
        os.path.join(place, "x" * 300), lambda: clebsch_gordan(1).nnz), value(lambda n: n > 0))
    add("unclear", "a checkpoint header claiming 2^40 values", _checkpoint_header,
        error(r"^ValueError: checkpoint: .*not a readable checkpoint"))
    add("unclear", "Ctrl-C during experiment: short message, documented code", _ctrl_c,
        lambda r, e, w: "unclear" if e is not None else "clear" if r[0] == 130 and "Traceback" not in r[1]
        else "unclear", 40)
    return found


def _with_cache(path: str, call: Callable[[], Any]) -> Any:
    import importlib
    cg = importlib.import_module("product_interactions.algebra.so3._clebsch_gordan")
    before = os.environ.get("PRODUCT_INTERACTIONS_CACHE")
    os.environ["PRODUCT_INTERACTIONS_CACHE"] = path
    cg.path_table.cache_clear()
    try:
        return call()
    finally:
        os.environ["PRODUCT_INTERACTIONS_CACHE"] = before or "off"
        cg.path_table.cache_clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run only the cases whose name contains this")
    arguments = parser.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as place:
        os.chmod(place, 0o755)
        for kind, name, call, judge, seconds in cases(place):
            if arguments.only and arguments.only not in name:
                continue
            os.environ["PRODUCT_INTERACTIONS_CACHE"] = tempfile.mkdtemp(dir=place)
            result, raised = None, None
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                signal.setitimer(signal.ITIMER_REAL, seconds)
                try:
                    result = call()
                except Timeout:
                    raised = Timeout()
                except BaseException as error:             # MemoryError, KeyboardInterrupt of a case, anything
                    raised = error
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            blown = kind == "hang" and "MemoryError" in f"{type(raised).__name__}: {raised}"   # a blow-up
            verdict = "hang" if isinstance(raised, Timeout) or blown else judge(result, raised, list(caught))
            counts[verdict] += 1
            detail = "" if raised is None or isinstance(raised, Timeout) else \
                f"  [{type(raised).__name__}: {str(raised)[:90]}]"
            print(f"{verdict:<9} {time.perf_counter() - start:5.1f}s  ({kind}) {name}{detail}", flush=True)
    print("counts: " + ", ".join(f"{c} {counts[c]}" for c in CLASSES) + f"; {sum(counts.values())} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
