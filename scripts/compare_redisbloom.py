#!/usr/bin/env python3
"""Send the same commands to bloomkit and to a real RedisBloom; print every difference.

Usage:
    python3 scripts/compare_redisbloom.py --ours 6379 --theirs 7379
    python3 scripts/compare_redisbloom.py --ours 6380 --theirs 7379 --host module --only-unlisted-fail

Both servers must be running on 127.0.0.1 and be empty (or disposable: every case works
on its own key and deletes it first; the RANDOMKEY case flushes everything). Start Redis with
`--enable-debug-command yes`, as RedisBloom's own test suite does, for the DEBUG RELOAD
case. See docs/SERVER.md ("Comparing with RedisBloom") for how to start a RedisBloom here. Replies are compared as raw RESP bytes, in RESP2 and again
in RESP3 (after HELLO 3), so a simple string where the other sends a bulk string, or an
integer where the other sends a boolean, is a difference too.

`--host` names what runs on `--ours`: `bloomkit serve` (`server`, the default) or Redis with
bloomkit's module (`module`), whose generic commands are Redis's own; each has its list of
known, documented differences (docs/SERVER.md, docs/MODULE.md).

Exit status: 0 if every reply matched, 1 otherwise. Differences that are known and
documented are marked KNOWN; they still count as differences, unless --only-unlisted-fail
is given (then only an unlisted difference fails).
"""

import argparse
import socket
import sys


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def reply(self):
        """One whole reply, as the raw bytes the server sent."""
        line = self._line()
        tag, rest = line[:1], line[1:]
        raw = line + b"\r\n"
        if tag in (b"+", b"-", b":", b"_", b",", b"#", b"("):
            return raw
        if tag in (b"$", b"=", b"!"):
            n = int(rest)
            if n < 0:
                return raw
            return raw + self._exact(n + 2)
        if tag in (b"*", b"~", b">", b"%", b"|"):
            n = int(rest)
            if n < 0:
                return raw
            count = n * 2 if tag in (b"%", b"|") else n
            return raw + b"".join(self.reply() for _ in range(count))
        raise ValueError("unexpected reply %r" % line)

    def run(self, args):
        self.sock.sendall(encode(args))
        return self.reply()

    def run_value(self, args):
        """A command's reply as a value: a bulk string's bytes, an array's list of them."""
        return parse(self.run(args))[0]


def parse(raw):
    """The value of one raw reply, and the bytes after it (bulk strings and arrays only)."""
    line, rest = raw.split(b"\r\n", 1)
    tag = line[:1]
    if tag == b"$":
        n = int(line[1:])
        if n < 0:
            return None, rest
        return rest[:n], rest[n + 2:]
    if tag == b"*":
        items = []
        for _ in range(int(line[1:])):
            item, rest = parse(rest)
            items.append(item)
        return items, rest
    return line, rest


