#!/usr/bin/env python3
"""bloomkit's Python package beside the Bloom filters Python users choose between, in one run.

Peers, from PyPI: rbloom, fastbloom-rs, pybloomfiltermmap3 (Bloom filters), pyfusefilter (a
static binary fuse filter, beside bloomkit's BinaryFuseFilter). For each size (1,000,000 and
100,000,000 keys by default) and key type (str and int), at a 1% target, it measures each
library's per-item calls (``add``, ``in``) and batch calls (where a library has one), the
memory each filter takes, and the false-positive rate measured on absent keys; then prints
markdown tables and the ratios the issue sets targets for (bloomkit's BlockedBloomFilter
against rbloom):

* per-item ``add`` and ``in`` no slower than rbloom's;
* batched ``add_many`` / ``contains_many`` at least 5x faster than rbloom's per-item loop over
  the same keys;
* measured rate at most 1.1x the target; memory at most 1.05x rbloom's.

It installs nothing. Set up a virtual environment under target/ first:

    python3 -m venv target/py-bench
    target/py-bench/bin/pip install rbloom==1.5.4 fastbloom-rs==0.5.10 \\
        pybloomfiltermmap3==0.6.3 pyfusefilter==1.3.0 'xxhash<4' numpy
    target/py-bench/bin/pip install ./crates/bloomkit-py
    target/py-bench/bin/python scripts/bench_python.py > python-run.md

(pyfusefilter 1.3.0 hashes ``str(item)`` with xxhash, which refuses str from version 4 on:
hence ``xxhash<4``.) A peer that is not installed is reported as such, with the import error,
and left out.

Method. Keys are generated before they are timed, a million at a time: the i-th int key is
``(i * 0x9E3779B97F4A7C15 + 1) mod 2**63`` and the i-th str key ``"user:"`` and that number
in hex (10 to 21 bytes). Present keys are i < n; absent ones n <= i < n + 1,000,000. Every
filter of a size takes all n keys; for each chunk of keys the libraries take their turns in an
order that rotates from chunk to chunk, so that a change in the machine's load falls on all of
them alike. Queries are timed over 1,000,000 present keys (spread over all n) and 1,000,000
absent ones. Times are the CPU time of the thread (``time.thread_time``: what the work cost,
whatever else the machine runs; a batch that releases the GIL still runs on the calling
thread), in nanoseconds per key. Memory is what each library reports for its filter
(rbloom ``size_in_bits``, fastbloom-rs ``size()``, pybloomfiltermmap3 ``num_bits``, pyfusefilter
``size_in_bytes()``, bloomkit ``memory_bytes``).
"""

import argparse
import datetime
import gc
import os
import platform
import subprocess
import sys
import time

MULTIPLIER = 0x9E3779B97F4A7C15
MASK = (1 << 63) - 1
CHUNK = 1_000_000
QUERIES = 1_000_000
TARGET = 0.01


def int_keys(start, stop):
    """Int keys number `start` to `stop`."""
    return [(i * MULTIPLIER + 1) & MASK for i in range(start, stop)]


def str_keys(start, stop):
    """Str keys number `start` to `stop`."""
    return [f"user:{(i * MULTIPLIER + 1) & MASK:x}" for i in range(start, stop)]


def numpy_keys(np, keys):
    """The int keys as a NumPy array (all below 2**63)."""
    return np.array(keys, dtype=np.int64)


def cpu():
    return time.thread_time_ns()


def peers():
    """Each peer's module, or why it could not be imported."""
    found, missing = {}, {}
    for name, module in [
        ("rbloom", "rbloom"),
        ("fastbloom-rs", "fastbloom_rs"),
        ("pybloomfiltermmap3", "pybloomfilter"),
        ("pyfusefilter", "pyfusefilter"),
        ("bloomkit", "bloomkit"),
        ("numpy", "numpy"),
    ]:
        try:
            found[name] = __import__(module)
        except Exception as e:  # noqa: BLE001 - any failure to import is reported as it is
            missing[name] = f"{type(e).__name__}: {e}"
    return found, missing


class Contender:
    """One library's Bloom filter of n keys, as its per-item and batch calls fill and ask it.

    `per_item` fills one filter key by key; `batch` (where the library has a batch call)
    fills a second one with that call. Each records its CPU time.
    """

    def __init__(self, name, make, add, contains, add_batch=None, contains_batch=None, size=None, batch_input=None):
        self.name = name
        self.make = make
        self.add = add
        self.contains = contains
        self.add_batch = add_batch
        self.contains_batch = contains_batch
        self.size = size
        self.batch_input = batch_input or (lambda keys: keys)
        self.times = {}

    def tick(self, what, ns):
        self.times[what] = self.times.get(what, 0) + ns


