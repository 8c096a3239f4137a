#!/usr/bin/env python3
"""`bloomkit copy` of one large filter between two local `bloomkit serve`: time and peak memory.

Usage (after `cargo build --release -p bloomkit-cli`):
    python3 scripts/bench_copy.py --bloomkit target/release/bloomkit \
        [--capacity 556000000] [--error-rate 0.001] [--items 1000000]

Starts two `bloomkit serve` on free loopback ports (each with its own data directory in a
temporary directory, snapshots and fsync left at their defaults), reserves `big` on the
first with BF.RESERVE (556,000,000 at 0.1% is 1.0 GB of bits), adds --items distinct items
with pipelined BF.MADD, then runs `/usr/bin/time -v bloomkit copy redis://A/big
redis://B/big` and reports: the copy's wall time and peak RSS (time's "Maximum resident set
size"), each server's peak RSS (VmHWM from /proc/PID/status) and its RSS before the copy,
and that BF.INFO agrees and every item is found at the destination. Needs only Python's
standard library and GNU time (/usr/bin/time).
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    """A minimal blocking RESP2 client: enough for RESERVE, MADD, INFO and MEXISTS."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.buf = self.sock.makefile("rb")

    def send(self, *args):
        self.sock.sendall(encode(*args))

    def read(self):
        line = self.buf.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.buf.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *args):
        self.send(*args)
        return self.read()


def serve(binary, directory):
    proc = subprocess.Popen(
        [binary, "serve", "--port", "0", "--dir", directory],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    line = proc.stdout.readline().decode().strip()
    if not line.startswith("listening on "):
        sys.exit("bloomkit serve did not start: %r" % line)
    return proc, line[len("listening on "):]


def rss(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024
    return fields


def mib(n):
    return "%.0f MiB" % (n / 2**20)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bloomkit", default="target/release/bloomkit")
    parser.add_argument("--capacity", type=int, default=556_000_000)
    parser.add_argument("--error-rate", default="0.001")
    parser.add_argument("--items", type=int, default=1_000_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        a, a_addr = serve(args.bloomkit, os.path.join(tmp, "a"))
        b, b_addr = serve(args.bloomkit, os.path.join(tmp, "b"))
        try:
            ca, cb = Conn(a_addr), Conn(b_addr)
            ca.call("BF.RESERVE", "big", args.error_rate, args.capacity)
            batch = 1000
            for start in range(0, args.items, batch * 50):
                sent = 0
                for s in range(start, min(start + batch * 50, args.items), batch):
                    ca.send("BF.MADD", "big", *("item-%d" % i for i in range(s, min(s + batch, args.items))))
                    sent += 1
                for _ in range(sent):
                    ca.read()
            info = ca.call("BF.INFO", "big")
            names = [n.decode() if isinstance(n, bytes) else n for n in info[::2]]
            size = dict(zip(names, info[1::2]))["Size"]
            before = {"source": rss(a.pid)["VmRSS"], "destination": rss(b.pid)["VmRSS"]}

            started = time.time()
            run = subprocess.run(
                ["/usr/bin/time", "-v", args.bloomkit, "copy",
                 "redis://%s/big" % a_addr, "redis://%s/big" % b_addr],
                capture_output=True, text=True,
            )
            wall = time.time() - started
            if run.returncode != 0:
                sys.exit("copy failed: %s" % run.stderr)
            copy_peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1)) * 1024
            summary = [l for l in run.stderr.splitlines() if l.startswith("bloomkit: copied")]
            after = {"source": rss(a.pid)["VmHWM"], "destination": rss(b.pid)["VmHWM"]}

            info_a = ca.call("BF.INFO", "big")
            info_b = cb.call("BF.INFO", "big")
            assert info_a == info_b, (info_a, info_b)
            missing = 0
            for s in range(0, args.items, batch):
                answers = cb.call("BF.MEXISTS", "big", *("item-%d" % i for i in range(s, min(s + batch, args.items))))
                missing += answers.count(0)
            assert missing == 0, "%d items not found at the destination" % missing

            print("filter: BF.RESERVE big %s %d (BF.INFO Size %s), %d items" % (
                args.error_rate, args.capacity, mib(size), args.items))
            print(summary[0] if summary else run.stderr)
            print("| process | peak RSS | RSS before the copy |")
            print("|---|---|---|")
            print("| bloomkit copy | %s | - |" % mib(copy_peak))
            print("| source bloomkit serve | %s | %s |" % (mib(after["source"]), mib(before["source"])))
            print("| destination bloomkit serve | %s | %s |" % (mib(after["destination"]), mib(before["destination"])))
            print("copy wall time: %.1f s (%.0f MiB/s); BF.INFO equal; all %d items found" % (
                wall, size / 2**20 / wall, args.items))
        finally:
            for p in (a, b):
                p.terminate()
                p.wait()


if __name__ == "__main__":
    main()