# Each case: a name and a list of commands (space-separated words, or lists for binary
# arguments). Each case's key is deleted on both servers before it runs.
CASES = [
    ("bf basics", ["BF.ADD bk a", "BF.ADD bk a", "BF.EXISTS bk a", "BF.EXISTS bk zz",
                   "BF.MADD bk a b c", "BF.MEXISTS bk a b zz", "BF.CARD bk", "BF.CARD nokey",
                   "BF.EXISTS nokey a", "BF.MEXISTS nokey a b", "TYPE bk"]),
    ("bf reserve errors", ["BF.RESERVE bk abc 100", "BF.RESERVE bk 0 100", "BF.RESERVE bk 1 100",
                           "BF.RESERVE bk -0.5 100", "BF.RESERVE bk 0.01 abc",
                           "BF.RESERVE bk 0.01 0", "BF.RESERVE bk 0.01 1073741825",
                           "BF.RESERVE bk 0.01 100 EXPANSION", "BF.RESERVE bk 0.01 100 EXPANSION x",
                           "BF.RESERVE bk 0.01 100 EXPANSION 2 NONSCALING",
                           "BF.RESERVE bk 0.01 100 EXPANSION 40000",
                           "BF.RESERVE bk 0.01 100", "BF.RESERVE bk 0.01 100",
                           "BF.RESERVE bk2 0.01 100 whatever", "DEL bk2",
                           "BF.RESERVE", "BF.RESERVE bk", "BF.RESERVE bk 0.01"]),
    ("bf info", ["BF.RESERVE bk 0.01 100", "BF.ADD bk x", "BF.INFO bk CAPACITY",
                 "BF.INFO bk ITEMS", "BF.INFO bk FILTERS", "BF.INFO bk EXPANSION",
                 "BF.INFO bk bogus", "BF.INFO nokey", "BF.INFO nokey ITEMS"]),
    ("bf info nonscaling", ["BF.RESERVE bk 0.01 10 NONSCALING", "BF.INFO bk EXPANSION"]),
    ("bf nonscaling full", ["BF.RESERVE bk 0.01 3 NONSCALING", "BF.MADD bk a b c d e",
                            "BF.ADD bk f", "BF.CARD bk"]),
    ("bf scaling", ["BF.RESERVE bk 0.01 10"] + ["BF.ADD bk %d" % i for i in range(100)]
     + ["BF.INFO bk CAPACITY", "BF.INFO bk FILTERS", "BF.CARD bk"]),
    ("bf insert", ["BF.INSERT bk CAPACITY 50 ERROR 0.001 ITEMS a b", "BF.INFO bk CAPACITY",
                   "BF.INSERT bk NOCREATE ITEMS c", "BF.INSERT nokey NOCREATE ITEMS c",
                   "BF.INSERT bk CAPACITY x ITEMS a", "BF.INSERT bk ERROR x ITEMS a",
                   "BF.INSERT bk EXPANSION x ITEMS a", "BF.INSERT bk BOGUS ITEMS a",
                   "BF.INSERT bk ITEMS", "BF.INSERT bk", "BF.INSERT bk CAPACITY 10"]),
    ("bf wrong type", ["CF.ADD bk a", "BF.ADD bk a", "BF.EXISTS bk a", "BF.CARD bk",
                       "BF.INFO bk", "BF.MADD bk a"]),
    ("bf arity", ["BF.ADD bk", "BF.ADD", "BF.EXISTS bk", "BF.MADD bk", "BF.MEXISTS bk",
                  "BF.CARD", "BF.INFO", "BF.SCANDUMP bk", "BF.LOADCHUNK bk 1"]),
    ("bf scandump errors", ["BF.SCANDUMP nokey 0", "BF.ADD bk a", "BF.SCANDUMP bk x"]),
    ("cf basics", ["CF.ADD ck a", "CF.ADD ck a", "CF.ADDNX ck a", "CF.ADDNX ck b",
                   "CF.EXISTS ck a", "CF.EXISTS ck zz", "CF.MEXISTS ck a b zz", "CF.COUNT ck a",
                   "CF.COUNT ck zz", "CF.DEL ck a", "CF.COUNT ck a", "CF.DEL ck zz",
                   "CF.DEL nokey a", "CF.EXISTS nokey a", "CF.COUNT nokey a", "TYPE ck"]),
    ("cf reserve errors", ["CF.RESERVE ck abc", "CF.RESERVE ck 0", "CF.RESERVE ck 3",
                           "CF.RESERVE ck 1000 BUCKETSIZE x", "CF.RESERVE ck 1000 BUCKETSIZE 0",
                           "CF.RESERVE ck 1000 BUCKETSIZE 300",
                           "CF.RESERVE ck 1000 MAXITERATIONS x",
                           "CF.RESERVE ck 1000 MAXITERATIONS 0",
                           "CF.RESERVE ck 1000 EXPANSION x", "CF.RESERVE ck 1000 EXPANSION 40000",
                           "CF.RESERVE ck 1000", "CF.RESERVE ck 1000", "CF.RESERVE"]),
    ("cf info", ["CF.RESERVE ck 1000", "CF.ADD ck a", "CF.ADD ck b", "CF.DEL ck a",
                 "CF.INFO ck", "CF.INFO nokey"]),
    ("cf insert", ["CF.INSERT ck CAPACITY 100 ITEMS a b a", "CF.INSERTNX ck ITEMS a c",
                   "CF.INSERT nokey NOCREATE ITEMS a", "CF.INSERT ck ITEMS", "CF.INSERT ck",
                   "CF.INSERT ck BOGUS ITEMS a", "CF.INSERT ck CAPACITY x ITEMS a"]),
    ("cf full", ["CF.RESERVE ck 4 BUCKETSIZE 2 EXPANSION 0"]
     + ["CF.ADD ck %d" % i for i in range(20)]),
    ("cf wrong type", ["BF.ADD ck a", "CF.ADD ck a", "CF.EXISTS ck a", "CF.COUNT ck a",
                       "CF.DEL ck a", "CF.INFO ck"]),
    ("cf scandump errors", ["CF.SCANDUMP nokey 0", "CF.ADD ck a", "CF.SCANDUMP ck x",
                            "CF.LOADCHUNK ck2 x abc"]),
    ("generic", ["PING", "PING hi", "ECHO hello", "SELECT 0", "SELECT 1", "EXISTS nokey",
                 "TYPE nokey", "DEL nokey", "FOOBAR a b", "BF.FOO k"]),
    ("expiry", ["BF.ADD ek a", "TTL ek", "EXPIRE ek 100", "TTL ek", "PERSIST ek", "TTL ek",
                "PTTL nokey"]),
    # Issue 12 §7: the rest of what RedisBloom's clients and tests send.
    ("bf debug", ["BF.RESERVE bk 0.01 1000000", "BF.DEBUG bk", "BF.ADD bk a", "BF.DEBUG bk",
                  "BF.INFO bk", "BF.INFO bk SIZE", "BF.DEBUG nokey", "BF.DEBUG", "BF.DEBUG bk x",
                  "CF.ADD ck a", "BF.DEBUG ck"]),
    ("bf debug layers", ["BF.RESERVE bk 0.001 10 EXPANSION 3"]
     + ["BF.ADD bk %d" % i for i in range(100)] + ["BF.DEBUG bk", "BF.INFO bk SIZE"]),
    ("bf info size", ["BF.RESERVE bk 0.0001 12345 EXPANSION 4"]
     + ["BF.MADD bk " + " ".join("x%d" % (i * 100 + j) for j in range(100)) for i in range(5)]
     + ["BF.INFO bk FILTERS", "BF.INFO bk SIZE", "BF.INFO bk CAPACITY",
        "BF.RESERVE bk2 0.25 1 NONSCALING", "BF.INFO bk2", "DEL bk2"]),
    ("cf debug", ["CF.RESERVE ck 1000 BUCKETSIZE 4 MAXITERATIONS 30 EXPANSION 2", "CF.ADD ck a",
                  "CF.ADD ck b", "CF.DEL ck a", "CF.DEBUG ck", "CF.DEBUG nokey", "CF.DEBUG",
                  "BF.ADD bk a", "CF.DEBUG bk"]),
    ("cf compact", ["CF.RESERVE ck 2 BUCKETSIZE 1", ["CF.INSERT", "ck", "ITEMS"] + ["item"] * 200,
                    "CF.DEBUG ck"] + ["CF.DEL ck item"] * 9
     + ["CF.DEBUG ck", "CF.COMPACT ck", "CF.DEBUG ck", "CF.INFO ck", "CF.COUNT ck item",
        "CF.COMPACT nokey", "BF.ADD bk a", "CF.COMPACT bk", "CF.COMPACT", "CF.COMPACT ck x"]),
    ("cf copies", ["CF.RESERVE ck 2 BUCKETSIZE 1 EXPANSION 1",
                   ["CF.INSERT", "ck", "ITEMS"] + ["item"] * 1000, "CF.INFO ck",
                   "CF.COUNT ck item", "CF.RESERVE ck2 1000",
                   ["CF.INSERT", "ck2", "ITEMS"] + ["item"] * 1000, "CF.INFO ck2", "DEL ck2"]),
    ("cf copies folded", ["CF.RESERVE ck 2 BUCKETSIZE 1 EXPANSION 1",
                          ["CF.INSERT", "ck", "ITEMS"] + ["a"] * 1000, "CF.INFO ck",
                          "CF.COUNT ck a"]),
    ("touch", ["BF.ADD bk a", "CF.ADD ck a", "TOUCH bk ck nokey bk", "TOUCH nokey", "TOUCH"]),
    ("randomkey", ["FLUSHALL", "RANDOMKEY", "BF.ADD bk a", "RANDOMKEY", "DEL bk", "RANDOMKEY",
                   "RANDOMKEY x"]),
    ("object", ["BF.ADD bk a", "CF.ADD ck a", "OBJECT ENCODING bk", "OBJECT ENCODING ck",
                "OBJECT REFCOUNT bk", "OBJECT IDLETIME ck", "OBJECT FREQ bk",
                "OBJECT ENCODING nokey", "OBJECT IDLETIME nokey", "OBJECT", "OBJECT FOO bk",
                "OBJECT ENCODING", "OBJECT ENCODING bk ck", "OBJECT HELP x"]),
    ("object help", ["OBJECT HELP"]),
    ("modules and cluster", ["MODULE LIST", "MODULE FOO", "MODULE LIST x", "MODULE",
                             "INFO cluster"]),
    ("debug reload", ["BF.ADD bk a", "CF.ADD ck a", "CF.ADD ck a", "DEBUG RELOAD",
                      "BF.EXISTS bk a", "CF.COUNT ck a", "TYPE bk", "DEBUG RELOAD NOSAVE",
                      "BF.EXISTS bk a", "DEBUG RELOAD BOGUS", "DEBUG FOO", "DEBUG"]),
    ("dump", ["BF.ADD bk a", "DUMP nokey", "DUMP", "DUMP bk x",
              lambda c: ["RESTORE", "bk2", "0", c.run_value(["DUMP", "bk"])],
              "BF.EXISTS bk2 a", "TYPE bk2", "TTL bk2",
              lambda c: ["RESTORE", "bk2", "0", c.run_value(["DUMP", "bk"])],
              lambda c: ["RESTORE", "bk2", "100000", c.run_value(["DUMP", "bk"]), "REPLACE"],
              "EXPIRE bk2 50", "TTL bk2",
              lambda c: ["RESTORE", "bk2", "1", c.run_value(["DUMP", "bk"]), "REPLACE", "ABSTTL"],
              "EXISTS bk2",
              lambda c: ["RESTORE", "ck2", "0", c.run_value(["DUMP", "bk"]), "IDLETIME", "100"],
              "OBJECT IDLETIME ck2", "DEL ck2"]),
    ("dump payload", ["BF.ADD bk a", "DUMP bk"]),
    ("restore errors", ["BF.ADD bk a", "RESTORE bk 0 xxx", "RESTORE bk2 0 xxx",
                        "RESTORE bk2 -1 xxx", "RESTORE bk2 x xxx", "RESTORE bk2 0 xxx IDLETIME -1",
                        "RESTORE bk2 0 xxx IDLETIME x", "RESTORE bk2 0 xxx FREQ 300",
                        "RESTORE bk2 0 xxx IDLETIME 1 FREQ 3", "RESTORE bk2 0 xxx BOGUS",
                        "RESTORE bk2 0 xxx IDLETIME", "RESTORE bk 0 xxx REPLACE", "RESTORE bk2 0",
                        "RESTORE", "EXISTS bk2"]),
    ("restore foreign payload", ["BF.ADD bk a", "CF.ADD ck a",
                                 lambda ours, theirs: (
                                     ["RESTORE", "bk2", "0", theirs.run_value(["DUMP", "bk"])],
                                     ["RESTORE", "bk2", "0", ours.run_value(["DUMP", "bk"])]),
                                 lambda ours, theirs: (
                                     ["RESTORE", "ck2", "0", theirs.run_value(["DUMP", "ck"])],
                                     ["RESTORE", "ck2", "0", ours.run_value(["DUMP", "ck"])]),
                                 "EXISTS bk2 ck2"]),
    ("copy", ["BF.ADD bk a", "COPY bk bk", "COPY nokey bk3", "COPY bk bk2 DB 16",
              "COPY bk bk2 FOO", "COPY bk", "COPY bk bk2 DB x"]),
    ("copy filters", ["BF.ADD bk a", "COPY bk bk2", "BF.EXISTS bk2 a", "COPY bk bk2",
                      "COPY bk bk2 REPLACE", "COPY bk bk2 DB 1", "DEL bk2"]),
    ("bf loadchunk of another dump", ["BF.ADD bk a", "BF.SCANDUMP bk 0",
                                      lambda c: ["BF.LOADCHUNK", "bk2", "1",
                                                 c.run_value(["BF.SCANDUMP", "bk", "0"])[1]],
                                      "BF.LOADCHUNK bk2 5 xx", "BF.LOADCHUNK bk2 2 x",
                                      "DEL bk2"]),
]

