"""The classes: what each kind has, its constructor's options and errors, and the set-like
behaviour of each (`len`, `==`, `copy`, `clear`, merging, removing, rotating, growing)."""

import pytest

import bloomkit

from conftest import CLASSES, GROWABLE, make

ADDING = {"add", "update", "add_many", "clear"}
# Which kinds have which group of methods: the Rust library's abilities (AnyFilter's insert,
# union and intersect, the kinds' own remove, num_bits and num_hashes).
HAS = {
    "classic": ADDING | {"__or__", "__ior__", "__and__", "__iand__", "num_bits", "num_hashes"},
    "blocked": ADDING | {"__or__", "__ior__", "__and__", "__iand__", "num_bits", "num_hashes"},
    "sector": ADDING | {"__or__", "__ior__", "__and__", "__iand__", "num_bits", "num_hashes"},
    "counting": ADDING | {"__or__", "__ior__", "remove", "discard", "num_hashes", "num_counters"},
    "scalable": ADDING | {"num_bits", "capacity", "num_layers", "expansion", "layout"},
    "cuckoo": ADDING
    | {"remove", "discard", "count", "capacity", "expansion", "fingerprint_bits", "bucket_size"}
    | {"num_buckets", "num_filters", "load_factor"},
    "aging": ADDING | {"rotate", "num_generations", "num_bits", "num_hashes"},
    "ribbon": {"num_bits", "result_bits", "bits_per_key"},
    "fuse": {"num_bits", "fingerprint_bits", "bits_per_key"},
}
OPTIONAL = set().union(*HAS.values())
COMMON = {
    "__contains__", "contains_many", "__len__", "kind", "seed", "memory_bytes", "fp_rate",
    "estimated_fp_rate", "predicted_fp_rate", "to_bytes", "from_bytes", "save", "load", "copy",
    "__eq__", "__reduce__",
}


def defines(cls, name):
    """Whether the class (or a base) defines `name`: not `type`'s own `__or__`, which every
    class has for `int | str` annotations."""
    return any(name in vars(base) for base in cls.__mro__)


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_each_kind_has_its_methods_and_no_others(kind):
    cls = CLASSES[kind]
    assert issubclass(cls, bloomkit.Filter)
    assert cls.__module__ == "bloomkit"
    assert cls.__doc__ and len(cls.__doc__) > 80
    for name in COMMON | HAS[kind]:
        assert defines(cls, name), f"{kind} lacks {name}"
        assert getattr(cls, name).__doc__ or name.startswith("__"), f"{kind}.{name} has no docs"
    for name in OPTIONAL - HAS[kind]:
        assert not defines(cls, name), f"{kind} has {name}"


def test_the_base_class_is_not_made_directly():
    with pytest.raises(TypeError):
        bloomkit.Filter()
    assert isinstance(make("blocked", ["a"]), bloomkit.Filter)


def test_filters_are_unhashable_and_compare_by_contents():
    a, b = make("blocked", ["x"]), make("blocked", ["x"])
    assert a == b and not (a != b)
    assert a != make("blocked", ["y"]) and a != make("classic", ["x"])
    assert a != "x" and a != 1
    with pytest.raises(TypeError):
        hash(a)


@pytest.mark.parametrize("kind", sorted(GROWABLE))
def test_copy_is_independent_and_clear_empties(kind):
    f = make(kind, ["a", "b"], capacity=100)
    g = f.copy()
    g.add("c")
    assert "c" in g and g != f
    f.clear()
    assert len(f) == 0 and "a" not in f
    assert f.memory_bytes > 0 and len(g) >= 3


def test_len_is_the_rust_count_of_each_kind():
    for kind in ("classic", "blocked", "sector", "scalable", "aging"):
        f = make(kind, ["a", "a", "b"], capacity=100)
        assert len(f) == 2, kind  # a key already present is not counted again
    for kind in ("counting", "cuckoo"):
        f = make(kind, ["a", "a", "b"], capacity=100)
        assert len(f) == 3, kind  # every copy
        assert f.discard("a") and len(f) == 2
    assert len(bloomkit.RibbonFilter(["a", "a", "b"], 0.01)) == 3  # keys it was built from
    assert len(bloomkit.BinaryFuseFilter(["a", "b"], 0.01)) == 2


