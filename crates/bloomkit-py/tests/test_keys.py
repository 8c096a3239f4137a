"""Keys hash exactly as the Rust library hashes the same key (crates/bloomkit/src/key.rs)."""

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit
from bloomkit import _native


def test_golden_vectors_of_the_rust_feeds():
    # key.rs `golden_vectors`: XXH3-64 of each feed under the default seed, checked there
    # against the reference C implementation. The Rust type of each is in the comment.
    assert bloomkit.hash("") == 0x716B9AA7552390DB  # ""
    assert bloomkit.hash("apple") == 0xEAEAC75C5B914C47  # "apple"
    assert bloomkit.hash(b"apple") == 0xEAEAC75C5B914C47  # &b"apple"[..]
    assert bloomkit.hash(0) == 0x1B41D1E5CD111E5A  # 0u64
    assert bloomkit.hash(42) == 0x5F239F8B6EE37ED4  # 42u64, 42i32
    assert bloomkit.hash(-1) == 0xCEA22914F3EE931A  # -1i32
    assert bloomkit.hash(2**128 - 1) == 0xBCCFD8886A16053F  # u128::MAX
    assert bloomkit.hash((1, "a")) == 0x524ECE58865C2B77  # (1u8, "a")


def test_the_same_bytes_are_one_key_whatever_carries_them():
    h = bloomkit.hash("alice")
    assert bloomkit.hash(b"alice") == h
    assert bloomkit.hash(bytearray(b"alice")) == h
    assert bloomkit.hash(memoryview(b"xalice")[1:]) == h

    class Name(str):
        pass

    assert bloomkit.hash(Name("alice")) == h
    assert bloomkit.hash("é") == bloomkit.hash("é".encode())
    assert bloomkit.hash("alice") != bloomkit.hash("Alice")


def test_integers_are_their_values():
    assert bloomkit.hash(True) == bloomkit.hash(1)
    assert bloomkit.hash(False) == bloomkit.hash(0)
    # Negative and wide values have their own feed: not the unsigned value with the bits.
    assert bloomkit.hash(-1) != bloomkit.hash(2**64 - 1)
    assert bloomkit.hash(-1) != bloomkit.hash(2**128 - 1)
    assert bloomkit.hash(2**64) != bloomkit.hash(0)
    for v in (0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, -(2**127), 2**128 - 1):
        assert bloomkit.hash(v) == bloomkit.hash(int(v)), v


def test_integers_beyond_128_bits_say_how_to_make_bytes():
    for v in (2**128, -(2**127) - 1, 10**50):
        with pytest.raises(OverflowError, match="to_bytes"):
            bloomkit.hash(v)


def test_numpy_integer_scalars_are_their_values():
    np = pytest.importorskip("numpy")
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        assert bloomkit.hash(dtype(7)) == bloomkit.hash(7)
    assert bloomkit.hash(np.int64(-5)) == bloomkit.hash(-5)
    assert bloomkit.hash(np.uint64(2**64 - 1)) == bloomkit.hash(2**64 - 1)
    assert bloomkit.hash(np.bytes_(b"ab")) == bloomkit.hash("ab")
    assert bloomkit.hash(np.str_("ab")) == bloomkit.hash("ab")


def test_tuples_are_delimited_fields_and_nest_as_in_rust():
    assert bloomkit.hash(("ab", "c")) != bloomkit.hash(("a", "bc"))
    assert bloomkit.hash(("a",)) != bloomkit.hash("a")
    assert bloomkit.hash((-1, 2**64 - 1)) != bloomkit.hash((2**64 - 1, -1))
    # A field's bytes are its bytes whatever carries them, as in Rust.
    assert bloomkit.hash((5, "x")) == bloomkit.hash((5, b"x")) == bloomkit.hash((5, bytearray(b"x")))
    # A nested tuple's fields follow on (Rust's `(A, (B, C))` feeds A, B, C).
    assert bloomkit.hash((1, (2, 3))) == bloomkit.hash((1, 2, 3)) == bloomkit.hash(((1, 2), 3))
    assert bloomkit.hash(()) == bloomkit.hash(((),))


def test_tuples_nest_at_most_32_deep():
    key = "leaf"
    for _ in range(32):
        key = (key,)
    bloomkit.hash(key)
    with pytest.raises(ValueError, match="32 tuples deep"):
        bloomkit.hash((key,))
    # Far deeper (an attempt to exhaust the stack) is the same error, not a crash.
    deep = ()
    for _ in range(100_000):
        deep = (deep,)
    with pytest.raises(ValueError):
        bloomkit.hash(deep)


