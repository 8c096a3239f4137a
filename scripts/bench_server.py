#!/usr/bin/env python3
"""bloomkit serve beside RedisBloom, in one run on one machine: throughput and memory.

Usage (after `cargo build --release`; see BENCHMARKS.md for how to get redisbloom.so):
    python3 scripts/bench_server.py --bloomkit target/release/bloomkit \
        --redisbloom-so /path/to/redisbloom.so [--requests 1000000] [--filters 100] \
        [--layouts classic,blocked]

Starts RedisBloom (in redis-server) and one `bloomkit serve` per BF.* layout (`CONFIG SET
bf-layout`) on free loopback ports, all with the same durability (append-only log, fsync
every second, no snapshots during the run), then:
  memory (first, on fresh processes): N Bloom filters reserved for 1,000,000 items at 1%,
     each filled with 1,000,000 distinct items, then 10,000 absent items per filter queried:
     the filters' own sizes (BF.INFO SIZE), each server's `used_memory`, the growth of its
     process RSS, and the measured false-positive rate;
  throughput: reserves `bench:bf` (50,000,000 at 1%), `bench:cf` (16,000,000) and
     `bench:big` (100,000,000 at 1%) on each, then redis-benchmark, 50 clients, for BF.ADD,
     BF.EXISTS, CF.ADD, CF.EXISTS, and BF.MADD / BF.MEXISTS of 100 items into `bench:big`,
     each without pipelining and with -P 16; requests per second (median of five runs, the
     servers taking turns run by run),
     their ratio to RedisBloom's, and each server's CPU time per request (user + system, all
     threads and reaped children, from /proc: the work a request costs, whatever the load
     generator leaves of the machine).
Prints Markdown tables. Needs `redis-benchmark` and `redis-cli` (Debian's redis-tools) and
the `redis` Python package. `scripts/bench_module.py` uses the same tables for the module.
"""

import argparse
import os
import shutil
import signal
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


def wait_ready(port, proc, name):
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit("%s exited during start-up (status %s)" % (name, proc.returncode))
        try:
            if redis.Redis(port=port).ping():
                return
        except redis.exceptions.ConnectionError:
            time.sleep(0.1)
    sys.exit("%s did not answer PING within 60 s" % name)


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def used_memory(client):
    return int(client.info("memory")["used_memory"])


def cpu_seconds(pid):
    """User plus system CPU time of a process so far: all its threads, and the children it
    has reaped (Redis rewrites its append-only file in a forked child; bloomkit writes its
    snapshots on a thread of its own, already counted)."""
    with open("/proc/%d/stat" % pid) as f:
        # The command name (field 2) may hold spaces; the fields after it are plain:
        # utime, stime, cutime, cstime are fields 14 to 17.
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def benchmark_once(port, pid, command, pipeline, requests):
    """Requests per second and the server's CPU microseconds per request, for one
    redis-benchmark run."""
    before = cpu_seconds(pid)
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(requests),
         "-r", "100000000", "-P", str(pipeline), "--csv"] + command.split(),
        check=True, capture_output=True, text=True).stdout
    # --csv: a header line, then "name","rps",... for the one test.
    line = [l for l in out.strip().splitlines() if not l.startswith('"test"')][-1]
    return float(line.split(",")[1].strip('"')), (cpu_seconds(pid) - before) * 1e6 / requests


# Runs of each row per server. The servers take turns, run by run, so that a slow spell of a
# shared machine falls on all of them rather than on one server's runs.
ROUNDS = 5


def benchmark_all(servers, command, pipeline, requests):
    """For each server, the median rate and CPU per request of ROUNDS runs, taken in turns."""
    runs = [[] for _ in servers]
    for _ in range(ROUNDS):
        for i, (_, port, proc) in enumerate(servers):
            runs[i].append(benchmark_once(port, proc.pid, command, pipeline, requests))
    return [(statistics.median(r for r, _ in run), statistics.median(c for _, c in run))
            for run in runs]


