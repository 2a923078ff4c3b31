"""The disk cache's trust rule (product_interactions.cache): files are read and written only where the root, the
folder and the file are the user's alone and no link; anything else is a miss, never an error."""
from __future__ import annotations

import os

import pytest

from product_interactions import cache

NOBODY = 65534


@pytest.fixture
def root(monkeypatch, tmp_path):
    place = tmp_path / "root"
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(place))
    return place


def test_what_is_written_is_read_back_with_private_folders_whatever_the_umask(root):
    previous = os.umask(0o002)
    try:
        assert cache.write("kind", "a.bin", b"\x00\x01payload")
    finally:
        os.umask(previous)
    assert cache.read("kind", "a.bin", 100) == b"\x00\x01payload"
    assert [p.stat().st_mode & 0o777 for p in (root, root / "kind", root / "kind" / "a.bin")] == [0o700, 0o700, 0o644]
    assert cache.write("kind", "a.bin", b"new") and cache.read("kind", "a.bin", 100) == b"new"
    assert sorted(os.listdir(root / "kind")) == ["a.bin"]                # no temporary file left


def test_a_missing_larger_or_oddly_named_file_is_a_miss(root):
    assert cache.read("kind", "none", 10) is None
    cache.write("kind", "big", b"x" * 11)
    assert cache.read("kind", "big", 10) is None and cache.read("kind", "big", 11) == b"x" * 11
    for name in ("", ".", "..", "a/b", ".write-1-x"):
        assert cache.read("kind", name, 10) is None and not cache.write("kind", name, b"")
    assert not cache.write("a/b", "x", b"") and cache.read("..", "x", 10) is None


@pytest.mark.parametrize("place", ["file", "folder", "root"])
def test_anything_others_may_write_is_a_miss(root, place):
    cache.write("kind", "a", b"data")
    target = {"file": root / "kind" / "a", "folder": root / "kind", "root": root}[place]
    target.chmod(0o666 if place == "file" else 0o777)
    assert cache.read("kind", "a", 100) is None
    assert not cache.write("kind", "a", b"other") or place == "file"     # a writable file is replaced anew
    target.chmod(0o644 if place == "file" else 0o700)


def test_links_are_never_followed(root, tmp_path):
    cache.write("kind", "a", b"data")
    (tmp_path / "outside").write_bytes(b"planted")
    (root / "kind" / "b").symlink_to(tmp_path / "outside")
    assert cache.read("kind", "b", 100) is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / "a").write_bytes(b"planted")
    (root / "linked").symlink_to(elsewhere)
    assert cache.read("linked", "a", 100) is None and not cache.write("linked", "c", b"x")
    assert sorted(os.listdir(elsewhere)) == ["a"]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="another owner needs root")
def test_a_file_or_folder_of_another_user_is_a_miss(root):
    cache.write("kind", "a", b"data")
    os.chown(root / "kind" / "a", NOBODY, NOBODY)
    assert cache.read("kind", "a", 100) is None
    os.chown(root / "kind", NOBODY, NOBODY)
    assert not cache.write("kind", "b", b"x")


def test_prune_keeps_the_most_recently_used(root):
    for n in range(5):
        cache.write("kind", f"lib-{n}", b"x")
        os.utime(root / "kind" / f"lib-{n}", (n, n))
    cache.write("kind", "other", b"y")
    cache.prune("kind", "lib-", 2)
    assert sorted(os.listdir(root / "kind")) == ["lib-3", "lib-4", "other"]


def test_a_switched_off_cache_reads_and_writes_nothing(monkeypatch):
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", "off")
    assert cache.root() is None and not cache.write("kind", "a", b"") and cache.read("kind", "a", 1) is None
