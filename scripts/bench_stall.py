#!/usr/bin/env python3
"""PING latency on one connection while others run the slowest commands on other keys.

Usage (after `cargo build --release`):
    python3 scripts/bench_stall.py --bloomkit target/release/bloomkit [--seconds 10] \
        [--threads 2] [--workload all]

Starts `bloomkit serve --threads N` (2 by default: as on a two-core machine, so that a few
slow commands could occupy every worker) on a free port and a scratch directory, prepares
the keys each workload needs, then for `--seconds` runs, each on its own connection and
key, in a loop:
  cf-full      CF.INSERT of 3,000 items (30 KB) into a full cuckoo filter with
               MAXITERATIONS 65535: every item tries 65,535 kicks before it is refused;
  cf-compact   CF.COMPACT of a cuckoo filter of 2,000 sub-filters;
  bf-madd      BF.MADD of 1,000,000 items (21 MB);
  bf-mexists   BF.MEXISTS of 1,000,000 items (21 MB);
  keys         KEYS * over 200,000 keys;
  writers      three clients each writing (BF.ADD) random keys of their own, as fast as they
               can, so that some of them share a shard with the slow keys;
while one more connection, from a process of its own, sends PING every 5 ms and times each reply. Prints the PINGs'
median, 99th percentile and maximum (milliseconds), how many of each slow command ran,
and the writers' slowest reply. `--workload` picks one of the above (writers always run),
or `all` (the default) for all of them at once.

Plain sockets only (no Python packages), so it runs wherever python3 does; the server's
own test of the same (crates/bloomkit-server/tests/it/long_commands.rs) uses a generous bound.
"""

