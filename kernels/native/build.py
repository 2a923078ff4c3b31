"""Building and loading the compiled loops' C library, with no window in which anyone else can swap it.

`unavailable` says why the loops cannot run here, or None; the first question compiles the C source
(`kernels.native.csource`) with ``$CC`` (else ``cc``, ``gcc`` or ``clang``) at ``-O3`` for this CPU, into a folder
this process makes for itself (mode 0700), and loads it from there.  The library's bytes are then stored in the
user's cache (`product_interactions.cache`) behind their sha256, and later processes read them back only under the
cache's trust rule (the root, the folder and the file the user's alone, no link, read through the checked
descriptor) and only when the bytes match their sha256 (a damaged library could crash the loader); each process
loads its own private copy of the bytes it checked.  A library reports the key it was built for (a hash of the
source, its sizes, the compiler and its version, the flags and the CPU): one that reports another key is set aside
and compiled afresh.

The compiler has `COMPILE_SECONDS` for every attempt together and `VERSION_SECONDS` to say its version.  No
compiler, a ``$CC`` that cannot be split into words, a compiler that fails or times out, or
``PRODUCT_INTERACTIONS_COMPILE=0`` (or ``off``) make the loops unavailable, with the reason; the strategies that
need them then stand aside.

>>> unavailable() is None or isinstance(unavailable(), str)
True
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ... import cache
from . import csource

Result = TypeVar("Result")

#: Seconds every compilation of one process may take together before the loops are given up for it.
COMPILE_SECONDS = 30
#: Seconds the compiler may take to say its version.
VERSION_SECONDS = 10
#: Libraries kept in the cache (one per source, compiler and CPU); the least recently used go first.
LIBRARIES_KEPT = 8
#: The largest library read back from the cache.
LIBRARY_BYTES = 16 * 2**20
#: Flags tried in turn: tuned for this CPU, then portable (a compiler without -march=native); each with OpenMP, then
#: without (`openmp` calls then run on the library's own threads).
FLAG_SETS = (("-O3", "-march=native", "-pthread", "-fopenmp"), ("-O3", "-pthread", "-fopenmp"),
             ("-O3", "-march=native", "-pthread"), ("-O3", "-pthread"))


def compiler() -> tuple[list[str] | None, str | None]:
    """(the compiler command, None), or (None, why there is none): ``$CC`` split as a shell would (``ccache
    gcc``), else cc, gcc or clang."""
    try:
        chosen = shlex.split(os.environ.get("CC", ""))
    except ValueError as error:
        return None, f"CC={os.environ.get('CC', '')!r:.80} cannot be split into words ({error})"
    if chosen:
        found = shutil.which(chosen[0])
        return ([found, *chosen[1:]], None) if found else (None, f"no C compiler found (CC={chosen[0]!r:.80})")
    found = next(filter(None, map(shutil.which, ("cc", "gcc", "clang"))), None)
    return ([found], None) if found else (None, "no C compiler found (set CC, or install cc, gcc or clang)")


def key(command: list[str], version: bytes, flags: tuple[str, ...]) -> str:
    """The build key: what the library's bytes depend on (source, sizes, compiler and version, flags, CPU)."""
    parts = (csource.text(), csource.defines(), command, version, flags, platform.machine(), csource.cpu(),
             sys.platform)
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:20]


def _compiled(command: list[str], flags: tuple[str, ...], build: str, seconds: float) -> bytes:
    """The library's bytes, compiled in a private folder within `seconds` (OSError or subprocess errors
    otherwise)."""
    with tempfile.TemporaryDirectory(prefix="product-interactions-") as scratch:
        built = os.path.join(scratch, "loops.so")
        subprocess.run([*command, *flags, *csource.defines(), f'-DBUILD_KEY="{build}"', "-I", str(csource.FOLDER),
                        "-fPIC", "-shared", str(csource.FOLDER / "loops.c"), "-o", built], check=True,
                       capture_output=True, timeout=max(seconds, 0.001))
        with open(built, "rb") as handle:
            return handle.read()


def _sealed(data: bytes) -> bytes:
    """A library's bytes as the cache keeps them: their sha256 (hex, one line) first."""
    return hashlib.sha256(data).hexdigest().encode() + b"\n" + data


def _unsealed(entry: bytes | None) -> bytes | None:
    """The library's bytes of a cache entry whose sha256 matches them, else None."""
    if entry is None:
        return None
    digest, _, data = entry.partition(b"\n")
    return data if hashlib.sha256(data).hexdigest().encode() == digest else None


