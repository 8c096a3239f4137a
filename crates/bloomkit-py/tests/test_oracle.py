"""Every kind against a Python `set` (Hypothesis): a key added is always found, through every
way in and out of a filter; the batched calls agree with the one-key ones."""

import copy
import pickle
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bloomkit

from conftest import GROWABLE, STATIC

scalars = st.one_of(
    st.text(max_size=20),
    st.binary(max_size=20),
    st.integers(min_value=-(2**127), max_value=2**128 - 1),
)
keys = st.one_of(scalars, st.tuples(scalars, scalars), st.tuples(scalars, st.tuples(scalars)))
key_lists = st.lists(keys, max_size=300)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def round_trips(f):
    """The filter, and what every way of storing or copying it gives back."""
    return [
        f,
        f.copy(),
        copy.deepcopy(f),
        pickle.loads(pickle.dumps(f)),
        type(f).from_bytes(f.to_bytes()),
        bloomkit.from_bytes(bytearray(f.to_bytes())),
    ]


@pytest.mark.parametrize("kind", sorted(GROWABLE))
@SETTINGS
@given(added=key_lists, probes=key_lists)
def test_no_false_negatives_against_a_set(kind, added, probes):
    oracle = set()
    f = GROWABLE[kind](max(len(added), 1), 0.01)
    for k in added:
        f.add(k)
        oracle.add(k)
    for g in round_trips(f):
        assert g == f
        assert all(k in g for k in oracle)
        assert g.contains_many(list(oracle)) == [True] * len(oracle)
        # Absent keys: the batched answers are the one-key answers.
        assert g.contains_many(probes) == [k in g for k in probes]


@pytest.mark.parametrize("kind", sorted(GROWABLE))
@SETTINGS
@given(added=key_lists)
def test_add_many_leaves_the_filter_add_leaves(kind, added):
    one_by_one = GROWABLE[kind](max(len(added), 1), 0.01)
    answers = [one_by_one.add(k) for k in added]
    batched = GROWABLE[kind](max(len(added), 1), 0.01)
    batched.add_many(added)
    assert batched == one_by_one
    via_update = GROWABLE[kind](max(len(added), 1), 0.01)
    via_update.update(added[: len(added) // 2], iter(added[len(added) // 2 :]))
    assert via_update == one_by_one
    # `add` says True only for a key that was definitely new.
    seen = set()
    for k, new in zip(added, answers):
        if k in seen:
            assert not new
        seen.add(k)


@pytest.mark.parametrize("kind", ["counting", "cuckoo"])
@SETTINGS
@given(added=key_lists, data=st.data())
def test_removal_loses_no_other_key(kind, added, data):
    f = GROWABLE[kind](max(len(added), 1), 0.01)
    f.add_many(added)
    held = Counter(added)
    assert len(f) == len(added)
    for k in data.draw(st.lists(st.sampled_from(added), unique=True)) if added else []:
        f.remove(k)
        held[k] -= 1
    assert all(k in f for k, n in held.items() if n > 0)
    assert len(f) == sum(held.values())


@pytest.mark.parametrize("kind", sorted(STATIC))
@SETTINGS
@given(added=key_lists, probes=key_lists)
def test_static_kinds_find_every_key_they_were_built_from(kind, added, probes):
    f = STATIC[kind](added, 0.01)
    assert len(f) == len(added)
    for g in round_trips(f):
        assert g == f
        assert all(k in g for k in added)
        assert g.contains_many(probes) == [k in g for k in probes]


@pytest.mark.parametrize("kind", sorted(GROWABLE))
def test_the_measured_rate_is_the_planned_one(kind):
    # 20,000 keys at 1%: about 200 false positives in 20,000 probes are expected, and a
    # correct filter measures under 1.5% far beyond chance (more than six standard
    # deviations).
    n = 20_000
    f = GROWABLE[kind](n, 0.01)
    f.add_many(range(n))
    false = sum(f.contains_many(range(n, 2 * n)))
    assert false / n < 0.015, false
    assert 0 < f.estimated_fp_rate < 0.015
    assert 0 < f.predicted_fp_rate < 0.015