def fastbloom_filter(fb, n):
    """fastbloom-rs's filter, with its builder (which reports the size)."""
    builder = fb.PyFilterBuilder(n, TARGET)
    return builder.build_bloom_filter(), builder


def bloom_contenders(mods, key_type):
    """The Bloom filters compared, each with its fastest per-item and batch calls for the key
    type."""
    out = []
    if "rbloom" in mods:
        rb = mods["rbloom"]
        out.append(
            Contender(
                "rbloom (Bloom)",
                lambda n: rb.Bloom(n, TARGET),
                lambda f: f.add,
                lambda f: f.__contains__,
                add_batch=lambda f: f.update,
                size=lambda f: f.size_in_bits // 8,
            )
        )
    if "fastbloom-rs" in mods:
        fb = mods["fastbloom-rs"]
        suffix = "str" if key_type == "str" else "int"
        out.append(
            Contender(
                "fastbloom-rs (PyBloomFilter)",
                lambda n: fastbloom_filter(fb, n),
                lambda f: getattr(f[0], f"add_{suffix}"),
                lambda f: getattr(f[0], f"contains_{suffix}"),
                add_batch=lambda f: getattr(f[0], f"add_{suffix}_batch"),
                contains_batch=lambda f: getattr(f[0], f"contains_{suffix}_batch"),
                size=lambda f: f[1].size() // 8,
            )
        )
    if "pybloomfiltermmap3" in mods:
        pb = mods["pybloomfiltermmap3"]
        out.append(
            Contender(
                "pybloomfiltermmap3 (BloomFilter)",
                lambda n: pb.BloomFilter(n, TARGET),
                lambda f: f.add,
                lambda f: f.__contains__,
                add_batch=lambda f: f.update,
                size=lambda f: f.num_bits // 8,
            )
        )
    if "bloomkit" in mods:
        bk = mods["bloomkit"]
        for cls in (bk.BlockedBloomFilter, bk.BloomFilter):
            out.append(
                Contender(
                    f"bloomkit ({cls.__name__})",
                    lambda n, cls=cls: cls(n, TARGET),
                    lambda f: f.add,
                    lambda f: f.__contains__,
                    add_batch=lambda f: f.add_many,
                    contains_batch=lambda f: f.contains_many,
                    size=lambda f: f.memory_bytes,
                )
            )
        if key_type == "int" and "numpy" in mods:
            np = mods["numpy"]
            out.append(
                Contender(
                    "bloomkit (BlockedBloomFilter), NumPy array",
                    lambda n: bk.BlockedBloomFilter(n, TARGET),
                    None,
                    None,
                    add_batch=lambda f: f.add_many,
                    contains_batch=lambda f: f.contains_many,
                    size=lambda f: f.memory_bytes,
                    batch_input=lambda keys: numpy_keys(np, keys),
                )
            )
    return out


def timed_loop_add(add, keys):
    start = cpu()
    for k in keys:
        add(k)
    return cpu() - start


def timed_loop_in(contains, keys):
    hits = 0
    start = cpu()
    if contains.__name__ == "__contains__":
        f = contains.__self__
        for k in keys:
            if k in f:
                hits += 1
    else:
        for k in keys:
            if contains(k):
                hits += 1
    return cpu() - start, hits


def timed(call, arg):
    start = cpu()
    result = call(arg)
    return cpu() - start, result


def run_bloom(mods, n, key_type, rounds, out):
    """Every Bloom contender, `rounds` times over (fresh filters each time, libraries in
    turns); each time is the median of the rounds."""
    runs = [bloom_round(mods, n, key_type) for _ in range(rounds)]
    contenders = runs[-1]
    for i, c in enumerate(contenders):
        c.times = {what: median([r[i].times[what] for r in runs]) for what in c.times}
    out.append((n, key_type, contenders, min(n, QUERIES), QUERIES, rounds))


