#!/usr/bin/env python3
"""redis-py's bf()/cf() API against a server: run it against bloomkit and against RedisBloom and diff.

Usage: python3 scripts/redis_py_session.py PORT > out.txt  (needs the `redis` package;
flushes the server). Prints every answer, RESP2 then RESP3; `diff` the two outputs.
"""
import redis, sys

# Fields bloomkit's BF.INFO/CF.INFO answer after RedisBloom's (docs/SERVER.md, "Commands
# beyond RedisBloom"): RESP3 gives redis-py the whole map, so they are left out here.
BLOOMKIT_FIELDS = {b"Fill", b"Estimated items", b"Estimated error rate", b"Load factor"}


def redisbloom_fields(info):
    return {k: v for k, v in info.items() if k not in BLOOMKIT_FIELDS}


port = int(sys.argv[1])
for proto in (2, 3):
    r = redis.Redis(port=port, protocol=proto, decode_responses=False)
    r.flushall()
    bf, cf = r.bf(), r.cf()
    print(proto, bf.create("b", 0.01, 1000), bf.add("b", "x"), bf.madd("b", "y", "z"), bf.exists("b", "x"), bf.mexists("b", "x", "q"), bf.card("b"))
    info = bf.info("b"); print(" info", sorted(redisbloom_fields(info).items()) if isinstance(info, dict) else (info.capacity, info.size, info.filterNum, info.insertedNum, info.expansionRate))
    print(" insert", bf.insert("b2", ["a", "b"], capacity=10, error=0.001))
    # scandump/loadchunk round trip
    it = 0; chunks = []
    while True:
        it, data = bf.scandump("b", it)
        if it == 0: break
        chunks.append((it, data))
    for it, data in chunks: bf.loadchunk("b3", it, data)
    print(" restored", bf.mexists("b3", "x", "y", "z", "q"))
    print(" cf", cf.create("c", 1000), cf.add("c", "x"), cf.addnx("c", "x"), cf.insert("c", ["a", "b"]), cf.insertnx("c", ["a", "n"]), cf.exists("c", "x"), cf.mexists("c", "x", "q"), cf.count("c", "x"), cf.delete("c", "x"))
    ci = cf.info("c"); print(" cfinfo", sorted(redisbloom_fields(ci).items()) if isinstance(ci, dict) else (ci.size, ci.bucketNum, ci.filterNum, ci.insertedNum, ci.deletedNum, ci.bucketSize, ci.expansionRate, ci.maxIteration))
    it = 0; chunks = []
    while True:
        it, data = cf.scandump("c", it)
        if it == 0: break
        chunks.append((it, data))
    for it, data in chunks: cf.loadchunk("c3", it, data)
    print(" cfrestored", cf.mexists("c3", "a", "b", "n", "q"))
    print(" generic", r.type("b"), r.type("c"), r.dbsize(), sorted(r.keys("*")), r.expire("b", 100), r.ttl("b"), r.delete("b2"))
    # What RedisBloom's clients and test suites send besides the filter commands (the
    # module's version and path differ: only its name is printed).
    print(" debug", r.execute_command("BF.DEBUG", "b"), r.execute_command("CF.DEBUG", "c"), r.execute_command("CF.COMPACT", "c"))
    print(" keys", r.touch("b", "c", "nokey"), r.object("encoding", "b"), r.object("refcount", "c"), r.object("idletime", "b") < 5, r.randomkey() in r.keys("*"))
    print(" server", r.info("cluster")["cluster_enabled"], [m[b"name"] if b"name" in m else m["name"] for m in r.module_list()], "bf" in str(r.info("modules")), r.execute_command("DEBUG", "RELOAD"), bf.exists("b", "x"), cf.count("c", "a"))
    print(" dump", r.restore("b4", 0, r.dump("b")), bf.mexists("b4", "x", "q"), r.restore("c4", 0, r.dump("c")), cf.count("c4", "a"), r.type("c4"))
