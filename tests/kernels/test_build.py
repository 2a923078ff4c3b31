"""Building and loading the compiled loops (kernels.native.build): reported, not raised, when a compiler is missing,
broken, slow or switched off; compiled once into the user's cache and found there; and never a library anyone else
could have written or swapped, whatever they plant, link or race (the attacker is the user ``nobody``, where the
tests run as root).  The C source compiles without a warning under -Wall -Wextra -Werror."""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import time

import pytest

from product_interactions.kernels.native import build, csource

pytestmark = pytest.mark.skipif(build.unavailable() is not None, reason=f"{build.unavailable()}")
NOBODY = 65534


@pytest.fixture
def cache_root(monkeypatch, tmp_path):
    root = tmp_path / "cache"
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(root))
    return root


def _compiles(monkeypatch) -> list:
    """The compilations `build.load` starts from now on, recorded."""
    started, compiled = [], build._compiled
    monkeypatch.setattr(build, "_compiled", lambda *arguments: started.append(arguments) or compiled(*arguments))
    return started


def _expected_keys() -> list[str]:
    command, _ = build.compiler()
    version = subprocess.run([*command, "--version"], capture_output=True).stdout
    return [build.key(command, version, flags) for flags in build.FLAG_SETS]


def _reported_key(library: ctypes.CDLL) -> str:
    return library.build_key().decode()


