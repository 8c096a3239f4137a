"""Bytes, files and pickles: every kind round-trips; anything that is not a valid filter is an
`InvalidFilterError` naming the file and the offset, never a crash."""

import copy
import os
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit

from conftest import CLASSES, make

KEYS = [f"key:{i}" for i in range(500)] + list(range(-50, 50)) + [(1, "a"), b"\x00\xff"]


@pytest.fixture(params=sorted(CLASSES))
def filled(request):
    return make(request.param, KEYS)


def test_every_kind_round_trips_through_bytes_files_and_pickles(filled, tmp_path):
    kind_class = type(filled)
    path = tmp_path / "f.bkf"
    filled.save(path)
    assert path.read_bytes() == filled.to_bytes()
    for g in (
        kind_class.from_bytes(filled.to_bytes()),
        bloomkit.from_bytes(memoryview(filled.to_bytes())),
        kind_class.load(path),
        bloomkit.load(str(path)),
        *(pickle.loads(pickle.dumps(filled, protocol)) for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1)),
        copy.copy(filled),
        copy.deepcopy(filled),
    ):
        assert type(g) is kind_class and g == filled
        assert all(k in g for k in KEYS)
        assert len(g) == len(filled) and g.seed == filled.seed
    # No temporary file is left beside the saved one.
    assert os.listdir(tmp_path) == ["f.bkf"]


def test_the_target_rate_survives_a_pickle_but_not_the_format():
    f = bloomkit.CuckooFilter(100, 0.02)
    assert f.fp_rate == 0.02
    assert pickle.loads(pickle.dumps(f)).fp_rate == 0.02
    assert f.copy().fp_rate == 0.02
    # The file format stores a cuckoo filter's shape, not a target.
    assert bloomkit.from_bytes(f.to_bytes()).fp_rate is None
    # A scalable filter stores its target; a static one its exact rate.
    assert bloomkit.from_bytes(bloomkit.ScalableBloomFilter(100, 0.02).to_bytes()).fp_rate == 0.02
    assert bloomkit.from_bytes(bloomkit.RibbonFilter([1, 2], 0.01).to_bytes()).fp_rate == 2**-7


def test_saving_replaces_the_file_atomically(tmp_path):
    path = tmp_path / "f.bkf"
    a = make("blocked", ["a"])
    b = make("blocked", ["b"])
    a.save(path)
    b.save(str(path))
    assert bloomkit.load(path) == b
    assert os.listdir(tmp_path) == ["f.bkf"]


def test_file_errors_are_os_errors_naming_the_path(tmp_path):
    missing = tmp_path / "missing.bkf"
    with pytest.raises(FileNotFoundError) as err:
        bloomkit.load(missing)
    assert err.value.filename == str(missing) and "missing.bkf" in str(err.value)
    with pytest.raises(FileNotFoundError):
        bloomkit.open(missing)
    with pytest.raises(FileNotFoundError):
        make("blocked", ["a"]).save(tmp_path / "no" / "such" / "dir.bkf")
    with pytest.raises(OSError):
        bloomkit.load(tmp_path)  # a directory
    with pytest.raises(OSError):
        make("blocked", ["a"]).save(tmp_path)  # a directory in the way
    assert os.listdir(tmp_path) == []


def corrupt(data, at, value):
    changed = bytearray(data)
    changed[at] = value
    return bytes(changed)


def expect_invalid(data, offset, message, path=None, tmp_path=None):
    """`data` fails to read, as bytes and as a file, naming `offset` and `message`."""
    with pytest.raises(bloomkit.InvalidFilterError, match=message) as err:
        bloomkit.from_bytes(data)
    assert err.value.offset == offset and err.value.path is None
    assert f"the bytes, offset {offset}: " in str(err.value)
    assert isinstance(err.value, ValueError) and isinstance(err.value, bloomkit.BloomkitError)
    if tmp_path is not None:
        file = tmp_path / "bad.bkf"
        file.write_bytes(data)
        with pytest.raises(bloomkit.InvalidFilterError, match=message) as err:
            bloomkit.load(file)
        assert err.value.offset == offset and err.value.path == str(file)
        assert str(err.value).startswith(f"file '{file}', offset {offset}: ")