def _loaded(data: bytes, build: str) -> ctypes.CDLL:
    """The library of `data`, loaded from a private copy (removed once loaded: a loaded library stays mapped);
    ValueError where it reports another build key than `build`."""
    scratch = tempfile.mkdtemp(prefix="product-interactions-")
    try:
        path = os.path.join(scratch, f"product-{build}.so")
        with open(path, "xb") as handle:
            handle.write(data)
        library = ctypes.CDLL(path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    reported = getattr(library, "build_key", None)
    if reported is not None:
        reported.restype = ctypes.c_char_p
    if reported is None or reported() != build.encode():
        raise ValueError(f"the library reports build key {reported() if reported else None!r}, not {build!r}")
    _declare(library)
    return library


def _declare(library: ctypes.CDLL) -> None:
    """The argument types of the library's functions (see `kernels.native.csource`)."""
    number, address = ctypes.c_int64, ctypes.c_void_p
    for dtype in csource.BLOCK:
        rows = (csource.BLOCK[dtype], csource.WIDE_BLOCK[dtype])
        signatures = {**{f"product_{dtype.name}_{n}": [number] * 6 + [address, number, number] * 2 + [address] * 7
                         for n in rows},
                      f"scan_{dtype.name}": [number] * 7 + [address] * 2 + [number] * 3 +
                      [address, number, address, number, address, number],
                      f"scan_backward_{dtype.name}": [number] * 7 + [address] * 2 + [number] * 3 +
                      [address, number, address, address, number, address, number],
                      f"low_rank_{dtype.name}": [number] * 8 + [address] * 3 + [number] * 3 +
                      [address, address, number, address, number, address, number],
                      f"low_rank_backward_{dtype.name}": [number] * 8 + [address] * 3 + [number] * 3 +
                      [address, address, number, address, address, address, number, address, number]}
        for name, arguments in signatures.items():
            function = getattr(library, name)
            function.restype, function.argtypes = ctypes.c_int if name.startswith("product") else None, arguments


def _switched_off() -> bool:
    return os.environ.get("PRODUCT_INTERACTIONS_COMPILE", "1").strip().lower() in ("0", "off", "false", "no")


def _once(function: Callable[[], Result]) -> Callable[[], Result]:
    """`function`, called once per process even where threads ask at once (``functools.lru_cache`` lets each of
    them call it: eight threads building their first kernels compiled the library eight times, past the time
    limit).  ``__wrapped__`` is `function`."""
    locks, results = [threading.Lock()], []  # type: ignore[var-annotated]  # of Result

    def fresh_lock() -> None:                       # a child forked while another thread compiles waits on nothing
        locks[0] = threading.Lock()
    os.register_at_fork(after_in_child=fresh_lock)

    @functools.wraps(function)
    def once() -> Result:
        with locks[0]:
            if not results:
                results.append(function())
            return results[0]
    return once


@_once
def load() -> tuple[ctypes.CDLL | None, str | None]:
    """(library, None) or (None, why the loops are unavailable); built or found once per process (see the module
    docstring)."""
    if _switched_off():
        return None, "compiled loops are switched off (PRODUCT_INTERACTIONS_COMPILE=0)"
    command, why = compiler()
    if command is None:
        return None, why
    shown = " ".join(command)
    try:
        version = subprocess.run([*command, "--version"], capture_output=True, timeout=VERSION_SECONDS).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"the C compiler {shown} does not run: {error}"
    deadline, failures = time.monotonic() + COMPILE_SECONDS, []
    for flags in FLAG_SETS:
        build = key(command, version, flags)
        name = f"product-{build}.lib"
        cached = _unsealed(cache.read("kernels", name, LIBRARY_BYTES))
        if cached is not None:
            try:
                return _loaded(cached, build), None
            except (OSError, ValueError):                # damaged, or built for something else: compiled again
                pass
        try:
            data = _compiled(command, flags, build, deadline - time.monotonic())
            library = _loaded(data, build)
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            detail = getattr(error, "stderr", b"") or b""
            failures.append(f"{' '.join(flags)}: {error} {detail.decode(errors='replace')[:300]}".strip())
            if time.monotonic() >= deadline:
                break
            continue
        if cache.write("kernels", name, _sealed(data)):
            cache.prune("kernels", "product-", LIBRARIES_KEPT)
        return library, None
    return None, f"the C compiler {shown} failed: " + "; ".join(failures)


def unavailable() -> str | None:
    """Why compiled loops cannot run here, or None when they can (compiles on the first call)."""
    return load()[1]


@functools.lru_cache(maxsize=None)
def function(name: str) -> Any:
    """The library's function `name` (looked up once: ctypes' lookup costs more than the call); RuntimeError where
    the loops are unavailable."""
    library, why = load()
    if library is None:
        raise RuntimeError(f"compiled loops are unavailable: {why}")
    return getattr(library, name)
