"""The disk cache of Clebsch-Gordan tables: altered, hostile or unwritable files never change a result."""
import importlib
import json
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
    ("too large", b" " * (cache.BYTES_PER_ENTRY * 100 + 2**16 + 1), "bytes"),
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
    def refuse(*args):
        raise OSError("disk full")
    monkeypatch.setattr(cache.os, "replace", refuse)
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
