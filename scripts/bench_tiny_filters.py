#!/usr/bin/env python3
"""Resident memory of `bloomkit serve` full of tiny filters, against its --maxmemory.

Usage (after `cargo build --release`):
    python3 scripts/bench_tiny_filters.py BINARY [MAXMEMORY_MB]

Starts `BINARY serve --maxmemory <MAXMEMORY_MB>mb` (default 700) on a scratch directory,
sends pipelined `BF.ADD tiny:<i> x` (a filter of the default capacity each) until the first
OOM, then prints the number of filters, used_memory, VmRSS and VmRSS / maxmemory.
`crates/bloomkit-cli/tests/it/serve_memory.rs` checks the same at 64 MB; this script runs the
million-filter end. Plain sockets only.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def bulk(self):
        n = int(self.line()[1:])
        while len(self.buf) < n + 2:
            self.buf += self.sock.recv(1 << 20)
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data


def main():
    binary = sys.argv[1]
    maxmemory = int(sys.argv[2]) if len(sys.argv) > 2 else 700
    scratch = tempfile.mkdtemp()
    server = subprocess.Popen(
        [binary, "serve", "--port", "0", "--dir", os.path.join(scratch, "data"),
         "--maxmemory", "%dmb" % maxmemory, "--appendfsync", "no", "--loglevel", "warning"],
        stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().rsplit(":", 1)[1])
        c = Conn(port)
        keys, full = 0, False
        while not full:
            c.sock.sendall(b"".join(encode("BF.ADD", "tiny:%d" % i, "x")
                                    for i in range(keys, keys + 1000)))
            for _ in range(1000):
                reply = c.line()
                if reply == b":1":
                    keys += 1
                elif reply.startswith(b"-OOM"):
                    full = True
                else:
                    raise RuntimeError(reply)
        c.sock.sendall(encode("INFO", "memory"))
        info = c.bulk().decode()
        used = int(next(l.split(":")[1] for l in info.splitlines()
                        if l.startswith("used_memory:")))
        resident = rss(server.pid)
        limit = maxmemory << 20  # Redis reads "mb" as MiB
        print("%d tiny filters under --maxmemory %dmb: used_memory %.1f MB, VmRSS %.1f MB "
              "(%.2fx maxmemory)" % (keys, maxmemory, used / 1e6, resident / 1e6,
                                    resident / limit))
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