def median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def bloom_round(mods, n, key_type):
    make_keys = str_keys if key_type == "str" else int_keys
    contenders = bloom_contenders(mods, key_type)
    for c in contenders:
        c.one = c.make(n) if c.add else None
        c.many = c.make(n) if c.add_batch else None
    # Fill: chunk by chunk, each library in turn, the order rotating.
    for chunk_no, start in enumerate(range(0, n, CHUNK)):
        keys = make_keys(start, min(n, start + CHUNK))
        turn = contenders[chunk_no % len(contenders) :] + contenders[: chunk_no % len(contenders)]
        for c in turn:
            if c.one is not None:
                c.tick("add", timed_loop_add(c.add(c.one), keys))
            if c.many is not None:
                batch = c.batch_input(keys)
                c.tick("add_batch", timed(c.add_batch(c.many), batch)[0])
        del keys
    # Query: present keys spread over all n, then absent ones.
    step = max(1, n // QUERIES)
    present = [make_keys(i, i + 1)[0] for i in range(0, n, step)][:QUERIES]
    absent = make_keys(n, n + QUERIES)
    for c in contenders:
        if c.one is not None:
            t, hits = timed_loop_in(c.contains(c.one), present)
            assert hits == len(present), f"{c.name}: a false negative"
            c.tick("in_present", t)
            t, false = timed_loop_in(c.contains(c.one), absent)
            c.tick("in_absent", t)
            c.rate = false / len(absent)
        if c.many is not None and c.contains_batch is not None:
            t, answers = timed(c.contains_batch(c.many), c.batch_input(present))
            assert all(answers), f"{c.name}: a false negative"
            c.tick("contains_batch_present", t)
            t, answers = timed(c.contains_batch(c.many), c.batch_input(absent))
            c.tick("contains_batch_absent", t)
            c.rate = sum(bool(a) for a in answers) / len(absent)
        c.memory = c.size(c.one if c.one is not None else c.many)
    for c in contenders:
        c.one = c.many = None
    gc.collect()
    return contenders


def run_static(mods, n, key_type, out):
    """pyfusefilter's Fuse8 beside bloomkit's BinaryFuseFilter (8-bit fingerprints: both about
    0.39%), built from all n keys."""
    make_keys = str_keys if key_type == "str" else int_keys
    keys = []
    for start in range(0, n, CHUNK):
        keys.extend(make_keys(start, min(n, start + CHUNK)))
    step = max(1, n // QUERIES)
    present = keys[::step][:QUERIES]
    absent = make_keys(n, n + QUERIES)
    rows = []
    builds = []
    if "pyfusefilter" in mods:
        builds.append(("pyfusefilter (Fuse8)", lambda: mods["pyfusefilter"].Fuse8(keys), lambda f: f.size_in_bytes(), None))
    if "bloomkit" in mods:
        bk = mods["bloomkit"]
        builds.append(("bloomkit (BinaryFuseFilter)", lambda: bk.BinaryFuseFilter(keys, TARGET), lambda f: f.memory_bytes, "list"))
        if key_type == "int" and "numpy" in mods:
            array = numpy_keys(mods["numpy"], keys)
            builds.append(("bloomkit (BinaryFuseFilter), NumPy array", lambda: bk.BinaryFuseFilter(array, TARGET), lambda f: f.memory_bytes, "numpy"))
    for name, build, size, batch in builds:
        start = cpu()
        f = build()
        row = {"name": name, "build": cpu() - start, "memory": size(f)}
        t, hits = timed_loop_in(f.__contains__, present)
        assert hits == len(present), f"{name}: a false negative"
        row["in_present"] = t
        t, false = timed_loop_in(f.__contains__, absent)
        row["in_absent"] = t
        row["rate"] = false / len(absent)
        if batch is not None:
            probe = (lambda ks: numpy_keys(mods["numpy"], ks)) if batch == "numpy" else (lambda ks: ks)
            t, answers = timed(f.contains_many, probe(present))
            assert all(answers)
            row["contains_batch_present"] = t
            t, answers = timed(f.contains_many, probe(absent))
            row["contains_batch_absent"] = t
        rows.append(row)
        del f
        gc.collect()
    out.append((n, key_type, rows, len(present), len(absent)))


def per_key(ns, count):
    return f"{ns / count:.1f}" if ns else "—"


def machine():
    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}"


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def versions(mods):
    out = []
    for name, mod in mods.items():
        v = getattr(mod, "__version__", None)
        if v is None:
            try:
                from importlib.metadata import version

                v = version({"pybloomfiltermmap3": "pybloomfiltermmap3", "fastbloom-rs": "fastbloom-rs"}.get(name, name))
            except Exception:  # noqa: BLE001
                v = "?"
        out.append(f"{name} {v}")
    return ", ".join(out)


def report(bloom, static, mods, missing, started, load_start, revision):
    print("# bloomkit for Python beside its peers\n")
    print(f"- Command: `{' '.join([os.path.basename(sys.executable)] + sys.argv)}`")
    print(f"- Date: {started:%Y-%m-%d %H:%M} UTC; commit `{revision}` checked out at the start")
    print(f"- Machine: {machine()}")
    print(f"- Load average: {load_start} at the start, {os.getloadavg()[0]:.2f} at the end")
    print(f"- Libraries: {versions(mods)}")
    for name, why in missing.items():
        print(f"- **{name} not measured**: {why}")
    print("- Times: CPU time of the thread, ns per key; rate: measured on 1,000,000 absent keys\n")
    for n, key_type, contenders, n_present, n_absent, rounds in bloom:
        how = f"medians of {rounds} rounds" if rounds > 1 else "one round, the libraries in turns over its chunks"
        print(f"## {n:,} {key_type} keys, Bloom filters at 1% ({how})\n")
        print("| library | add | in, present | in, absent | batch add | batch in, present | batch in, absent | memory (bytes) | bits/key | rate |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for c in contenders:
            t = c.times
            print(
                f"| {c.name} | {per_key(t.get('add'), n)} | {per_key(t.get('in_present'), n_present)} | "
                f"{per_key(t.get('in_absent'), n_absent)} | {per_key(t.get('add_batch'), n)} | "
                f"{per_key(t.get('contains_batch_present'), n_present)} | {per_key(t.get('contains_batch_absent'), n_absent)} | "
                f"{c.memory:,} | {8 * c.memory / n:.2f} | {100 * c.rate:.3f}% |"
            )
        ratios(n, key_type, contenders, n_present, n_absent)
    for n, key_type, rows, n_present, n_absent in static:
        print(f"## {n:,} {key_type} keys, static filters (8-bit fingerprints)\n")
        print("| library | build | in, present | in, absent | batch in, present | batch in, absent | memory (bytes) | bits/key | rate |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['name']} | {per_key(r['build'], n)} | {per_key(r['in_present'], n_present)} | "
                f"{per_key(r['in_absent'], n_absent)} | {per_key(r.get('contains_batch_present'), n_present)} | "
                f"{per_key(r.get('contains_batch_absent'), n_absent)} | {r['memory']:,} | {8 * r['memory'] / n:.2f} | {100 * r['rate']:.3f}% |"
            )
        print()


def ratios(n, key_type, contenders, n_present, n_absent):
    by = {c.name: c for c in contenders}
    rb = by.get("rbloom (Bloom)")
    ours = by.get("bloomkit (BlockedBloomFilter)")
    if rb is None or ours is None:
        print()
        return
    r, o = rb.times, ours.times

    def x(a, b):
        return f"{a / b:.2f}x" if a and b else "—"

    both_in = lambda t: t["in_present"] + t["in_absent"]  # noqa: E731
    lines = [
        f"per-item add, rbloom's time / ours: **{x(r['add'], o['add'])}** (target >= 1)",
        f"per-item in, rbloom's time / ours: **{x(both_in(r), both_in(o))}** (present {x(r['in_present'], o['in_present'])}, absent {x(r['in_absent'], o['in_absent'])}; target >= 1)",
        f"add_many (list) vs rbloom's per-item add loop: **{x(r['add'], o['add_batch'])}** (target >= 5)",
        f"contains_many (list) vs rbloom's per-item in loop: **{x(both_in(r), o['contains_batch_present'] + o['contains_batch_absent'])}** (target >= 5)",
    ]
    array = by.get("bloomkit (BlockedBloomFilter), NumPy array")
    if array is not None:
        a = array.times
        lines.append(f"add_many (NumPy) vs rbloom's per-item add loop: **{x(r['add'], a['add_batch'])}**")
        lines.append(f"contains_many (NumPy) vs rbloom's per-item in loop: **{x(both_in(r), a['contains_batch_present'] + a['contains_batch_absent'])}**")
    lines.append(f"add_many (list) vs rbloom's own batch call (update): {x(r['add_batch'], o['add_batch'])}")
    lines.append(f"measured rate / target: **{ours.rate / TARGET:.3f}** (target <= 1.1); rbloom's {rb.rate / TARGET:.3f}")
    lines.append(f"memory / rbloom's: **{ours.memory / rb.memory:.3f}** (target <= 1.05)")
    print()
    for line in lines:
        print(f"- {line}")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,100000000", help="comma-separated key counts")
    parser.add_argument("--keys", default="str,int", help="key types: str, int or both")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the Bloom filters at each size up to --rounds-max (medians)")
    parser.add_argument("--rounds-max", type=int, default=10_000_000, help="larger sizes run one round (their many chunks interleave the libraries already)")
    parser.add_argument("--static-max", type=int, default=100_000_000, help="largest size the static filters are built at (they hold every key in memory at once)")
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = f"{os.getloadavg()[0]:.2f}"
    revision = commit()
    mods, missing = peers()
    if "bloomkit" not in mods:
        sys.exit(f"bloomkit is not installed: {missing['bloomkit']}")
    bloom, static = [], []
    for n in (int(s) for s in args.sizes.split(",")):
        for key_type in args.keys.split(","):
            print(f"{n:,} {key_type} keys: Bloom filters...", file=sys.stderr, flush=True)
            run_bloom(mods, n, key_type, args.rounds if n <= args.rounds_max else 1, bloom)
            if n <= args.static_max:
                print(f"{n:,} {key_type} keys: static filters...", file=sys.stderr, flush=True)
                run_static(mods, n, key_type, static)
    report(bloom, static, mods, missing, started, load_start, revision)


if __name__ == "__main__":
    main()
