"""What the tests share: where the repository's golden files and the CLI binary are, the
kinds' classes, and the keys the golden files' answers name."""

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

import bloomkit

# No example database in the working tree; no deadline on a loaded machine. Examples are
# drawn afresh each run: a failure is a real bug whichever example finds it, and Hypothesis
# prints the example to replay it.
settings.register_profile("bloomkit", database=None, deadline=None)
settings.load_profile("bloomkit")

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "crates" / "bloomkit" / "tests" / "data"

#: Every kind's class that takes keys after it is made, with a constructor for `n` keys at
#: rate `p` (the cuckoo filter grows, so that a test may fill it past its capacity).
GROWABLE = {
    "classic": lambda n, p: bloomkit.BloomFilter(n, p),
    "blocked": lambda n, p: bloomkit.BlockedBloomFilter(n, p),
    "sector": lambda n, p: bloomkit.SectorBloomFilter(n, p),
    "counting": lambda n, p: bloomkit.CountingBloomFilter(n, p),
    "scalable": lambda n, p: bloomkit.ScalableBloomFilter(n, p),
    "cuckoo": lambda n, p: bloomkit.CuckooFilter(n, p, expansion=2),
    "aging": lambda n, p: bloomkit.AgingBloomFilter(n, p),
}

#: The static kinds, built from their keys.
STATIC = {
    "ribbon": lambda keys, p: bloomkit.RibbonFilter(keys, p),
    "fuse": lambda keys, p: bloomkit.BinaryFuseFilter(keys, p),
}

#: Every kind's class, by the kind's name.
CLASSES = {
    "classic": bloomkit.BloomFilter,
    "blocked": bloomkit.BlockedBloomFilter,
    "sector": bloomkit.SectorBloomFilter,
    "counting": bloomkit.CountingBloomFilter,
    "scalable": bloomkit.ScalableBloomFilter,
    "cuckoo": bloomkit.CuckooFilter,
    "aging": bloomkit.AgingBloomFilter,
    "ribbon": bloomkit.RibbonFilter,
    "fuse": bloomkit.BinaryFuseFilter,
}


def make(kind, keys, p=0.01, capacity=None):
    """A filter of `kind` holding `keys` (for the static kinds, built from them)."""
    keys = list(keys)
    if kind in STATIC:
        return STATIC[kind](keys, p)
    f = GROWABLE[kind](capacity or max(len(keys), 1), p)
    f.add_many(keys)
    return f


def typed_key(descriptor):
    """The Python key an `.answers` line names (`crates/bloomkit/tests/common/typed.rs`):
    untyped lines are text keys."""
    kind, sep, value = descriptor.partition(":")
    if not sep:
        return descriptor
    if kind == "bytes":
        return value.encode()
    if kind == "i32" or kind == "u128":
        return int(value)
    if kind == "pair":
        a, b = value.split(",", 1)
        return (int(a), b)
    if kind == "array":
        return bytes(int(x) for x in value.strip("[]").split(", "))
    if kind == "text":
        return value
    return descriptor


def answers(name):
    """The `(key, answer, count)` lines of a golden file's `.answers`."""
    out = []
    for line in (DATA / f"{name}.answers").read_text().splitlines():
        cols = line.split("\t")
        count = int(cols[2]) if len(cols) > 2 else None
        out.append((cols[0], cols[1] == "maybe", count))
    return out


def full_tests():
    """Whether a missing tool fails the test instead of skipping it (scripts/test.sh)."""
    return os.environ.get("BLOOMKIT_FULL_TESTS") == "1"


@pytest.fixture(scope="session")
def cli():
    """The `bloomkit` binary: $BLOOMKIT_BIN, target/release/bloomkit (which scripts/test.sh
    builds), or one on PATH."""
    candidates = [os.environ.get("BLOOMKIT_BIN"), ROOT / "target" / "release" / "bloomkit"]
    for c in candidates:
        if c and Path(c).is_file():
            return str(c)
    found = shutil.which("bloomkit")
    if found:
        return found
    message = "no bloomkit binary: build it with `cargo build --release -p bloomkit-cli`"
    if full_tests():
        pytest.fail(message)
    pytest.skip(message)
