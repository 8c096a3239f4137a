"""redis-py's `bf().info()` and `cf().info()` against a server whose BF.INFO/CF.INFO carry
fields after RedisBloom's: RedisBloom's fields must still parse, in RESP2 and RESP3.

Usage: python3 scripts/redis_py_info.py PORT (a server on 127.0.0.1 with no key `rpi:*`).
"""

import sys

import redis


def fields(info, names):
    """The named fields: a BFInfo/CFInfo's attributes in RESP2, the map's in RESP3 (where
    redis-py returns the map itself)."""
    if isinstance(info, dict):
        return [info[key.encode()] for key in names.values()]
    return [getattr(info, attribute) for attribute in names]


def check(port, protocol):
    r = redis.Redis(port=port, protocol=protocol)
    bf, cf = f"rpi:bf{protocol}", f"rpi:cf{protocol}"
    r.delete(bf, cf)
    r.bf().create(bf, 0.01, 1000)
    r.bf().madd(bf, *range(300))
    info = r.bf().info(bf)
    names = {
        "capacity": "Capacity",
        "insertedNum": "Number of items inserted",
        "filterNum": "Number of filters",
        "expansionRate": "Expansion rate",
    }
    assert fields(info, names) == [1000, 300, 1, 2], fields(info, names)
    r.cf().create(cf, 1000)
    r.cf().add(cf, "a")
    info = r.cf().info(cf)
    names = {
        "insertedNum": "Number of items inserted",
        "bucketSize": "Bucket size",
        "maxIteration": "Max iterations",
    }
    assert fields(info, names) == [1, 2, 20], fields(info, names)
    if isinstance(info, dict):
        assert 0.0 < info[b"Load factor"] < 0.01, info
    r.delete(bf, cf)


def main():
    port = int(sys.argv[1])
    for protocol in (2, 3):
        check(port, protocol)
    print("all redis-py info checks passed")


if __name__ == "__main__":
    main()
