"""The disk cache of Clebsch-Gordan tables: altered, hostile or unwritable files never change a result."""
import importlib
import json
import os
import re
import threading
import time
import warnings
from fractions import Fraction

import pytest

from product_interactions.algebra.so3 import cache, clebsch_gordan
from product_interactions.algebra.so3.surds import Surd

cg_module = importlib.import_module("product_interactions.algebra.so3._clebsch_gordan")


@pytest.fixture
def folder(monkeypatch, tmp_path):
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(tmp_path))
    cg_module.path_table.cache_clear()
    yield tmp_path / "so3"
    cg_module.path_table.cache_clear()


def _file(folder):
    return folder / f"clebsch_gordan-lmax1-v{cache.VERSION}.json"


def _resign(payload):
    payload["sha256"] = cache.checksum(payload["values"], payload["paths"])
    return payload


def _value_index(payload, key):
    path, entry = key
    return next(e[3] for p, entries in payload["paths"] if p == list(path) for e in entries if e[:3] == list(entry))


def _third(payload):       # (1, 1, 0): (0, 0, 0) is sqrt(3) * 1/3
    return payload["values"][_value_index(payload, ((1, 1, 0), (0, 0, 0)))]


def tamper_third(payload):
    _third(payload)[0][1] = "1/2"


def flip_sign(payload):
    _third(payload)[0][1] = "-1/3"


def zero_entry(payload):
    for path, entries in payload["paths"]:
        if path == [1, 1, 0]:
            del entries[0]


def bad_m(payload):
    payload["paths"][-1][1][0][2] = 5


def bad_path(payload):
    payload["paths"][0][0] = [0, 0, 1]


TAMPERINGS = [tamper_third, flip_sign, zero_entry, bad_m, bad_path]


@pytest.mark.parametrize("resign", [False, True], ids=["checksum kept", "checksum recomputed"])
@pytest.mark.parametrize("tamper", TAMPERINGS)
def test_altered_cache_is_detected_recomputed_and_rewritten(folder, tamper, resign):
    fresh = clebsch_gordan(1)
    fresh_entries = fresh.entries()
    payload = json.loads(_file(folder).read_text())
    tamper(payload)
    _file(folder).write_text(json.dumps(_resign(payload) if resign else payload))
    cg_module.path_table.cache_clear()
    with pytest.warns(RuntimeWarning, match="invalid disk cache"):
        again = clebsch_gordan(1)
    assert again.entries() == fresh_entries
    assert cache.load_table("clebsch_gordan", 1, max_entries=100, largest_prime=4) is not None   # rewritten
    cg_module.path_table.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)                   # the rewritten file is trusted again
        assert clebsch_gordan(1).entries() == fresh_entries


def _valid_payload():
    table = {(1, 1, 0): (((0, 0, 0), Surd.from_json([[3, "1/3"]])),)}
    values, paths = [[[3, "1/3"]]], [[[1, 1, 0], [[0, 0, 0, 0]]]]
    assert cache.checksum(values, paths)
    return {"format": cache.FORMAT, "version": cache.VERSION, "lmax": 1, "values": values, "paths": paths}, table


def _with(**changes):
    payload, _ = _valid_payload()
    payload.update(changes)
    return json.dumps(_resign(payload)).encode()


# hostile files for the loader: (id, bytes, a word the ValueError must contain)
HOSTILE = [
    ("not json", b"__import__('os')", "not valid JSON"),
    ("invalid utf-8", b'{"format": "' + bytes([0xFF, 0xFE]) + b'"}', "not UTF-8"),
    ("deep nesting", b"[" * 30_000 + b"]" * 30_000, "nested too deeply"),
    ("5000 digits", b'{"lmax": ' + b"9" * 5000 + b"}", "not valid JSON"),
    ("a list", b"[]", "expected a JSON object"),
    ("wrong format", _with(format="other"), "format"),
    ("lmax as bool", _with(lmax=True), "lmax"),
    ("no checksum", json.dumps(_valid_payload()[0]).encode(), "sha256"),
    ("1/0", _with(values=[[[3, "1/0"]]]), "zero denominator"),
    ("1e100000000", _with(values=[[[3, "1e100000000"]]]), "surd coefficient"),
    ("huge s", _with(values=[[[2305843009213693951, "1"]]]), "not a product of distinct primes"),
    ("square s", _with(values=[[[4, "1"]]]), "not a product of distinct primes"),
    ("zero coefficient", _with(values=[[[3, "0"]]]), "nonzero"),
    ("unordered s", _with(values=[[[3, "1"], [2, "1"]]]), "increasing"),
    ("unicode digits", _with(values=[[[3, "\u0661"]]]), "surd coefficient"),
    ("value index", _with(paths=[[[1, 1, 0], [[0, 0, 0, 7]]]]), "value index"),
    ("float m", _with(paths=[[[1, 1, 0], [[0.0, 0, 0, 0]]]]), "paths[0][1][0]"),
    ("short path", _with(paths=[[[1, 1], [[0, 0, 0, 0]]]]), "paths[0][0]"),
    ("duplicate path", _with(paths=[[[1, 1, 0], [[0, 0, 0, 0]]]] * 2), "appears twice"),
    ("too many entries", _with(paths=[[[1, 1, 0], [[0, 0, 0, 0]] * 200]]), "more than 100 entries"),
]


