#!/usr/bin/env python3
"""bloomkit serve beside RedisBloom, in one run on one machine: throughput and memory.

Usage (after `cargo build --release`; see BENCHMARKS.md for how to get redisbloom.so):
    python3 scripts/bench_server.py --bloomkit target/release/bloomkit \
        --redisbloom-so /path/to/redisbloom.so [--requests 1000000] [--filters 100]

Starts both servers on free loopback ports with the same durability (append-only log,
fsync every second, no snapshots during the run), then:
  throughput: reserves `bench:bf` (50,000,000 at 1%) and `bench:cf` (16,000,000) on both,
     then redis-benchmark, 50 clients, for BF.ADD, BF.EXISTS, BF.MADD (10 items), CF.ADD,
     CF.EXISTS, each without pipelining and with -P 16; requests per second (median of
     three runs) and their ratio, and each server's CPU time per request (user + system,
     all threads and reaped children, from /proc: the work a request costs, whatever the
     load generator leaves of the machine) and the ratio RedisBloom's / ours;
  memory (first, on fresh processes): N Bloom filters reserved for 1,000,000 items at 1%,
     each filled with 1,000,000 distinct items, then 10,000 absent items per filter queried:
     the filters' own sizes (BF.INFO SIZE), each server's `used_memory`, the growth of its
     process RSS, and the measured false-positive rate;
Prints Markdown tables. Needs `redis-benchmark` (Debian's redis-tools) and the `redis`
Python package.
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


def benchmark(port, pid, command, pipeline, requests):
    """Requests per second and the server's CPU microseconds per request, for one
    redis-benchmark run (each the median of three)."""
    rates = []
    cpu = []
    for _ in range(3):
        before = cpu_seconds(pid)
        out = subprocess.run(
            ["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(requests),
             "-r", "100000000", "-P", str(pipeline), "--csv"] + command.split(),
            check=True, capture_output=True, text=True).stdout
        # --csv: a header line, then "name","rps",... for the one test.
        line = [l for l in out.strip().splitlines() if not l.startswith('"test"')][-1]
        rates.append(float(line.split(",")[1].strip('"')))
        cpu.append((cpu_seconds(pid) - before) * 1e6 / requests)
    return statistics.median(rates), statistics.median(cpu)


COMMANDS = [
    "BF.ADD bench:bf __rand_int__",
    "BF.EXISTS bench:bf __rand_int__",
    "BF.MADD bench:bf __rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__ "
    "__rand_int__ __rand_int__ __rand_int__ __rand_int__ __rand_int__",
    "CF.ADD bench:cf __rand_int__",
    "CF.EXISTS bench:cf __rand_int__",
]


def filter_size(client, key):
    """BF.INFO key SIZE (redis-py may hand the reply back as a list or a dict)."""
    reply = client.execute_command("BF.INFO", key, "SIZE")
    values = list(reply.values()) if isinstance(reply, dict) else list(reply)
    return int(values[0])


def fill_and_measure(client, filters, capacity, probes_per_filter):
    """Reserve, fill each filter with `capacity` distinct items, probe absent ones."""
    for f in range(filters):
        client.execute_command("BF.RESERVE", "mem:%d" % f, 0.01, capacity)
    batch = 1000
    for f in range(filters):
        pipe = client.pipeline(transaction=False)
        for start in range(0, capacity, batch):
            items = ["%d:%d" % (f, i) for i in range(start, min(start + batch, capacity))]
            pipe.execute_command("BF.MADD", "mem:%d" % f, *items)
            if len(pipe) >= 50:
                pipe.execute()
        pipe.execute()
    positives = 0
    probes = 0
    for f in range(filters):
        items = ["absent:%d:%d" % (f, i) for i in range(probes_per_filter)]
        for start in range(0, len(items), batch):
            answers = client.execute_command("BF.MEXISTS", "mem:%d" % f,
                                             *items[start:start + batch])
            positives += sum(1 for a in answers if a)
            probes += len(answers[:])
    return positives / probes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bloomkit", required=True, help="path to the bloomkit binary")
    ap.add_argument("--redisbloom-so", required=True, help="path to RedisBloom's module")
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--requests", type=int, default=1000000)
    ap.add_argument("--filters", type=int, default=100)
    ap.add_argument("--capacity", type=int, default=1000000)
    ap.add_argument("--probes", type=int, default=10000, help="absent probes per filter")
    ap.add_argument("--threads", type=int, help="bloomkit serve --threads (default: its own)")
    ap.add_argument("--skip-memory", action="store_true", help="throughput only")
    ap.add_argument("--skip-throughput", action="store_true", help="memory only")
    opts = ap.parse_args()

    work = tempfile.mkdtemp(prefix="bloomkit-bench-")
    ours_port, theirs_port = free_port(), free_port()
    threads = ["--threads", str(opts.threads)] if opts.threads else []
    ours = subprocess.Popen(
        [opts.bloomkit, "serve", "--port", str(ours_port), "--dir",
         os.path.join(work, "bloomkit"), "--appendfsync", "everysec"] + threads,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    theirs = subprocess.Popen(
        [opts.redis_server, "--port", str(theirs_port), "--loadmodule", opts.redisbloom_so,
         "--dir", work, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(ours_port, ours, "bloomkit")
        wait_ready(theirs_port, theirs, "redis-server")
        servers = [("bloomkit", ours_port, ours), ("RedisBloom", theirs_port, theirs)]
        # Memory first, on fresh processes, so that RSS starts from a clean baseline.
        if not opts.skip_memory:
            print("\n## Memory: %d filters of %d capacity at 1%%, each filled\n"
                  % (opts.filters, opts.capacity))
            print("| server | BF.INFO Size, summed | used_memory | RSS | measured false-positive rate |")
            print("|---|---|---|---|---|")
            for name, port, proc in servers:
                client = redis.Redis(port=port)
                client.flushall()
                base_rss = rss_bytes(proc.pid)
                base_used = used_memory(client)
                rate = fill_and_measure(client, opts.filters, opts.capacity, opts.probes)
                used = used_memory(client) - base_used
                rss = rss_bytes(proc.pid) - base_rss
                sizes = sum(filter_size(client, "mem:%d" % f) for f in range(opts.filters))
                print("| %s | %.1f MiB | %.1f MiB | %.1f MiB | %.3f%% |"
                      % (name, sizes / 2**20, used / 2**20, rss / 2**20, 100 * rate), flush=True)

        if not opts.skip_throughput:
            # Reserved up front, the same on both, so that neither runs out of room (a cuckoo
            # filter created by CF.ADD holds 1024 items × 32 sub-filters) nor measures a chain
            # of layers grown from BF.ADD's default capacity of 100.
            for _, port, _ in servers:
                client = redis.Redis(port=port)
                client.flushall()
                client.execute_command("BF.RESERVE", "bench:bf", 0.01, 50_000_000)
                client.execute_command("CF.RESERVE", "bench:cf", 16_000_000)

            print("## Throughput: redis-benchmark -c 50, requests/s (median of 3); bloomkit %s\n"
                  % ("--threads %d" % opts.threads if opts.threads else "with a thread per core"))
            print("| command | pipeline | bloomkit | RedisBloom | ratio | bloomkit CPU µs/request "
                  "| RedisBloom CPU µs/request | CPU ratio |")
            print("|---|---|---|---|---|---|---|---|")
            for command in COMMANDS:
                for pipeline in (1, 16):
                    requests = opts.requests if pipeline > 1 else max(opts.requests // 5, 1000)
                    a, a_cpu = benchmark(ours_port, ours.pid, command, pipeline, requests)
                    b, b_cpu = benchmark(theirs_port, theirs.pid, command, pipeline, requests)
                    name = command.split()[0]
                    print("| %s | %d | %.0f | %.0f | %.2f× | %.2f | %.2f | %.2f× |"
                          % (name, pipeline, a, b, a / b, a_cpu, b_cpu, b_cpu / a_cpu),
                          flush=True)
    finally:
        for proc in (ours, theirs):
            proc.send_signal(signal.SIGTERM)
        for proc in (ours, theirs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