# Fields bloomkit answers after RedisBloom's in a whole BF.INFO/CF.INFO (docs/SERVER.md,
# "Commands beyond RedisBloom"): left out of our reply before comparing, so that RedisBloom's
# own fields are still compared byte for byte.
BLOOMKIT_FIELDS = {"BF.INFO": 3, "CF.INFO": 2}


def reply_end(raw, at):
    """Where the reply starting at `at` in `raw` ends."""
    eol = raw.index(b"\r\n", at)
    tag, rest = raw[at:at + 1], raw[at + 1:eol]
    at = eol + 2
    if tag in (b"$", b"=", b"!"):
        return at if int(rest) < 0 else at + int(rest) + 2
    if tag in (b"*", b"~", b">", b"%", b"|"):
        n = int(rest)
        for _ in range(max(n, 0) * (2 if tag in (b"%", b"|") else 1)):
            at = reply_end(raw, at)
    return at


def without_bloomkit_fields(args, raw):
    """Our reply to a whole BF.INFO/CF.INFO with bloomkit's trailing fields left out."""
    extra = BLOOMKIT_FIELDS.get(str(args[0]).upper()) if len(args) == 2 else None
    if not extra or raw[:1] not in (b"*", b"%"):
        return raw
    eol = raw.index(b"\r\n")
    count = int(raw[1:eol])
    pairs = count // 2 if raw[:1] == b"*" else count
    at, ends = eol + 2, []
    while at < len(raw):
        at = reply_end(raw, at)
        ends.append(at)
    keep = ends[2 * (pairs - extra) - 1] if pairs > extra else eol + 2
    kept = (pairs - extra) * (2 if raw[:1] == b"*" else 1)
    return raw[:1] + str(kept).encode() + b"\r\n" + raw[eol + 2:keep]