def test_constructor_options_reach_the_filter():
    f = bloomkit.BloomFilter(1000, 0.01, seed=7, num_bits=64 * 100, num_hashes=3)
    assert (f.seed, f.num_bits, f.num_hashes, f.fp_rate) == (7, 6400, 3, 0.01)
    f.add("a")
    assert "a" in f and bloomkit.BloomFilter(1000, 0.01, seed=7, num_bits=6400, num_hashes=3) != f
    assert bloomkit.BlockedBloomFilter(1000, 0.01, num_bits=1024).num_bits == 1024
    assert bloomkit.SectorBloomFilter(1000, 0.01, num_hashes=16).num_hashes == 16
    assert bloomkit.CountingBloomFilter(1000, 0.01, num_counters=640).num_counters == 640
    a = bloomkit.AgingBloomFilter(1000, 0.01, generations=4)
    assert a.num_generations == 4
    s = bloomkit.ScalableBloomFilter(100, 0.01, expansion=4, layout="classic", tightening=0.8)
    assert (s.expansion, s.layout, s.capacity) == (4, "classic", 100)
    c = bloomkit.CuckooFilter(1000, 0.01, bucket_size=2, fingerprint_bits=12, expansion=2, seed=3)
    assert (c.bucket_size, c.fingerprint_bits, c.expansion, c.seed) == (2, 12, 2, 3)
    r = bloomkit.RibbonFilter(range(100), 0.01, result_bits=12, layout="standard", seed=5)
    assert (r.result_bits, r.fp_rate, r.seed) == (12, 2**-12, 5)
    assert all(k in r for k in range(100))
    fu = bloomkit.BinaryFuseFilter(range(100), 0.01, fingerprint_bits=16)
    assert fu.fingerprint_bits == 16 and fu.fp_rate == 2**-16


def test_a_seed_gives_another_filter_with_the_same_answers_for_keys_added():
    a = bloomkit.BlockedBloomFilter(1000, 0.01, seed=1)
    b = bloomkit.BlockedBloomFilter(1000, 0.01, seed=2)
    a.add_many(range(500))
    b.add_many(range(500))
    assert a != b and a.to_bytes() != b.to_bytes()
    assert all(k in a and k in b for k in range(500))


@pytest.mark.parametrize(
    "make_bad, message",
    [
        (lambda: bloomkit.BlockedBloomFilter(100, 0.0), "invalid false-positive rate 0"),
        (lambda: bloomkit.BloomFilter(100, 1.5), "strictly between 0 and 1"),
        (lambda: bloomkit.BloomFilter(100, 1e-300), "too small"),
        (lambda: bloomkit.BloomFilter(100, 0.01, num_bits=0), "at least one bit"),
        (lambda: bloomkit.BloomFilter(100, 0.01, num_hashes=0), "number of hashes 0"),
        (lambda: bloomkit.SectorBloomFilter(100, 0.01, num_hashes=7), "8, 16, 24"),
        (lambda: bloomkit.CuckooFilter(100, 0.01, bucket_size=0), "bucket_size"),
        (lambda: bloomkit.AgingBloomFilter(100, 0.01, generations=0), "generations"),
        (lambda: bloomkit.RibbonFilter([1], 0.01, result_bits=40), "result"),
        (lambda: bloomkit.BinaryFuseFilter([1], 0.01, fingerprint_bits=9), "fingerprint_bits 9: expected 8"),
    ],
)
def test_invalid_parameters_raise_the_library_message(make_bad, message):
    with pytest.raises(bloomkit.ParameterError, match=message) as err:
        make_bad()
    assert isinstance(err.value, ValueError)


def test_other_bad_arguments():
    with pytest.raises(ValueError, match='"blocked" or "classic"'):
        bloomkit.ScalableBloomFilter(100, 0.01, layout="sideways")
    with pytest.raises(ValueError, match='"homogeneous" or "standard"'):
        bloomkit.RibbonFilter([], 0.01, layout="sideways")
    with pytest.raises(OverflowError):
        bloomkit.BlockedBloomFilter(-1, 0.01)
    with pytest.raises(TypeError):
        bloomkit.BlockedBloomFilter(100, 0.01, 7)  # options are keywords
    with pytest.raises(MemoryError, match="larger than this machine|could not allocate"):
        bloomkit.BloomFilter(2**63, 0.01)


