#!/usr/bin/env python3
"""Writes the BF.* fixtures that pin classic layers' first probe derivation in the hosts.

Run once, with the build from before the classic filters' second derivation, against a
running engine: a bloomkit server (`bloomkit serve --dir D --appendfsync always`) or Redis
with the module (`redis-server --loadmodule libbloomkit_redis.so --appendonly yes
--appendfsync always`). It sends the recipe below; the caller then takes the engine's files
(the server's data directory, stopped with SIGKILL so that the log keeps its records; the
module's dump.rdb and append-only directory), and this script writes the answers and, with
--dumps, each key's DUMP payload.

Usage: make_bf_fixtures.py PORT OUT_DIR [--dumps] [--save-midway]
"""

import os
import sys

import redis

# (key, creation or None for BF.ADD's defaults, items before the snapshot, items after).
KEYS = [
    ("a", ["BF.RESERVE", "a", "0.01", "100", "EXPANSION", "2"], 700, 300),
    ("b", None, 300, 0),
    ("c", ["BF.RESERVE", "c", "0.0001", "10", "NONSCALING"], 10, 0),
    ("d", ["BF.RESERVE", "d", "0.001", "50", "EXPANSION", "1"], 400, 200),
    ("e", ["BF.RESERVE", "e", "0.01", "100", "LAYOUT", "BLOCKED"], 300, 0),
]
# Created after the snapshot, so only the log or the append-only file holds them.
LATE = [
    ("f", ["BF.RESERVE", "f", "0.001", "20"], 200),
    ("g", ["BF.INSERT", "g", "CAPACITY", "30", "ERROR", "0.005", "ITEMS"], 100),
]
# Items asked of every key in the answers: its inserted ones and many absent ones, so
# that the false positives of the derivation are pinned too.
PROBES = 20000


def items(key, start, stop):
    return [f"{key}{i}" for i in range(start, stop)]


def madd(r, key, start, stop):
    for lo in range(start, stop, 100):
        r.execute_command("BF.MADD", key, *items(key, lo, min(stop, lo + 100)))


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    flags = sys.argv[3:]
    r = redis.Redis(port=port)
    for key, create, before, _ in KEYS:
        if create is None:
            r.execute_command("BF.ADD", key, f"{key}0")
            madd(r, key, 1, before)
        else:
            r.execute_command(*create)
            madd(r, key, 0, before)
    if "--save-midway" in flags:
        r.execute_command("SAVE")
    for key, _, before, after in KEYS:
        madd(r, key, before, before + after)
    for key, create, count in LATE:
        if create[0] == "BF.INSERT":
            r.execute_command(*create, *items(key, 0, count))
        else:
            r.execute_command(*create)
            madd(r, key, 0, count)
    os.makedirs(out, exist_ok=True)
    keys = [k for k, *_ in KEYS] + [k for k, *_ in LATE]
    with open(os.path.join(out, "answers"), "w") as f:
        f.write(f"# key<TAB>item for every item {{key}}0..{{key}}{PROBES - 1} that answers 1\n")
        for key in keys:
            for lo in range(0, PROBES, 1000):
                asked = items(key, lo, lo + 1000)
                for item, yes in zip(asked, r.execute_command("BF.MEXISTS", key, *asked)):
                    if yes:
                        f.write(f"{key}\t{item}\n")
    if "--dumps" in flags:
        for key in keys:
            with open(os.path.join(out, f"dump-{key}.hex"), "w") as f:
                f.write(r.dump(key).hex() + "\n")


if __name__ == "__main__":
    main()