import argparse
import multiprocessing
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            arg = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")

    def send(self, request):
        self.sock.sendall(request)

    def reply(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if kind == b":":
            return int(rest)
        if kind == b"-":
            return Exception(rest.decode())
        return rest.decode()

    def call(self, *args):
        self.send(encode(*args))
        return self.reply()


def start(binary, threads):
    work = tempfile.mkdtemp(prefix="bench-stall-")
    proc = subprocess.Popen(
        [binary, "serve", "--port", "0", "--dir", work + "/data", "--threads", str(threads),
         "--appendfsync", "no", "--loglevel", "warning"],
        stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        sys.exit("bloomkit serve did not start: %r" % line)
    return proc, int(line.rsplit(":", 1)[1]), work


def prepare(port, workloads):
    c = Conn(port)
    if "cf-full" in workloads:
        # EXPANSION 0: the filter never grows; filled until an insert is refused.
        c.call("CF.RESERVE", "slow:cf-full", "1000", "MAXITERATIONS", "65535",
               "EXPANSION", "0")
        i = 0
        while True:
            batch = ["fill:%d" % j for j in range(i, i + 1000)]
            replies = c.call("CF.INSERT", "slow:cf-full", "ITEMS", *batch)
            i += 1000
            if any(isinstance(r, Exception) or r == -1 for r in replies):
                break
    if "cf-compact" in workloads:
        # One slot per sub-filter, two per bucket pair: 4,000 copies, 2,000 sub-filters.
        c.call("CF.RESERVE", "slow:cf-compact", "2", "BUCKETSIZE", "1", "EXPANSION", "1",
               "MAXITERATIONS", "1")
        for _ in range(4):
            c.call("CF.INSERT", "slow:cf-compact", "MAXEXPANSIONS", "65535", "ITEMS",
                   *(["same"] * 1000))
    for name in ("bf-madd", "bf-mexists"):
        if name in workloads:
            c.call("BF.RESERVE", "slow:" + name, "0.01", "1000000")
    if "keys" in workloads:
        for start_at in range(0, 200000, 10000):
            c.send(b"".join(encode("BF.ADD", "many:%d" % i, "x")
                            for i in range(start_at, start_at + 10000)))
            for _ in range(10000):
                c.reply()
    c.sock.close()


def slow_request(name):
    items = ["item:%07d" % i for i in range(1000000)]
    if name == "cf-full":
        return encode("CF.INSERT", "slow:cf-full", "ITEMS",
                      *["refused:%d" % i for i in range(3000)])
    if name == "cf-compact":
        return encode("CF.COMPACT", "slow:cf-compact")
    if name == "bf-madd":
        return encode("BF.MADD", "slow:bf-madd", *items)
    if name == "bf-mexists":
        return encode("BF.MEXISTS", "slow:bf-mexists", *items)
    if name == "keys":
        return encode("KEYS", "*")
    raise ValueError(name)


def ping_loop(port, stop_at, out):
    """Sends PING every 5 ms until `stop_at`, after a start-up half second; sends the
    latencies (seconds) to `out`."""
    time.sleep(0.5)
    pinger = Conn(port)
    pings = []
    while time.time() < stop_at:
        t = time.perf_counter()
        assert pinger.call("PING") == "PONG"
        pings.append(time.perf_counter() - t)
        time.sleep(0.005)
    out.send(pings)


def run(binary, seconds, threads, workloads):
    proc, port, work = start(binary, threads)
    try:
        prepare(port, workloads)
        stop_at = time.time() + seconds
        counts = {name: 0 for name in workloads}
        longest = {name: 0.0 for name in workloads}
        writers_slowest = [0.0]

        def slow(name):
            c = Conn(port)
            request = slow_request(name)
            while time.time() < stop_at:
                t = time.perf_counter()
                c.send(request)
                c.reply()
                longest[name] = max(longest[name], time.perf_counter() - t)
                counts[name] += 1
                if name == "cf-compact":
                    # Compaction emptied it: refill to the same 2,000 sub-filters.
                    for _ in range(4):
                        c.call("CF.INSERT", "slow:cf-compact", "MAXEXPANSIONS", "65535",
                               "ITEMS", *(["same"] * 1000))

        def writer(n):
            c = Conn(port)
            rng = random.Random(n)
            while time.time() < stop_at:
                t = time.perf_counter()
                c.call("BF.ADD", "w%d:%d" % (n, rng.randrange(1000000)), "x")
                writers_slowest[0] = max(writers_slowest[0], time.perf_counter() - t)

        tasks = [threading.Thread(target=slow, args=(name,)) for name in workloads]
        tasks += [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for t in tasks:
            t.start()
        # The PINGs from a process of their own: in this one, the slow commands' threads
        # (encoding and parsing a million items) would hold the interpreter's lock and
        # delay them.
        receive, send = multiprocessing.Pipe(duplex=False)
        pinger = multiprocessing.Process(target=ping_loop, args=(port, stop_at, send))
        pinger.start()
        pings = receive.recv()
        pinger.join()
        for t in tasks:
            t.join()
        pings.sort()
        p99 = pings[min(len(pings) - 1, int(len(pings) * 0.99))]
        print("| %s | %d | %.2f | %.2f | %.1f | %s | %.0f |" % (
            " + ".join(workloads), len(pings), statistics.median(pings) * 1000, p99 * 1000,
            pings[-1] * 1000,
            ", ".join("%s %d (longest %.0f ms)" % (n, counts[n], longest[n] * 1000)
                      for n in workloads),
            writers_slowest[0] * 1000))
        sys.stdout.flush()
    finally:
        try:
            Conn(port).call("SHUTDOWN", "NOSAVE")
        except OSError:
            pass
        proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bloomkit", required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workload", default="all")
    opts = parser.parse_args()
    every = ["cf-full", "cf-compact", "bf-madd", "bf-mexists", "keys"]
    workloads = every if opts.workload == "all" else [opts.workload]
    print("| slow commands (and 3 writers) | PINGs | median ms | p99 ms | max ms | slow commands run | writers' slowest ms |")
    print("|---|---|---|---|---|---|---|")
    run(opts.bloomkit, opts.seconds, opts.threads, workloads)


if __name__ == "__main__":
    main()