def test_the_source_compiles_without_a_warning(tmp_path):
    command, _ = build.compiler()
    result = subprocess.run([*command, "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-fPIC", "-shared",
                             *csource.defines(), '-DBUILD_KEY="test"', "-I", str(csource.FOLDER),
                             str(csource.FOLDER / "loops.c"), "-o", str(tmp_path / "loops.so")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_missing_broken_or_switched_off_compiler_is_reported_not_raised(monkeypatch, tmp_path, cache_root):
    load = build.load.__wrapped__
    monkeypatch.setenv("PRODUCT_INTERACTIONS_COMPILE", "0")
    assert load() == (None, "compiled loops are switched off (PRODUCT_INTERACTIONS_COMPILE=0)")
    monkeypatch.setenv("PRODUCT_INTERACTIONS_COMPILE", "off")
    assert load()[0] is None
    monkeypatch.delenv("PRODUCT_INTERACTIONS_COMPILE")
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    library, why = load()
    assert library is None and why.startswith("no C compiler found")
    monkeypatch.setenv("CC", 'gcc "unterminated')
    library, why = load()
    assert library is None and "cannot be split into words" in why
    fake = tmp_path / "fake-cc"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    library, why = load()
    assert library is None and why.startswith(f"the C compiler {fake} failed") and "broken" in why
    monkeypatch.setenv("CC", "env cc")                                  # a command with arguments serves
    assert load()[1] is None


def test_a_compiler_that_hangs_is_given_up_within_the_time_allowed(monkeypatch, tmp_path, cache_root):
    slow = tmp_path / "slow-cc"
    slow.write_text(f'#!/bin/sh\n[ "$1" = --version ] && exit 0\nexec sleep 30\n')
    slow.chmod(0o755)
    monkeypatch.setenv("CC", str(slow))
    monkeypatch.setattr(build, "COMPILE_SECONDS", 1)
    started = time.monotonic()
    library, why = build.load.__wrapped__()
    assert library is None and "timed out" in why and time.monotonic() - started < 10


def test_the_library_is_compiled_once_into_the_cache_and_then_found(monkeypatch, cache_root):
    started = _compiles(monkeypatch)
    library, why = build.load.__wrapped__()
    (stored,) = (cache_root / "kernels").iterdir()
    assert why is None and len(started) == 1 and stored.name == f"product-{_reported_key(library)}.lib"
    assert _reported_key(library) == _expected_keys()[0]
    assert (cache_root.stat().st_mode & 0o777, (cache_root / "kernels").stat().st_mode & 0o777,
            stored.stat().st_mode & 0o777) == (0o700, 0o700, 0o644)
    stamp = stored.stat().st_mtime_ns
    os.utime(stored, ns=(stamp - 10**9, stamp - 10**9))
    library, why = build.load.__wrapped__()
    assert why is None and len(started) == 1 and _reported_key(library) == stored.name[8:-4]
    assert stored.stat().st_mtime_ns >= stamp                             # found, and marked as used


@pytest.mark.parametrize("setting", ["off", "a-file/cache"])
def test_a_cache_that_is_off_or_cannot_be_made_compiles_privately(monkeypatch, tmp_path, setting):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", setting if setting == "off" else str(tmp_path / setting))
    library, why = build.load.__wrapped__()
    assert why is None and library is not None
    assert list(tmp_path.iterdir()) == [tmp_path / "a-file"]


def test_a_library_loads_from_a_private_copy_never_from_the_cache(monkeypatch, cache_root):
    """No window between a check and the load: what is loaded is a file this process made in a folder of its own."""
    loaded, real = [], ctypes.CDLL
    monkeypatch.setattr(ctypes, "CDLL", lambda path, *rest: loaded.append(path) or real(path, *rest))
    build.load.__wrapped__()
    build.load.__wrapped__()                                             # the second from the cache's bytes
    assert len(loaded) == 2 and not any(path.startswith(str(cache_root)) for path in loaded)
    assert all(os.path.basename(os.path.dirname(path)).startswith("product-interactions-") for path in loaded)


def test_a_damaged_or_foreign_cache_entry_is_set_aside_and_compiled_again(monkeypatch, cache_root):
    """A truncated library would crash the loader (a bus error here): the bytes are checked against their sha256
    before anything loads them; a library of another build reports another key."""
    library, _ = build.load.__wrapped__()
    (stored,) = (cache_root / "kernels").iterdir()
    whole = stored.read_bytes()
    truncated = whole[:5000]
    digest, _, data = whole.partition(b"\n")
    foreign = data.replace(_reported_key(library).encode(), b"0" * 20)       # another build's key, sealed right
    resealed = hashlib.sha256(foreign).hexdigest().encode() + b"\n" + foreign
    for damage in (b"not a library", truncated, resealed):
        stored.write_bytes(damage)
        started = _compiles(monkeypatch)
        library, why = build.load.__wrapped__()
        assert why is None and len(started) == 1 and _reported_key(library) == stored.name[8:-4]


def test_an_entry_others_could_write_is_never_read(monkeypatch, cache_root):
    build.load.__wrapped__()
    (stored,) = (cache_root / "kernels").iterdir()
    for place, mode in ((stored, 0o666), (cache_root / "kernels", 0o777), (cache_root, 0o770)):
        original = place.stat().st_mode & 0o777
        place.chmod(mode)
        started = _compiles(monkeypatch)
        library, why = build.load.__wrapped__()
        assert why is None and len(started) == 1                         # compiled afresh, not loaded
        place.chmod(original)


def test_a_linked_cache_folder_is_never_followed(monkeypatch, tmp_path, cache_root):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache_root.mkdir(mode=0o700)
    (cache_root / "kernels").symlink_to(elsewhere)
    started = _compiles(monkeypatch)
    library, why = build.load.__wrapped__()
    assert why is None and len(started) == 1 and list(elsewhere.iterdir()) == []     # nothing written through it


EVIL = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) { FILE *f = fopen(MARK, "w"); if (f) fclose(f); }
const char *build_key(void) { return KEY; }
"""


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="acting as another user needs root")
@pytest.mark.parametrize("shared", ["root", "kernels"])
def test_a_library_planted_by_another_user_never_runs(monkeypatch, tmp_path, cache_root, shared):
    """A shared cache root (as PRODUCT_INTERACTIONS_CACHE=/tmp/pi) or kernels folder that nobody can write: nobody
    plants libraries under every name the victim looks for, whose constructor would leave a mark; none runs."""
    mark = tmp_path / "mark"
    cache_root.mkdir(mode=0o700)
    kernels = cache_root / "kernels"
    kernels.mkdir(mode=0o700)
    (cache_root if shared == "root" else kernels).chmod(0o777)
    tmp_path.chmod(0o755)
    command, _ = build.compiler()
    for key in _expected_keys():
        source = tmp_path / "evil.c"
        source.write_text(EVIL)
        planted = kernels / f"product-{key}.lib"
        subprocess.run([*command, "-shared", "-fPIC", f'-DMARK="{mark}"', f'-DKEY="{key}"', str(source), "-o",
                        str(tmp_path / "evil.so")], check=True)
        data = (tmp_path / "evil.so").read_bytes()                        # sealed as the victim would
        planted.write_bytes(hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
        os.chown(planted, NOBODY, NOBODY)
        planted.chmod(0o755)
    library, why = build.load.__wrapped__()
    assert why is None and library is not None and not mark.exists()
    assert _reported_key(library) == _expected_keys()[0]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="acting as another user needs root")
def test_a_racing_user_cannot_get_a_library_loaded_from_a_shared_cache(monkeypatch):
    """A shared cache root (mode 0777, as a /tmp/pi all users set): nobody polls it and replaces every library that
    appears there with one whose constructor leaves a mark (the race that won 15 of 16 tries against the former
    compile-then-load).  The victim neither loads nor writes there, and its own library runs."""
    import tempfile
    shared = tempfile.mkdtemp(prefix="shared-cache-")
    try:
        os.chmod(shared, 0o755)
        mark, evil, root = (os.path.join(shared, name) for name in ("mark", "evil.so", "root"))
        os.mkdir(root)
        os.chmod(root, 0o777)
        monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", root)
        command, _ = build.compiler()
        with open(os.path.join(shared, "evil.c"), "w") as source:
            source.write(EVIL)
        subprocess.run([*command, "-shared", "-fPIC", f'-DMARK="{mark}"', '-DKEY="evil"',
                        os.path.join(shared, "evil.c"), "-o", evil], check=True)
        os.chmod(evil, 0o755)
        racer = subprocess.Popen([sys.executable, "-c", f"""
import os, shutil, time
os.setgid({NOBODY}); os.setuid({NOBODY})
end = time.monotonic() + 20
while time.monotonic() < end:
    for folder, _, files in os.walk({root!r}):
        for name in files:
            try:
                shutil.copyfile({evil!r}, os.path.join(folder, name + ".swap"))
                os.replace(os.path.join(folder, name + ".swap"), os.path.join(folder, name))
            except OSError:
                pass
"""])
        try:
            for _ in range(2):
                library, why = build.load.__wrapped__()
                assert why is None and _reported_key(library) == _expected_keys()[0]
        finally:
            racer.kill()
            racer.wait()
        assert not os.path.exists(mark) and os.listdir(root) == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)
