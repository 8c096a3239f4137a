#!/usr/bin/env python3
"""Copies of one item into a tiny growing cuckoo filter, bloomkit beside RedisBloom.

Usage (after `cargo build --release`; see docs/SERVER.md for how to get redisbloom.so):
    python3 scripts/bench_cuckoo_copies.py --bloomkit target/release/bloomkit \
        --redisbloom-so /path/to/redisbloom.so [--bloomkit-before OTHER_BINARY] \
        [--copies 20000 40000] [--runs 5] [--item item] [--callgrind]

For each count N: `CF.RESERVE cf 2 BUCKETSIZE 1 EXPANSION 1`, then one `CF.INSERT cf ITEMS`
with N copies of the item, timed from send to reply; then `CF.INFO`'s number of
sub-filters. Each server runs with the same durability (append-only log, fsync every
second, no snapshots), on free loopback ports; the median of `--runs` runs is printed, with
the slowest and fastest. `--bloomkit-before` adds a second bloomkit binary (an older build)
to the same run. Prints a Markdown table. Needs `redis-server` and the `redis` package.

With `--callgrind`, each server instead runs under `valgrind --tool=callgrind` (bloomkit with
one worker thread, Redis without the log), once per count, and the table gives the
instructions the whole process ran, start-up and shutdown included (count 1 shows those):
a figure that does not depend on what else the machine is doing.
"""

import argparse
import glob
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc, name, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit("%s exited during start-up (status %s)" % (name, proc.returncode))
        try:
            if redis.Redis(port=port).ping():
                return
        except redis.exceptions.ConnectionError:
            time.sleep(0.1)
    sys.exit("%s did not answer PING within %d s" % (name, seconds))


def filters(client, key):
    info = client.execute_command("CF.INFO", key)
    if isinstance(info, dict):
        pairs = info.items()
    else:
        pairs = zip(info[::2], info[1::2])
    for name, value in pairs:
        name = name.decode() if isinstance(name, bytes) else name
        if name == "Number of filters":
            return int(value)
    sys.exit("CF.INFO has no 'Number of filters'")


def run_once(client, copies, item):
    client.delete("cf")
    client.execute_command("CF.RESERVE", "cf", 2, "BUCKETSIZE", 1, "EXPANSION", 1)
    start = time.perf_counter()
    replies = client.execute_command("CF.INSERT", "cf", "ITEMS", *([item] * copies))
    elapsed = time.perf_counter() - start
    if sum(1 for r in replies if r == 1) != copies:
        sys.exit("not every copy was inserted")
    return elapsed, filters(client, "cf")


def callgrind_total(out):
    """The instructions of every thread's part of a callgrind run (one file per thread)."""
    total = 0
    for path in glob.glob(out + "*"):
        with open(path) as f:
            for line in f:
                m = re.match(r"^(summary|totals): (\d+)", line)
                if m:
                    total += int(m.group(2))
                    break
    return total


def callgrind(opts, binaries):
    """One run per server and count under callgrind; prints instruction totals."""
    print("| copies | server | instructions | sub-filters |")
    print("|---|---|---|---|")
    servers = binaries + [("RedisBloom", None)]
    for copies in opts.copies:
        for name, binary in servers:
            work = tempfile.mkdtemp(prefix="bench-copies-cg-")
            out = os.path.join(work, "callgrind.out")
            port = free_port()
            if binary is None:
                command = [opts.redis_server, "--port", str(port), "--loadmodule",
                           opts.redisbloom_so, "--dir", work, "--save", "",
                           "--appendonly", "no"]
            else:
                command = [binary, "serve", "--port", str(port), "--dir", work + "/data",
                           "--threads", "1"]
            proc = subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + command,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_ready(port, proc, name, seconds=600)
                client = redis.Redis(port=port, socket_timeout=3600)
                _, count = run_once(client, copies, opts.item)
                try:
                    client.execute_command("SHUTDOWN", "NOSAVE")
                except redis.exceptions.ConnectionError:
                    pass  # the server closed the connection as it stopped
                proc.wait(timeout=600)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            print("| %d | %s | %d | %d |" % (copies, name, callgrind_total(out), count),
                  flush=True)
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bloomkit", required=True, help="the bloomkit binary")
    ap.add_argument("--bloomkit-before", help="another bloomkit binary to compare with")
    ap.add_argument("--redisbloom-so", required=True, help="RedisBloom's module")
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--copies", type=int, nargs="+", default=[20_000, 40_000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--item", default="item")
    ap.add_argument("--callgrind", action="store_true",
                    help="count instructions under valgrind instead of timing")
    opts = ap.parse_args()
    if opts.callgrind:
        binaries = [("bloomkit", opts.bloomkit)]
        if opts.bloomkit_before:
            binaries.insert(0, ("bloomkit before", opts.bloomkit_before))
        callgrind(opts, binaries)
        return

    work = tempfile.mkdtemp(prefix="bench-copies-")
    procs = []
    servers = []
    try:
        binaries = [("bloomkit", opts.bloomkit)]
        if opts.bloomkit_before:
            binaries.insert(0, ("bloomkit before", opts.bloomkit_before))
        for n, (name, binary) in enumerate(binaries):
            port = free_port()
            proc = subprocess.Popen(
                [binary, "serve", "--port", str(port), "--dir", "%s/ours%d" % (work, n),
                 "--appendfsync", "everysec"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(proc)
            servers.append((name, port, proc))
        port = free_port()
        proc = subprocess.Popen(
            [opts.redis_server, "--port", str(port), "--loadmodule", opts.redisbloom_so,
             "--dir", work, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        servers.append(("RedisBloom", port, proc))
        for name, port, proc in servers:
            wait_ready(port, proc, name)

        print("| copies | server | seconds (median of %d) | fastest | slowest | sub-filters |"
              % opts.runs)
        print("|---|---|---|---|---|---|")
        clients = [redis.Redis(port=port, socket_timeout=600) for _, port, _ in servers]
        for copies in opts.copies:
            times = [[] for _ in servers]
            counts = [set() for _ in servers]
            # The servers take turns run by run, so that load from the rest of the machine
            # falls on all of them alike.
            for _ in range(opts.runs):
                for i, client in enumerate(clients):
                    elapsed, count = run_once(client, copies, opts.item)
                    times[i].append(elapsed)
                    counts[i].add(count)
            for i, (name, _, _) in enumerate(servers):
                print("| %d | %s | %.3f | %.3f | %.3f | %s |"
                      % (copies, name, statistics.median(times[i]), min(times[i]),
                         max(times[i]), ", ".join(str(c) for c in sorted(counts[i]))),
                      flush=True)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