KNOWN = {
    "bf reserve errors": "RedisBloom 2.8's error strings predate Redis 8's",
    "bf scaling": "which items are false positives depends on the hash",
    "bf nonscaling full": "which items are false positives depends on the hash",
    "generic": "one database: SELECT accepts only 0",
    "cf reserve errors": "RedisBloom 2.8's error strings predate Redis 8's",
    "cf copies folded": "RedisBloom's XOR folds this item's two buckets into one at 2 buckets",
    "object help": "Redis 7.0 words HELP's line 'Prints this help.', Redis 8 'Print this help.'",
    "modules and cluster": "we report Redis 8.0's bf module (ver 80000) and no path; INFO is a "
                           "bulk string in RESP3",
    "dump payload": "DUMP carries bloomkit's encoding (and RDB version 12, Redis 8.0's)",
    "restore foreign payload": "RedisBloom's DUMP imports here ('Moving filters' in "
                               "docs/SERVER.md and docs/MODULE.md); RedisBloom refuses ours",
    "copy filters": "RedisBloom does not implement COPY of its keys ('not supported')",
    "bf loadchunk of another dump": "RedisBloom copies any chunk where its iterator points",
}


# The module runs inside Redis, so generic commands are Redis's own and SELECT works: what
# is left is the filters' own differences (docs/MODULE.md).
KNOWN_MODULE = {
    "restore foreign payload": KNOWN["restore foreign payload"],
    "bf reserve errors": KNOWN["bf reserve errors"],
    "cf reserve errors": KNOWN["cf reserve errors"],
    "bf scaling": KNOWN["bf scaling"],
    "bf nonscaling full": KNOWN["bf nonscaling full"],
    "cf copies folded": KNOWN["cf copies folded"],
    "modules and cluster": "MODULE LIST names this module bf too, with its own version and path",
    "dump payload": "DUMP carries this module's encoding (docs/MODULE.md, difference 3)",
    "copy filters": KNOWN["copy filters"],
    "bf loadchunk of another dump": KNOWN["bf loadchunk of another dump"],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", type=int, default=6379, help="bloomkit's port")
    ap.add_argument("--theirs", type=int, default=7379, help="RedisBloom's port")
    ap.add_argument("--host", choices=("server", "module"), default="server",
                    help="what serves --ours: bloomkit serve, or Redis with bloomkit's module")
    ap.add_argument("--only-unlisted-fail", action="store_true",
                    help="exit 0 when every difference is a known one")
    opts = ap.parse_args()
    known = KNOWN_MODULE if opts.host == "module" else KNOWN

    differences = 0
    unlisted = 0
    total = 0
    for protocol in (2, 3):
        ours, theirs = Conn(opts.ours), Conn(opts.theirs)
        if protocol == 3:
            ours.run(["HELLO", "3"])
            theirs.run(["HELLO", "3"])
        for name, commands in CASES:
            keys = {c.split()[1] for c in commands if isinstance(c, str) and len(c.split()) > 1}
            for conn in (ours, theirs):
                for key in keys:
                    conn.run(["DEL", key])
            for command in commands:
                # A command may be built from each server's own earlier reply (a DUMP to
                # RESTORE, a dump's header to load): a function of the connection.
                if callable(command) and command.__code__.co_argcount == 2:
                    # Built from both servers' replies: (what ours runs, what theirs runs).
                    mine, yours = command(ours, theirs)
                    a, b = ours.run(mine), theirs.run(yours)
                    command = "(built from the other server's reply)"
                elif callable(command):
                    a, b = ours.run(command(ours)), theirs.run(command(theirs))
                    command = "(built from each server's reply)"
                else:
                    args = command.split() if isinstance(command, str) else command
                    a, b = ours.run(args), theirs.run(args)
                    a = without_bloomkit_fields(args, a)
                    if not isinstance(command, str):
                        command = " ".join(map(str, command[:4])) + " ..."
                total += 1
                if a != b:
                    differences += 1
                    unlisted += name not in known
                    tag = " KNOWN: " + known[name] if name in known else " UNLISTED"
                    print("RESP%d [%s] %s%s\n  bloomkit:   %r\n  RedisBloom: %r"
                          % (protocol, name, command, tag, a, b))
    print("%d of %d replies differ, %d of them unlisted" % (differences, total, unlisted))
    if opts.only_unlisted_fail:
        return 1 if unlisted else 0
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