@pytest.mark.parametrize("data, word", [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_hostile_cache_files_are_refused_quickly_naming_the_field(folder, data, word):
    folder.mkdir(parents=True)
    _file(folder).write_bytes(data)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=re.escape(word)) as error:
        cache.load_table("clebsch_gordan", 1, max_entries=100, largest_prime=4)
    assert time.perf_counter() - start < 2
    assert str(error.value).startswith(_file(folder).name)
    with pytest.warns(RuntimeWarning, match="invalid disk cache"):
        assert clebsch_gordan(1).nnz > 0


def test_valid_file_reads_back(folder):
    payload, table = _valid_payload()
    folder.mkdir(parents=True)
    _file(folder).write_text(json.dumps(_resign(payload)))
    assert cache.load_table("clebsch_gordan", 1, max_entries=100, largest_prime=4) == table


def test_failed_write_leaves_no_temporary_file(folder, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", refuse)
    cache.store_table("clebsch_gordan", 1, cg_module.path_table(1))
    assert folder.is_dir() and not list(folder.iterdir())


def test_concurrent_writers_leave_one_valid_file(folder):
    table = cg_module.path_table(1)
    threads = [threading.Thread(target=cache.store_table, args=("clebsch_gordan", 1, table)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [f.name for f in folder.iterdir()] == [_file(folder).name]
    assert cache.load_table("clebsch_gordan", 1, max_entries=100, largest_prime=4) == table


@pytest.mark.parametrize("build", [clebsch_gordan, cg_module.clebsch_gordan_tensor])
def test_large_lmax_is_refused_before_any_work(build):
    start = time.perf_counter()
    for lmax in (14, 40, 10**18):
        with pytest.raises(ValueError, match="lmax: .* more than algebra.limits.MAX_ENTRIES"):
            build(lmax)
    assert time.perf_counter() - start < 1


def test_a_consistent_edit_with_a_new_checksum_is_caught_by_equivariance(folder):
    """Negating the m = 0 column of the paths (1, 2, 2) and (2, 1, 2) keeps the swap symmetry, orthonormality and
    the selection rule, and past l1 + l2 = 2 no path is recomputed exactly; equivariance catches it."""
    fresh_entries = clebsch_gordan(2).entries()
    file = folder / f"clebsch_gordan-lmax2-v{cache.VERSION}.json"
    payload = json.loads(file.read_text())
    for path, entries in payload["paths"]:
        if path in ([1, 2, 2], [2, 1, 2]):
            for entry in entries:
                if entry[2] == 0:
                    value = payload["values"][entry[3]]
                    negated = [[radicand, str(-Fraction(rational))] for radicand, rational in value]
                    payload["values"].append(negated)
                    entry[3] = len(payload["values"]) - 1
    file.write_text(json.dumps(_resign(payload)))
    cg_module.path_table.cache_clear()
    with pytest.warns(RuntimeWarning, match="not equivariant"):
        again = clebsch_gordan(2)
    assert again.entries() == fresh_entries


def test_a_file_larger_than_its_table_can_take_is_a_miss_not_read(folder):
    folder.mkdir(mode=0o700, parents=True)
    _file(folder).write_bytes(b" " * (cache.BYTES_PER_ENTRY * 100 + 2**16 + 1))
    assert cache.load_table("clebsch_gordan", 1, max_entries=100, largest_prime=4) is None


def _negate_paths(payload, negated):
    for path, entries in payload["paths"]:
        if path in negated:
            for entry in entries:
                value = payload["values"][entry[3]]
                payload["values"].append([[radicand, str(-Fraction(rational))] for radicand, rational in value])
                entry[3] = len(payload["values"]) - 1
    return payload


@pytest.mark.parametrize("lmax, negated", [(2, ([1, 2, 2], [2, 1, 2])), (2, ([2, 2, 2],)), (3, ([3, 3, 1],)),
                                           (3, ([1, 3, 3], [3, 1, 3]))])
def test_a_whole_path_negated_with_its_mirror_and_a_new_checksum_is_caught(folder, lmax, negated):
    """Issue 36, item 3: a whole path (l1 + l2 >= 3) and its mirror negated keep every identity (still an
    orthonormal equivariant path) and the re-hashed file its checksum; the exact entries catch the sign."""
    fresh_entries = clebsch_gordan(lmax).entries()
    file = folder / f"clebsch_gordan-lmax{lmax}-v{cache.VERSION}.json"
    file.write_text(json.dumps(_resign(_negate_paths(json.loads(file.read_text()), negated))))
    cg_module.path_table.cache_clear()
    with pytest.warns(RuntimeWarning, match="the exact coefficient is"):
        again = clebsch_gordan(lmax)
    assert again.entries() == fresh_entries


def _planted(folder):
    """A valid table whose one entry is marked (1/3 -> 1/2, checksum recomputed): loaded only if trusted."""
    clebsch_gordan(1)
    payload = json.loads(_file(folder).read_text())
    tamper_third(payload)
    return json.dumps(_resign(payload))


def test_a_linked_so3_folder_is_never_read_or_written(folder, tmp_path):
    data = _planted(folder)
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    (elsewhere / _file(folder).name).write_text(data)
    folder.symlink_to(elsewhere)
    assert cache.load_table("clebsch_gordan", 1, max_entries=100, largest_prime=4) is None
    cg_module.path_table.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)                   # a miss: not read, so not invalid
        assert clebsch_gordan(1).nnz > 0
    assert os.listdir(elsewhere) == [_file(folder).name] and (elsewhere / _file(folder).name).read_text() == data


NOBODY = 65534
as_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="another owner needs root")


@as_root
@pytest.mark.parametrize("owned", ["folder", "file", "root"])
def test_a_table_in_a_folder_or_file_of_another_user_is_never_read(folder, owned):
    """nobody owns the so3 folder, the file, or a shared cache root (mode 0777, a /tmp/pi all users set) and plants
    a table there: it is not read, and the victim writes nothing into nobody's folder."""
    data = _planted(folder)
    _file(folder).write_text(data)
    target = {"folder": folder, "file": _file(folder), "root": folder.parent}[owned]
    os.chown(target, NOBODY, NOBODY)
    if owned == "root":
        folder.parent.chmod(0o777)
    assert cache.load_table("clebsch_gordan", 1, max_entries=100, largest_prime=4) is None
    cg_module.path_table.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fresh = clebsch_gordan(1)
    assert fresh.nnz > 0 and "1/2" not in str(fresh.entries())
    if owned != "file":                                       # the file in the user's own folder is replaced
        assert _file(folder).read_text() == data


def _unsearchable(monkeypatch, locked):
    """Calls that reach into `locked` fail as in a folder the user cannot search (root ignores modes: simulated)."""
    import errno
    for name in ("open", "stat", "mkdir", "lstat"):
        original = getattr(os, name)

        def refuse(path, *args, _original=original, **kwargs):
            if str(path).startswith(str(locked) + os.sep):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return _original(path, *args, **kwargs)
        monkeypatch.setattr(os, name, refuse)
        if original in os.supports_dir_fd:                    # the cache walks with dir_fd where it can
            monkeypatch.setattr(os, "supports_dir_fd", os.supports_dir_fd | {refuse})


def test_an_unsearchable_cache_folder_or_a_too_long_name_skips_the_disk_cache(monkeypatch, tmp_path):
    """The README's promise: a cache that cannot be used is skipped, never an error (issue 36: PermissionError and
    "File name too long" escaped from clebsch_gordan)."""
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(tmp_path / ("x" * 300)))
    cg_module.path_table.cache_clear()
    assert clebsch_gordan(1).nnz > 0
    locked = tmp_path / "locked"
    (locked / "cache").mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(locked / "cache"))
    cg_module.path_table.cache_clear()
    if os.getuid() == 0:
        _unsearchable(monkeypatch, locked)
    else:
        locked.chmod(0)
    try:
        assert clebsch_gordan(2).nnz > 0
    finally:
        monkeypatch.undo()
        locked.chmod(0o700)
        cg_module.path_table.cache_clear()
