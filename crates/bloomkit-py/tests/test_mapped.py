"""`bloomkit.open`: a blocked or classic filter queried in place in a memory-mapped file."""

import gc

import pytest

import bloomkit

from conftest import make

KEYS = [f"key:{i}" for i in range(3000)]
PROBES = [f"other:{i}" for i in range(3000)] + KEYS[:100] + [7, (1, "x")]


@pytest.mark.parametrize("kind", ["blocked", "classic"])
def test_a_mapped_filter_answers_as_the_loaded_one(tmp_path, kind):
    f = make(kind, KEYS)
    f.add_many([7, (1, "x")])
    path = tmp_path / "f.bkf"
    f.save(path)
    with bloomkit.open(path) as m:
        assert isinstance(m, bloomkit.MappedFilter)
        assert m.kind == kind and not m.closed
        assert len(m) == len(f)
        assert (m.num_bits, m.num_hashes, m.seed) == (f.num_bits, f.num_hashes, f.seed)
        assert m.file_bytes == path.stat().st_size and m.path == str(path)
        assert m.estimated_fp_rate == pytest.approx(f.estimated_fp_rate)
        assert all(k in m for k in KEYS)
        assert [k in m for k in PROBES] == [k in f for k in PROBES]
        assert m.contains_many(PROBES) == [k in f for k in PROBES]
        assert m.to_filter() == f
        assert kind in repr(m)
    assert m.closed


def test_numpy_and_fixed_width_batches_in_place(tmp_path):
    np = pytest.importorskip("numpy")
    f = bloomkit.BlockedBloomFilter(10_000, 0.01)
    f.add_many(np.arange(10_000))
    path = tmp_path / "f.bkf"
    f.save(path)
    with bloomkit.open(path) as m:
        out = m.contains_many(np.arange(20_000))
        assert out.dtype == np.bool_ and out[:10_000].all()
        assert out.tolist() == f.contains_many(np.arange(20_000)).tolist()
        data = b"".join(i.to_bytes(4, "little") for i in range(100))
        assert m.contains_many(data, key_size=4) == f.contains_many(data, key_size=4)


def test_queries_after_close_raise(tmp_path):
    path = tmp_path / "f.bkf"
    make("blocked", KEYS).save(path)
    m = bloomkit.open(path)
    m.close()
    m.close()  # again: nothing
    for query in (lambda: "a" in m, lambda: len(m), lambda: m.contains_many(["a"]), lambda: m.num_bits, m.to_filter):
        with pytest.raises(ValueError, match="is closed"):
            query()
    assert "closed" in repr(m)


def test_the_file_can_be_replaced_while_mapped(tmp_path):
    path = tmp_path / "f.bkf"
    make("blocked", ["old"]).save(path)
    with bloomkit.open(path) as m:
        make("blocked", ["new"]).save(path)  # an atomic rename: the mapping keeps the old file
        assert "old" in m
        assert "new" in bloomkit.load(path)


def test_dropping_an_open_mapping_unmaps_it(tmp_path):
    path = tmp_path / "f.bkf"
    make("classic", KEYS).save(path)
    for _ in range(200):
        m = bloomkit.open(path)
        assert "key:1" in m
        del m
    gc.collect()


def test_verify_false_skips_the_checksum_only(tmp_path):
    path = tmp_path / "f.bkf"
    f = make("blocked", KEYS)
    data = bytearray(f.to_bytes())
    data[-1] ^= 0xFF  # the checksum
    path.write_bytes(bytes(data))
    with pytest.raises(bloomkit.InvalidFilterError, match="checksum mismatch") as err:
        bloomkit.open(path)
    assert err.value.offset == len(data) - 8 and err.value.path == str(path)
    with bloomkit.open(path, verify=False) as m:
        assert all(k in m for k in KEYS)
    # A damaged header is refused either way.
    data[14] = 1
    path.write_bytes(bytes(data))
    with pytest.raises(bloomkit.InvalidFilterError, match="reserved header flags") as err:
        bloomkit.open(path, verify=False)
    assert err.value.offset == 14


@pytest.mark.parametrize(
    "damage, offset, message",
    [
        (lambda d: b"", 0, "not a bloomkit filter"),
        (lambda d: b"\x89BKF", 4, "truncated"),
        (lambda d: d[:100], 100, "truncated"),
        (lambda d: d[:-1], None, "truncated"),
        (lambda d: d + b"!", None, "1 unexpected bytes follow the filter"),
        (lambda d: d[:8] + b"\x07" + d[9:], 8, "format version 7"),
        (lambda d: d[:12] + b"\x05" + d[13:], 12, "unknown hash algorithm 5"),
        (lambda d: d[:10] + b"\x63" + d[11:], 10, "unknown filter kind 99"),
    ],
)
def test_a_damaged_file_names_the_offset(tmp_path, damage, offset, message):
    good = make("blocked", KEYS).to_bytes()
    data = damage(good)
    path = tmp_path / "bad.bkf"
    path.write_bytes(data)
    with pytest.raises(bloomkit.InvalidFilterError, match=message) as err:
        bloomkit.open(path)
    expected = offset if offset is not None else min(len(data), len(good))
    assert err.value.offset == expected
    assert str(err.value).startswith(f"file '{path}', offset {expected}: ")
    # The owned reader names the same place.
    with pytest.raises(bloomkit.InvalidFilterError) as owned:
        bloomkit.load(path)
    assert owned.value.offset == expected


@pytest.mark.parametrize("kind", ["sector", "counting", "scalable", "cuckoo", "aging", "ribbon", "fuse"])
def test_other_kinds_are_pointed_to_load(tmp_path, kind):
    path = tmp_path / "f.bkf"
    make(kind, KEYS[:100]).save(path)
    with pytest.raises(ValueError, match=f"holds an? {kind} filter.*bloomkit.load"):
        bloomkit.open(path)