@pytest.mark.parametrize("value", [1.5, None, [1], {"a": 1}, {1}, object(), 1j])
def test_other_values_are_not_keys_and_the_error_says_what_to_do(value):
    with pytest.raises(TypeError, match="Make bytes of it first"):
        bloomkit.hash(value)
    with pytest.raises(TypeError, match=r"field 1 of a tuple key"):
        bloomkit.hash(("ok", value))
    f = bloomkit.BlockedBloomFilter(10, 0.01)
    with pytest.raises(TypeError):
        f.add(value)
    with pytest.raises(TypeError):
        value in f  # noqa: B015
    assert len(f) == 0


def test_a_str_without_utf8_bytes_raises():
    with pytest.raises(UnicodeEncodeError):
        bloomkit.hash("\ud800")
    f = bloomkit.BlockedBloomFilter(10, 0.01)
    with pytest.raises(UnicodeEncodeError):
        f.add("a\udfffb")


def test_seeds_change_every_hash():
    assert bloomkit.hash("alice", seed=bloomkit.DEFAULT_SEED) == bloomkit.hash("alice")
    assert bloomkit.hash("alice", seed=7) != bloomkit.hash("alice")
    assert bloomkit.DEFAULT_SEED == int.from_bytes(b"bloomkit", "little")


def read_copied(f):
    """`f()` with keys read through the interpreter's calls that copy, not in place."""
    before = _native._set_in_place(False)
    try:
        return f()
    finally:
        _native._set_in_place(before)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_strings_read_in_place_and_encoded_hash_alike(text):
    # A compact ASCII str's bytes are read from the object (src/in_place.rs), any other's
    # UTF-8 where CPython keeps it (3.10+), or through an encoded copy (3.9, and with
    # reading in place off). Every way gives the hash of the UTF-8 bytes.
    try:
        expected = bloomkit.hash(text.encode("utf-8"))
    except UnicodeEncodeError:
        return
    assert read_copied(lambda: bloomkit.hash(text)) == expected
    assert read_copied(lambda: bloomkit.hash((text, 1))) == bloomkit.hash((text.encode(), 1))
    assert bloomkit.hash(text) == expected
    assert bloomkit.hash((text, 1)) == bloomkit.hash((text.encode(), 1))


#: Ints around every boundary the in-place read of an int's 30-bit digits meets: one, two
#: and three digits, 63 and 64 bits, and past them (read through the calls instead).
EDGES = sorted(
    n
    for n in {s * (2**b + d) for b in (0, 29, 30, 31, 59, 60, 61, 62, 63, 64, 65, 90, 127) for d in (-1, 0, 1) for s in (1, -1)}
    if -(2**127) <= n < 2**128
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(EDGES), st.integers(min_value=-(2**127), max_value=2**128 - 1)))
def test_ints_read_in_place_and_through_calls_hash_alike(n):
    expected = read_copied(lambda: bloomkit.hash(n))
    assert bloomkit.hash(n) == expected
    # The 0.1 feed hashes an int by its Rust type (i64, u64, i128, u128): the in-place read
    # must choose the same type as the calls.
    f = bloomkit.BlockedBloomFilter(10, 0.01)
    f.add(n)
    assert n in f
    assert read_copied(lambda: n in f)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(st.characters(blacklist_categories=("Cs",))),
            st.binary(),
            st.sampled_from(EDGES),
            st.integers(min_value=-(2**127), max_value=2**128 - 1),
        )
    )
)
def test_batches_read_in_place_and_through_calls_agree(keys):
    f = bloomkit.BloomFilter(100, 0.01)
    f.add_many(keys)
    g = bloomkit.BloomFilter(100, 0.01)
    read_copied(lambda: g.add_many(keys))
    assert f == g
    probe = keys + [f"absent {i}" for i in range(20)] + list(range(1000, 1020))
    assert f.contains_many(probe) == read_copied(lambda: f.contains_many(probe))
    assert f.contains_many(tuple(probe)) == [k in f for k in probe]


def test_answer_lists_hold_one_reference_per_answer():
    # The answers' list is written in place, with the references to True and False added
    # once each: the counts must end where they began once the list is gone.
    f = bloomkit.BlockedBloomFilter(100, 0.01)
    f.add_many(["a", "b"])
    before = (sys.getrefcount(True), sys.getrefcount(False))
    for _ in range(3):
        answers = f.contains_many(["a", "x", "b", "y", "z"] * 100)
        assert answers == [True, False, True, False, False] * 100
        assert all(type(a) is bool for a in answers)
        del answers
        answers = read_copied(lambda: f.contains_many(["a", "x"]))
        del answers
    assert (sys.getrefcount(True), sys.getrefcount(False)) == before
