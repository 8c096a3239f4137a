"""Files go both ways between Python and the real `bloomkit` binary: a filter the CLI builds
loads here and answers every key as the CLI does, and one Python saves is read by `bloomkit
info` and answers `bloomkit query` as it answers here."""

import subprocess

import pytest

import bloomkit

from conftest import CLASSES

# Lines the CLI takes as keys: plain, with spaces, non-ASCII, not UTF-8 at all, empty.
KEYS = [f"user:{i}".encode() for i in range(2000)] + [
    b"with space",
    "caf\u00e9".encode(),
    b"\xff\xfe not utf-8",
    b"",
]
ABSENT = [f"other:{i}".encode() for i in range(3000)]


def run(cli, *args, stdin=None):
    done = subprocess.run([cli, *args], input=stdin, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


def cli_answers(cli, path, keys):
    """`bloomkit query`'s answer for each key, fed on standard input one per line."""
    out = run(cli, "query", str(path), stdin=b"\n".join(keys) + b"\n")
    lines = out.split(b"\n")[: len(keys)]
    return [line.split(b"\t", 1)[0] == b"maybe" for line in lines]


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_a_filter_the_cli_builds_loads_and_answers_every_key(cli, tmp_path, kind):
    keys_file = tmp_path / "keys.txt"
    keys_file.write_bytes(b"\n".join(KEYS) + b"\n")
    path = tmp_path / "cli.bkf"
    run(cli, "build", "--kind", kind, "--fp-rate", "0.02", "-o", str(path), str(keys_file))

    f = bloomkit.load(path)
    assert isinstance(f, CLASSES[kind]) and f.kind == kind
    assert all(k in f for k in KEYS), "a false negative"
    # `str` keys are their UTF-8 bytes: the CLI's line `user:7` is the key "user:7".
    assert "user:7" in f and "caf\u00e9" in f
    # Every answer, absent keys' false positives included, is the CLI's own.
    assert f.contains_many(ABSENT) == cli_answers(cli, path, ABSENT)


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_a_filter_python_saves_is_read_by_the_cli(cli, tmp_path, kind):
    if kind in ("ribbon", "fuse"):
        f = CLASSES[kind](KEYS, 0.01)
    else:
        f = CLASSES[kind](len(KEYS), 0.01)
        f.add_many(KEYS)
    path = tmp_path / "py.bkf"
    f.save(path)

    info = run(cli, "info", str(path)).decode()
    assert kind in info
    assert cli_answers(cli, path, KEYS) == [True] * len(KEYS)
    assert cli_answers(cli, path, ABSENT) == f.contains_many(ABSENT)


def test_the_cli_reads_python_int_and_tuple_keys_as_rust_does(cli, tmp_path):
    # The CLI only reads byte strings; a filter keyed by ints in Python is still one it reads
    # and merges (same format, same seed), and a byte key added by either side is found by
    # the other.
    f = bloomkit.BlockedBloomFilter(1000, 0.01)
    f.add_many(range(500))
    f.add_many([(i, "x") for i in range(500)])
    f.add("from python")
    path = tmp_path / "mixed.bkf"
    f.save(path)
    run(cli, "insert", str(path), "from the cli")
    g = bloomkit.load(path)
    assert "from the cli" in g and "from python" in g
    assert all(i in g for i in range(500)) and all((i, "x") in g for i in range(500))