def test_corrupt_data_names_the_offset(tmp_path):
    good = make("blocked", KEYS).to_bytes()
    n = len(good)
    expect_invalid(b"", 0, "not a bloomkit filter", tmp_path=tmp_path)
    expect_invalid(b"PK\x03\x04 a zip", 0, "not a bloomkit filter", tmp_path=tmp_path)
    expect_invalid(corrupt(good, 8, 9), 8, "format version 9 is not supported", tmp_path=tmp_path)
    expect_invalid(corrupt(good, 10, 77), 10, "unknown filter kind 77", tmp_path=tmp_path)
    expect_invalid(corrupt(good, 12, 9), 12, "unknown hash algorithm 9", tmp_path=tmp_path)
    expect_invalid(corrupt(good, 14, 1), 14, "reserved header flags", tmp_path=tmp_path)
    # The payload's length field, after the parameters (their length at offset 32), disagrees
    # with them: found reading that field.
    at = 36 + int.from_bytes(good[32:36], "little")
    expect_invalid(corrupt(good, at, good[at] ^ 0x40), at, "declares a payload", tmp_path=tmp_path)
    # A flipped payload byte: the checksum, at the end, says so.
    expect_invalid(corrupt(good, 100, good[100] ^ 1), n - 8, "checksum mismatch", tmp_path=tmp_path)
    for cut in (4, 30, 60, n - 9, n - 1):
        expect_invalid(good[:cut], cut, "truncated", tmp_path=tmp_path)
    expect_invalid(good + b"extra", n, "5 unexpected bytes follow the filter", tmp_path=tmp_path)


def test_a_filter_of_another_kind_names_both_classes(tmp_path):
    data = make("cuckoo", ["a"]).to_bytes()
    with pytest.raises(bloomkit.InvalidFilterError, match="holds a cuckoo filter, not a blocked filter") as err:
        bloomkit.BlockedBloomFilter.from_bytes(data)
    assert err.value.offset == 10
    assert "bloomkit.CuckooFilter.from_bytes" in str(err.value)
    path = tmp_path / "c.bkf"
    path.write_bytes(data)
    with pytest.raises(bloomkit.InvalidFilterError, match="bloomkit.CuckooFilter.load") as err:
        bloomkit.AgingBloomFilter.load(path)
    assert err.value.path == str(path)
    assert isinstance(bloomkit.load(path), bloomkit.CuckooFilter)


def test_every_single_byte_change_is_caught(filled):
    data = filled.to_bytes()
    for at in range(len(data)):
        for value in {data[at] ^ 1, data[at] ^ 0x80}:
            with pytest.raises(bloomkit.InvalidFilterError) as err:
                bloomkit.from_bytes(corrupt(data, at, value))
            assert 0 <= err.value.offset <= len(data)


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_random_bytes_never_crash(data):
    with pytest.raises(bloomkit.InvalidFilterError):
        bloomkit.from_bytes(data)


@settings(max_examples=300)
@given(st.data())
def test_damaged_headers_never_crash(data):
    good = make("scalable", KEYS[:50]).to_bytes()
    damaged = bytearray(good)
    # Overwrite a run of header bytes (lengths, counts, parameters) with anything.
    start = data.draw(st.integers(0, 60))
    damaged[start : start + 8] = data.draw(st.binary(min_size=8, max_size=8))
    cut = data.draw(st.integers(0, len(damaged)))
    try:
        bloomkit.from_bytes(bytes(damaged[:cut]))
    except (bloomkit.InvalidFilterError, MemoryError):
        pass


def test_from_bytes_takes_bytes_like_only():
    with pytest.raises(TypeError, match="bytes, bytearray or memoryview"):
        bloomkit.from_bytes("a string")
    with pytest.raises(TypeError):
        bloomkit.from_bytes(12)


def test_unpickling_damaged_bytes_is_an_invalid_filter_error():
    data = pickle.dumps(make("blocked", ["a"]))
    f = pickle.loads(data)
    assert "a" in f
    raw = f.to_bytes()
    damaged = data.replace(raw[-8:], bytes(8))
    with pytest.raises(bloomkit.InvalidFilterError, match="checksum"):
        pickle.loads(damaged)