# The small commands, on keys reserved alike on every server (`reserve_benchmark_keys`).
SMALL = [
    "BF.ADD bench:bf __rand_int__",
    "BF.EXISTS bench:bf __rand_int__",
    "CF.ADD bench:cf __rand_int__",
    "CF.EXISTS bench:cf __rand_int__",
]
# The batches of issue 15 §4: 100 random items into a filter reserved for 100,000,000 items
# at 1% (138 MB of bits in the classic layout: out of cache, where the layout decides).
ITEMS = " ".join(["__rand_int__"] * 100)
BIG = [
    "BF.MADD bench:big " + ITEMS,
    "BF.MEXISTS bench:big " + ITEMS,
]


def filter_size(client, key):
    """BF.INFO key SIZE (redis-py may hand the reply back as a list or a dict)."""
    reply = client.execute_command("BF.INFO", key, "SIZE")
    values = list(reply.values()) if isinstance(reply, dict) else list(reply)
    return int(values[0])


def fill(port, filters, capacity, batch=1000):
    """Each filter `mem:F` filled with `capacity` distinct items (`F:I`), by `BF.MADD` of
    `batch`, through `redis-cli --pipe` (a Python client spent more time than the servers)."""
    pipe = subprocess.Popen(["redis-cli", "-p", str(port), "--pipe"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for f in range(filters):
        key = b"mem:%d" % f
        for start in range(0, capacity, batch):
            n = min(batch, capacity - start)
            head = b"*%d\r\n$7\r\nBF.MADD\r\n$%d\r\n%s\r\n" % (n + 2, len(key), key)
            items = b"".join(b"$%d\r\n%s\r\n" % (len(x), x)
                             for x in (b"%d:%d" % (f, i) for i in range(start, start + n)))
            pipe.stdin.write(head + items)
    out, _ = pipe.communicate()
    # redis-cli --pipe ends with "errors: E, replies: R".
    if pipe.returncode != 0 or b"errors: 0," not in out:
        sys.exit("filling the filters failed: %s" % out.decode(errors="replace")[-500:])


def fill_and_measure(client, port, filters, capacity, probes_per_filter):
    """Reserve, fill each filter with `capacity` distinct items, probe absent ones: the
    measured false-positive rate."""
    for f in range(filters):
        client.execute_command("BF.RESERVE", "mem:%d" % f, 0.01, capacity)
    fill(port, filters, capacity)
    positives = 0
    probes = 0
    batch = 1000
    for f in range(filters):
        items = ["absent:%d:%d" % (f, i) for i in range(probes_per_filter)]
        for start in range(0, len(items), batch):
            answers = client.execute_command("BF.MEXISTS", "mem:%d" % f,
                                             *items[start:start + batch])
            positives += sum(1 for a in answers if a)
            probes += len(answers[:])
    return positives / probes


def memory(servers, filters, capacity, probes):
    """The memory table: each server (name, port, process) fresh, RedisBloom's first."""
    print("\n## Memory: %d filters of %d at 1%%, each filled\n" % (filters, capacity))
    print("| server | BF.INFO Size, summed | used_memory | RSS | measured false-positive rate |")
    print("|---|---|---|---|---|")
    for name, port, proc in servers:
        client = redis.Redis(port=port)
        client.flushall()
        base_rss, base_used = rss_bytes(proc.pid), used_memory(client)
        rate = fill_and_measure(client, port, filters, capacity, probes)
        used = used_memory(client) - base_used
        rss = rss_bytes(proc.pid) - base_rss
        sizes = sum(filter_size(client, "mem:%d" % f) for f in range(filters))
        print("| %s | %.1f MiB | %.1f MiB | %.1f MiB | %.3f%% |"
              % (name, sizes / 2**20, used / 2**20, rss / 2**20, 100 * rate), flush=True)
        client.flushall()


def reserve_benchmark_keys(client):
    """The keys the throughput commands use, reserved the same on every server, so that none
    runs out of room (a cuckoo filter created by CF.ADD holds 1024 items × 32 sub-filters)
    nor measures a chain of layers grown from BF.ADD's default capacity of 100."""
    client.flushall()
    client.execute_command("BF.RESERVE", "bench:bf", 0.01, 50_000_000)
    client.execute_command("CF.RESERVE", "bench:cf", 16_000_000)
    client.execute_command("BF.RESERVE", "bench:big", 0.01, 100_000_000)


def throughput(servers, requests):
    """The throughput table: every server (the first, RedisBloom, the base of the ratios)
    through the same redis-benchmark runs, one server after the other for each row."""
    for _, port, _ in servers:
        reserve_benchmark_keys(redis.Redis(port=port))
    names = [name for name, _, _ in servers]
    print("\n## Throughput: redis-benchmark -c 50, requests/s (median of %d, the servers in turns)\n" % ROUNDS)
    print("| command | pipeline | " + " | ".join(names) + " | " + " | ".join(
        "%s / RedisBloom" % n for n in names[1:]) + " | " + " | ".join(
        "%s CPU µs/request" % n for n in names) + " |")
    print("|" + "---|" * (2 + len(names) + len(names) - 1 + len(names)))
    for command in SMALL + BIG:
        for pipeline in (1, 16):
            n = requests if command in SMALL else requests // 10
            n = n if pipeline > 1 else max(n // 5, 1000)
            results = benchmark_all(servers, command, pipeline, n)
            base = results[0][0]
            print("| %s | %d | %s | %s | %s |" % (
                command.split()[0], pipeline,
                " | ".join("%.0f" % r for r, _ in results),
                " | ".join("%.2f×" % (r / base) for r, _ in results[1:]),
                " | ".join("%.2f" % c for _, c in results)), flush=True)


def start_redis(redis_server, work, name, module, module_args):
    """redis-server on a free loopback port with `module` loaded, the durability every server
    here has (append-only file, fsync every second, no RDB snapshots), its files in
    `work/name`: the (name, port, process) the tables take."""
    port = free_port()
    directory = os.path.join(work, name)
    os.makedirs(directory)
    proc = subprocess.Popen(
        [redis_server, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
         "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
         "--loadmodule", module] + module_args,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc, name)
    return name, port, proc


def stop(servers):
    for _, _, proc in servers:
        proc.send_signal(signal.SIGTERM)
    for _, _, proc in servers:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bloomkit", required=True, help="path to the bloomkit binary")
    ap.add_argument("--redisbloom-so", required=True, help="path to RedisBloom's module")
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--requests", type=int, default=1000000,
                    help="small commands pipelined; a fifth unpipelined, a tenth for batches")
    ap.add_argument("--layouts", default="classic,blocked",
                    help="bloomkit's BF.* layouts to measure (bf-layout): classic, blocked or both")
    ap.add_argument("--filters", type=int, default=100)
    ap.add_argument("--capacity", type=int, default=1000000)
    ap.add_argument("--probes", type=int, default=10000, help="absent probes per filter")
    ap.add_argument("--threads", type=int, help="bloomkit serve --threads (default: its own)")
    ap.add_argument("--skip-memory", action="store_true", help="throughput only")
    ap.add_argument("--skip-throughput", action="store_true", help="memory only")
    opts = ap.parse_args()

    work = tempfile.mkdtemp(prefix="bloomkit-bench-")
    threads = ["--threads", str(opts.threads)] if opts.threads else []
    layouts = [l.strip() for l in opts.layouts.split(",") if l.strip()]
    # A run stopped with SIGTERM still stops its servers and removes their files.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    servers = []
    print("Load average at the start (1, 5, 15 min): %s" % load_average())
    try:
        servers.append(start_redis(opts.redis_server, work, "RedisBloom", opts.redisbloom_so,
                                   []))
        for layout in layouts:
            port = free_port()
            proc = subprocess.Popen(
                [opts.bloomkit, "serve", "--port", str(port), "--dir",
                 os.path.join(work, "bloomkit-" + layout), "--appendfsync", "everysec"]
                + threads, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            servers.append(("bloomkit " + layout, port, proc))
            wait_ready(port, proc, "bloomkit serve")
            redis.Redis(port=port).config_set("bf-layout", layout)
        # Memory first, on fresh processes, so that RSS starts from a clean baseline.
        if not opts.skip_memory:
            memory(servers, opts.filters, opts.capacity, opts.probes)
        if not opts.skip_throughput:
            print("\nbloomkit serve %s" % ("--threads %d" % opts.threads if opts.threads
                                            else "with a thread per core"))
            throughput(servers, opts.requests)
    finally:
        stop(servers)
        shutil.rmtree(work, ignore_errors=True)
    print("\nLoad average at the end (1, 5, 15 min): %s" % load_average())


if __name__ == "__main__":
    main()
