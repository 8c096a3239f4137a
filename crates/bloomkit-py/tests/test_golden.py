"""The library's golden files (crates/bloomkit/tests/data), written by Rust with keys of several
Rust types, load here and answer every key exactly as their `.answers` record."""

import pytest

import bloomkit

from conftest import CLASSES, DATA, answers, typed_key

FILES = sorted(p.stem for p in DATA.glob("*.bkf"))


def comparable(name, descriptor):
    """Whether Python has a key hashing as the answer's Rust-typed key does.

    Files of the current feed (`*-keys-v1`, and every file with text keys) hash every key by
    its bytes or value, as Python does. The `*-std-v1` files were written by bloomkit 0.1
    through Rust's `Hash`, which feeds an `i32` as 4 bytes and a `[u8]` with its length:
    Python has no such types, so of those only the text and wide (`u128`) keys compare.
    """
    if "-std-" not in name:
        return True
    kind = descriptor.partition(":")[0]
    return kind in ("text", "u128") or ":" not in descriptor or kind == "golden"


def test_there_are_golden_files_of_every_kind():
    kinds = {name.split("-")[0].rstrip("0123456789") for name in FILES}
    assert kinds == set(CLASSES), kinds
    assert len(FILES) >= 24


@pytest.mark.parametrize("name", FILES)
def test_every_golden_file_loads_and_answers_every_key(name):
    path = DATA / f"{name}.bkf"
    f = bloomkit.load(path)
    assert name.startswith(f.kind)
    assert isinstance(f, CLASSES[f.kind])
    # Its own class reads it too, and it writes back byte for byte.
    assert CLASSES[f.kind].load(str(path)) == f
    assert f.to_bytes() == path.read_bytes()
    assert bloomkit.from_bytes(path.read_bytes()) == f
    checked = 0
    for descriptor, maybe, count in answers(name):
        if not comparable(name, descriptor):
            continue
        key = typed_key(descriptor)
        assert (key in f) == maybe, f"{name}: {descriptor}"
        if count is not None:
            assert f.count(key) == count, f"{name}: {descriptor}"
        checked += 1
    assert checked >= 1000
    # Batched, the same answers.
    keys = [typed_key(d) for d, _, _ in answers(name) if comparable(name, d)]
    assert f.contains_many(keys) == [k in f for k in keys]


@pytest.mark.parametrize("name", [n for n in FILES if n.split("-")[0] in ("blocked", "classic")])
def test_golden_blocked_and_classic_files_answer_in_place(name):
    with bloomkit.open(DATA / f"{name}.bkf") as m:
        loaded = bloomkit.load(DATA / f"{name}.bkf")
        assert m.kind == loaded.kind and len(m) == len(loaded)
        for descriptor, maybe, _ in answers(name):
            if comparable(name, descriptor):
                assert (typed_key(descriptor) in m) == maybe, f"{name}: {descriptor}"


def test_tuple_keys_are_refused_by_filters_of_the_0_1_feed():
    # bloomkit 0.1 hashed a tuple field by its Rust type (a u32 as 4 bytes), which a Python
    # tuple does not carry: a filter from such a file says so rather than answer wrongly.
    f = bloomkit.load(DATA / "blocked-std-v1.bkf")
    with pytest.raises(TypeError, match="bloomkit 0.1"):
        (2, "golden") in f  # noqa: B015
    # Byte strings and ints are still keys (key 5 of the recipe is the text "golden:5").
    assert "golden:5" in f
