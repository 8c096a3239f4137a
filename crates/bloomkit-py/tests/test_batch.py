"""The batched calls' fast paths (NumPy arrays, fixed-width buffers, lists) give exactly the
one-key answers, stop cleanly on a bad key, and release the GIL while the filter works."""

import sys
import threading
import time

import pytest

import bloomkit

np = pytest.importorskip("numpy")

INT_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", ">i4", ">u8", "<i8", ">i2"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_numpy_integer_arrays_are_their_values(dtype):
    info = np.iinfo(np.dtype(dtype))
    values = np.array(
        [info.min, info.max, 0, 1, info.max // 3] + list(range(0, min(info.max, 1000), 7)),
        dtype=dtype,
    )
    as_ints = [int(v) for v in values]
    f = bloomkit.BlockedBloomFilter(10_000, 0.01)
    f.add_many(values[::2])
    g = bloomkit.BlockedBloomFilter(10_000, 0.01)
    g.add_many(as_ints[::2])
    assert f == g
    answers = f.contains_many(values)
    assert isinstance(answers, np.ndarray) and answers.dtype == np.bool_
    assert answers.tolist() == [v in f for v in as_ints]
    assert answers[::2].all()
    # A strided view (every third element, backwards) reads the elements it shows.
    view = values[::-3]
    assert f.contains_many(view).tolist() == [int(v) in f for v in view]


def test_numpy_answers_are_a_writable_bool_array_of_the_keys_length():
    f = bloomkit.CuckooFilter(1000, 0.01)
    f.add_many(np.arange(100))
    out = f.contains_many(np.arange(200))
    assert out.shape == (200,) and out[:100].all()
    out[0] = False  # the caller owns it
    assert f.contains_many(np.array([], dtype=np.int64)).shape == (0,)


def test_numpy_arrays_of_other_shapes_and_dtypes():
    f = bloomkit.BlockedBloomFilter(1000, 0.01)
    with pytest.raises(ValueError, match="ravel"):
        f.add_many(np.zeros((2, 2), dtype=np.int64))
    # Arrays of other dtypes are iterated, their elements keys or not as they are.
    f.add_many(np.array(["a", "b"]))
    f.add_many(np.array([b"c", b"d"]))
    assert f.contains_many(["a", "b", "c", "d"]) == [True] * 4
    with pytest.raises(TypeError, match="float"):
        f.add_many(np.array([1.5]))


def test_fixed_width_keys_in_one_buffer():
    keys = [i.to_bytes(8, "little") for i in range(5000)]
    buffer = b"".join(keys)
    f = bloomkit.BlockedBloomFilter(5000, 0.01)
    f.add_many(buffer, key_size=8)
    g = bloomkit.BlockedBloomFilter(5000, 0.01)
    g.add_many(keys)
    assert f == g
    probes = b"".join(i.to_bytes(8, "little") for i in range(4000, 9000))
    expected = [probes[i : i + 8] in f for i in range(0, len(probes), 8)]
    for carrier in (probes, bytearray(probes), memoryview(probes), np.frombuffer(probes, dtype=np.uint8)):
        assert f.contains_many(carrier, key_size=8) == expected
    assert all(f.contains_many(buffer, key_size=8))
    assert f.contains_many(b"", key_size=3) == []
    # Static filters take them too.
    r = bloomkit.RibbonFilter(buffer, 0.01, key_size=8)
    assert all(k in r for k in keys)


def test_fixed_width_errors():
    f = bloomkit.BlockedBloomFilter(100, 0.01)
    with pytest.raises(ValueError, match="whole number of 4-byte keys"):
        f.add_many(b"12345", key_size=4)
    with pytest.raises(ValueError, match="at least 1"):
        f.add_many(b"1234", key_size=0)
    with pytest.raises(TypeError, match="bytes-like"):
        f.add_many(["ab"], key_size=2)
    assert len(f) == 0


def test_one_str_or_bytes_is_not_a_batch():
    f = bloomkit.BlockedBloomFilter(100, 0.01)
    for one in ("alice", b"alice", bytearray(b"alice")):
        with pytest.raises(TypeError, match="one key, not a batch"):
            f.add_many(one)
        with pytest.raises(TypeError, match="one key, not a batch"):
            f.contains_many(one)
    with pytest.raises(TypeError, match="iterable"):
        f.add_many(42)
    assert len(f) == 0


def test_any_iterable_and_every_sequence():
    f = bloomkit.SectorBloomFilter(1000, 0.01)
    f.add_many(f"g{i}" for i in range(100))
    f.add_many(tuple(f"t{i}" for i in range(100)))
    f.add_many({f"s{i}" for i in range(100)})
    f.add_many({f"d{i}": None for i in range(100)})
    for prefix in "gtsd":
        assert f.contains_many(f"{prefix}{i}" for i in range(100)) == [True] * 100


def test_a_bad_key_stops_the_batch_after_the_keys_before_it():
    # Long enough to cross the chunks the batch is hashed in.
    keys = [f"k{i}" for i in range(10_000)]
    for bad_at in (0, 5, 4096, 9999):
        f = bloomkit.BlockedBloomFilter(20_000, 0.01)
        with pytest.raises(TypeError):
            f.add_many(keys[:bad_at] + [1.5] + keys[bad_at:])
        assert all(k in f for k in keys[:bad_at])
        assert len(f) <= bad_at

    def failing():
        yield "a"
        raise RuntimeError("the generator failed")

    f = bloomkit.BlockedBloomFilter(100, 0.01)
    with pytest.raises(RuntimeError, match="generator failed"):
        f.add_many(failing())
    assert "a" in f


def test_a_full_filter_stops_the_batch_and_says_how_far_it_got():
    f = bloomkit.CuckooFilter(100, 0.01)  # no expansion: a fixed size
    keys = list(range(10_000))
    with pytest.raises(bloomkit.FilterFullError, match=r"after adding its first (\d+) keys") as err:
        f.add_many(keys)
    added = int(err.value.args[0].rsplit("first ", 1)[1].split()[0])
    assert added == len(f) >= 100
    assert all(k in f for k in keys[:added])


def test_a_generator_that_changes_the_filter_mid_batch_is_refused():
    f = bloomkit.BlockedBloomFilter(100, 0.01)

    def sneaky():
        yield "a"
        f.add("b")  # the batch holds the filter: this cannot run
        yield "c"

    with pytest.raises(RuntimeError):
        f.add_many(sneaky())


def test_batches_release_the_gil():
    # With a switch interval far longer than the test, a thread holding the GIL keeps it
    # until it releases it itself. A counting thread woken while a batch runs can then only
    # finish before the batch does if the batch lets go of the GIL.
    f = bloomkit.BlockedBloomFilter(2_000_000, 0.01)
    keys = np.arange(2_000_000, dtype=np.int64)
    go = threading.Event()
    ended = {}

    def batch():
        go.set()
        f.add_many(keys)
        f.contains_many(keys)
        ended["batch"] = time.perf_counter()

    def count():
        go.wait()
        n = 0
        while n < 200_000:
            n += 1
        ended["count"] = time.perf_counter()

    before = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        threads = [threading.Thread(target=count), threading.Thread(target=batch)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)
    assert ended["count"] < ended["batch"]
    assert all(f.contains_many(keys[:1000]))


def test_a_list_that_a_key_empties_mid_batch_ends_there():
    # A key whose __index__ runs Python code that empties the list leaves the batch reading
    # a list that has ended, never an item that is gone.
    class Emptier:
        def __init__(self, keys):
            self.keys = keys

        def __index__(self):
            self.keys.clear()
            return 5

    for make in (list, tuple):
        keys = [f"a{i}" for i in range(5000)]
        keys.append(Emptier(keys))
        keys.extend(f"b{i}" for i in range(5000))
        f = bloomkit.BlockedBloomFilter(20_000, 0.01)
        batch = make(keys) if make is tuple else keys
        f.add_many(batch)
        assert all(f"a{i}" in f for i in range(5000)) and 5 in f
        if make is tuple:  # a tuple cannot be emptied: every key is added
            assert all(f"b{i}" in f for i in range(5000))
        else:
            assert keys == []


def test_other_threads_meet_a_filter_a_batch_is_writing_with_an_error_not_a_crash():
    f = bloomkit.BlockedBloomFilter(1_000_000, 0.01)
    keys = np.arange(1_000_000, dtype=np.int64)
    done = threading.Event()
    outcomes = set()

    def reader():
        while not done.is_set():
            try:
                outcomes.add(type(5 in f))
            except RuntimeError:
                outcomes.add(RuntimeError)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(5):
            f.add_many(keys)
    finally:
        done.set()
        t.join()
    assert outcomes <= {bool, RuntimeError} and outcomes
    assert 5 in f