@pytest.mark.parametrize("kind", ["classic", "blocked", "sector", "counting"])
def test_union_holds_the_keys_of_both(kind):
    a = make(kind, [f"a{i}" for i in range(200)], capacity=1000)
    b = make(kind, [f"b{i}" for i in range(200)], capacity=1000)
    both = a | b
    assert type(both) is type(a) and both is not a
    assert all(f"a{i}" in both and f"b{i}" in both for i in range(200))
    a_before = a.copy()
    a |= b
    assert a == both and a != a_before
    a |= a
    assert a == both
    with pytest.raises(bloomkit.ParameterError, match="differ in"):
        a | CLASSES[kind](10, 0.5)
    with pytest.raises(TypeError):
        a | make("ribbon" if kind != "ribbon" else "fuse", ["x"])
    with pytest.raises(TypeError):
        a |= 3


@pytest.mark.parametrize("kind", ["classic", "blocked", "sector"])
def test_intersection_keeps_the_keys_both_hold(kind):
    shared = [f"s{i}" for i in range(100)]
    a = make(kind, shared + ["only a"], capacity=1000)
    b = make(kind, shared + ["only b"], capacity=1000)
    both = a & b
    assert all(k in both for k in shared)
    a &= b
    assert a == both
    a &= a
    assert a == both


def test_counting_and_cuckoo_filters_remove_keys():
    for kind in ("counting", "cuckoo"):
        f = make(kind, ["a", "a", "b"], capacity=100)
        f.remove("a")
        assert "a" in f and "b" in f
        f.remove("a")
        assert f.discard("b") is True
        assert len(f) == 0 and "a" not in f
        with pytest.raises(KeyError):
            f.remove("a")
        assert f.discard("a") is False
    c = make("cuckoo", ["x"] * 3, capacity=100)
    assert c.count("x") == 3 and c.count("y") == 0


def test_a_full_cuckoo_filter_refuses_and_stays_unchanged():
    f = bloomkit.CuckooFilter(64, 0.01)
    added = 0
    with pytest.raises(bloomkit.FilterFullError, match="full"):
        for i in range(10_000):
            f.add(i)
            added += 1
    assert len(f) == added and all(i in f for i in range(added))
    assert f.load_factor > 0.5
    # With expansion it grows instead.
    g = bloomkit.CuckooFilter(64, 0.01, expansion=2)
    g.add_many(range(10_000))
    assert g.num_filters > 1 and all(i in g for i in range(10_000))


def test_a_scalable_filter_grows_and_keeps_its_target():
    f = bloomkit.ScalableBloomFilter(100, 0.01)
    f.add_many(range(10_000))
    assert f.num_layers > 1 and f.capacity >= 10_000 and len(f) <= 10_000
    assert all(i in f for i in range(10_000))
    assert f.fp_rate == 0.01 and f.predicted_fp_rate <= 0.01
    fixed = bloomkit.ScalableBloomFilter(10, 0.01, non_scaling=True)
    with pytest.raises(bloomkit.FilterFullError):
        fixed.add_many(range(1000))


def test_an_aging_filter_forgets_after_its_generations():
    f = bloomkit.AgingBloomFilter(1000, 0.01, generations=2)
    f.add("old")
    f.rotate()
    assert "old" in f
    f.add("new")
    f.rotate()
    assert "old" not in f and "new" in f
    assert f.add("old") is True


def test_static_filters_cannot_change():
    r = bloomkit.RibbonFilter(["a", "b"], 0.01)
    for name in ("add", "add_many", "update", "clear", "remove", "__or__"):
        assert not hasattr(r, name)
    assert bloomkit.RibbonFilter([], 0.01).contains_many(["a"]) == [False]


def test_fp_rate_is_the_planned_rate():
    assert bloomkit.BlockedBloomFilter(100, 0.02).fp_rate == 0.02
    assert bloomkit.RibbonFilter(range(10), 0.01).fp_rate == 2**-7
    assert bloomkit.BinaryFuseFilter(range(10), 0.01).fp_rate == 2**-8
    assert bloomkit.BlockedBloomFilter(100, 0.02).estimated_fp_rate == 0.0


def test_repr_names_the_class_and_count():
    f = make("cuckoo", ["a", "b"])
    assert repr(f).startswith("<bloomkit.CuckooFilter len=2 memory_bytes=")


def test_module_metadata():
    assert bloomkit.__version__.count(".") == 2
    assert set(bloomkit.__all__) <= set(dir(bloomkit))
    for name in bloomkit.__all__:
        assert getattr(bloomkit, name).__doc__ or name in ("DEFAULT_SEED", "__version__"), name
