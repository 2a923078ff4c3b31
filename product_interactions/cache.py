"""Where the project caches files on disk, and how it reads and writes them so that no one else can slip one in.

**Where.**  One folder per kind (``so3`` tables, compiled ``kernels``) under a root: ``$PRODUCT_INTERACTIONS_CACHE``
when that environment variable is set (the value ``off``, or an empty value, switches the disk cache off), else
``$XDG_CACHE_HOME/product-interactions``, else ``~/.cache/product-interactions`` (None, no disk cache, where the
home folder is unknown).

**Trust.**  A file is read only when the root, every folder below it on the way and the file itself belong to this
user, are writable by no one else and are no symbolic link.  `read` walks the path with ``os.open(..., O_NOFOLLOW)``,
each step relative to the folder it has just checked, and reads the file through the descriptor it checked: no
component can be swapped between the check and the read.  `write` makes missing folders for this user alone (mode
0700) under the same checks and replaces the file atomically within the checked folder.  Anything else (another
owner, a group- or world-writable component, a link, a folder that cannot be made, a system without ``O_NOFOLLOW``
and ``dir_fd``) is a miss: `read` returns None and `write` False, and the caller computes afresh.

>>> import os, tempfile
>>> before = os.environ.get("PRODUCT_INTERACTIONS_CACHE")
>>> with tempfile.TemporaryDirectory() as place:
...     os.environ["PRODUCT_INTERACTIONS_CACHE"] = place
...     written = write("demo", "a.txt", b"hello")
...     os.chmod(os.path.join(place, "demo", "a.txt"), 0o666)        # anyone may write it now: not trusted
...     written, read("demo", "a.txt", 100)
(True, None)
>>> os.environ["PRODUCT_INTERACTIONS_CACHE"] = "off"
>>> folder("so3") is None
True
>>> _ = os.environ.pop("PRODUCT_INTERACTIONS_CACHE") if before is None else os.environ.update(
...     PRODUCT_INTERACTIONS_CACHE=before)
"""
from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def root() -> Path | None:
    """The cache root, or None when the disk cache is switched off.  Folders are not created here."""
    configured = os.environ.get("PRODUCT_INTERACTIONS_CACHE")
    if configured is not None:
        return None if configured.strip().lower() in ("", "off") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:                      # no HOME and no password entry (some containers)
            return None
    return Path(base) / "product-interactions"


def folder(kind: str) -> Path | None:
    """The cache folder for files of `kind`, or None when the disk cache is switched off."""
    base = root()
    return None if base is None else base / kind


def _supported() -> bool:
    return hasattr(os, "O_NOFOLLOW") and hasattr(os, "getuid") and os.open in os.supports_dir_fd


def _own(status: os.stat_result) -> bool:
    """True for a file or folder of this user that no one else may write."""
    return status.st_uid == os.getuid() and not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@contextmanager
def _checked_folder(kind: str, make: bool) -> Iterator[int | None]:
    """A descriptor of the folder of `kind`, every step from the root checked (`_own`, no link), made where missing
    with `make`; None where the cache is off, unsupported or not trusted."""
    base = root()
    if base is None or not _supported() or os.sep in kind or kind in ("", ".", ".."):
        yield None
        return
    descriptor = None
    try:
        if make:
            os.makedirs(base, mode=0o700, exist_ok=True)
        descriptor = os.open(base, _FOLDER)
        if not _own(os.fstat(descriptor)):
            raise PermissionError(f"{base} is not this user's alone")
        if make:
            try:
                os.mkdir(kind, mode=0o700, dir_fd=descriptor)
            except FileExistsError:
                pass
        inner = os.open(kind, _FOLDER, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = inner
        if not _own(os.fstat(descriptor)):
            raise PermissionError(f"{base / kind} is not this user's alone")
    except OSError:
        if descriptor is not None:
            os.close(descriptor)
        yield None
        return
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _valid(name: str) -> bool:
    return bool(name) and os.sep not in name and name not in (".", "..") and not name.startswith(".write-")


def read(kind: str, name: str, limit: int) -> bytes | None:
    """The bytes of the file `name` of `kind`, at most `limit` of them, read as the module docstring says; None for
    a missing, larger or untrusted file, or a switched-off cache.  A file read is marked used (its modification
    time), for `prune`."""
    if not _valid(name):
        return None
    with _checked_folder(kind, make=False) as place:
        if place is None:
            return None
        try:
            descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=place)
        except OSError:
            return None
        try:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode) or not _own(status) or status.st_size > limit:
                return None
            with os.fdopen(os.dup(descriptor), "rb") as handle:
                data = handle.read(limit + 1)
            try:
                os.utime(descriptor)
            except OSError:                       # a read-only cache serves as it is
                pass
            return data if len(data) <= limit else None
        finally:
            os.close(descriptor)


def write(kind: str, name: str, data: bytes) -> bool:
    """Store `data` as the file `name` of `kind` (readable by all, writable by this user), replacing any file of
    that name at once for other readers; False where the cache is off, untrusted or cannot be written."""
    if not _valid(name):
        return False
    with _checked_folder(kind, make=True) as place:
        if place is None:
            return False
        temporary = f".write-{secrets.token_hex(8)}-{name}"      # one per call: threads share the pid
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                                 dir_fd=place)
        except OSError:
            return False                                     # never remove a file this call did not make
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            os.chmod(temporary, 0o644, dir_fd=place)          # whatever the umask: no one else may write it
            os.replace(temporary, name, src_dir_fd=place, dst_dir_fd=place)
        except OSError:
            try:
                os.remove(temporary, dir_fd=place)
            except OSError:
                pass
            return False
    return True


def prune(kind: str, prefix: str, keep: int) -> None:
    """Remove all but the `keep` most recently used files of `kind` whose names start with `prefix`."""
    with _checked_folder(kind, make=False) as place:
        if place is None:
            return
        try:
            found = []
            for entry in os.listdir(place):
                if entry.startswith(prefix):
                    status = os.stat(entry, dir_fd=place, follow_symlinks=False)
                    found.append((status.st_mtime_ns, entry))
            for _, entry in sorted(found, reverse=True)[keep:]:
                os.remove(entry, dir_fd=place)
        except OSError:
            pass
