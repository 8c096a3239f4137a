#!/usr/bin/env python3
"""redis-py's pipelines against a server: transactional (MULTI ... EXEC, redis-py's default)
and not, in RESP2 and RESP3, with errors at queue time and at run time, and WATCH.

Usage: python3 scripts/redis_py_transactions.py PORT  (needs the `redis` package; flushes
the server). Exits 0 when every check passes, else prints the first failure and exits 1.
Run by crates/bloomkit-server/tests/it/redis_py.rs (scripts/test.sh installs redis-py).
"""
import sys

import redis
from redis.exceptions import ExecAbortError, ResponseError, WatchError

port = int(sys.argv[1])


def check(what, got, expected):
    if got != expected:
        print(f"FAIL {what}: got {got!r}, expected {expected!r}")
        sys.exit(1)
    print(f"ok   {what}: {got!r}")


for proto in (2, 3):
    r = redis.Redis(port=port, protocol=proto)
    other = redis.Redis(port=port, protocol=proto)
    r.flushall()

    # The regression: the transactional pipeline raised although every write was applied,
    # and a client that retried applied them twice.
    pipe = r.pipeline()
    pipe.execute_command("CF.ADD", "cf", "item")
    pipe.execute_command("CF.COUNT", "cf", "item")
    pipe.execute_command("BF.ADD", "bf", "x")
    check(f"RESP{proto} transaction", pipe.execute(), [1, 1, 1])
    check(f"RESP{proto} applied once", r.execute_command("CF.COUNT", "cf", "item"), 1)

    # redis-py's own bf()/cf() API inside a transactional pipeline.
    pipe = r.pipeline()
    pipe.bf().add("bf", "y")
    pipe.bf().exists("bf", "y")
    check(f"RESP{proto} bf() pipeline", [bool(x) for x in pipe.execute()], [True, True])

    # Not transactional: the same commands, no MULTI.
    pipe = r.pipeline(transaction=False)
    pipe.execute_command("CF.ADD", "cf", "item")
    pipe.execute_command("CF.COUNT", "cf", "item")
    check(f"RESP{proto} plain pipeline", pipe.execute(), [1, 2])

    # A run-time error is that command's result; the others ran.
    pipe = r.pipeline()
    pipe.execute_command("CF.ADD", "cf", "other")
    pipe.execute_command("BF.ADD", "cf", "x")
    pipe.execute_command("CF.COUNT", "cf", "other")
    results = pipe.execute(raise_on_error=False)
    check(f"RESP{proto} run-time error", (results[0], type(results[1]).__name__, results[2]),
          (1, "ResponseError", 1))
    check(f"RESP{proto} its text", str(results[1]).startswith("WRONGTYPE"), True)

    # A queue-time error aborts the whole transaction: nothing ran.
    pipe = r.pipeline()
    pipe.execute_command("CF.ADD", "cf", "never")
    pipe.execute_command("NO.SUCH.COMMAND")
    try:
        pipe.execute()
        check(f"RESP{proto} queue-time error raises", "no error", "an error")
    except (ExecAbortError, ResponseError) as e:
        check(f"RESP{proto} queue-time error raises", "unknown command" in str(e) or "EXECABORT" in str(e), True)
    check(f"RESP{proto} nothing ran", r.execute_command("CF.COUNT", "cf", "never"), 0)

    # WATCH: a change by another client makes EXEC fail with WatchError...
    with r.pipeline() as pipe:
        pipe.watch("bf")
        pipe.multi()
        pipe.execute_command("BF.ADD", "bf", "mine")
        other.execute_command("BF.ADD", "bf", "theirs")
        try:
            pipe.execute()
            check(f"RESP{proto} WATCH", "executed", "WatchError")
        except WatchError:
            check(f"RESP{proto} WATCH", "WatchError", "WatchError")
    check(f"RESP{proto} not applied", r.execute_command("BF.EXISTS", "bf", "mine"), 0)

    # ... and redis-py's retrying helper gets through once nobody interferes.
    def add_if_absent(pipe):
        present = pipe.execute_command("BF.EXISTS", "bf", "helper")
        pipe.multi()
        if not present:
            pipe.execute_command("BF.ADD", "bf", "helper")

    check(f"RESP{proto} transaction()", r.transaction(add_if_absent, "bf"), [1])
    check(f"RESP{proto} helper applied", r.execute_command("BF.EXISTS", "bf", "helper"), 1)

print("all redis-py transaction checks passed")
