"""A CDN's cache admission on the second request, with one AF.* key shared by every edge
server: an object is cached only when it was asked for before within the window (a
one-hit wonder never takes cache space). Runs against `bloomkit serve` or Redis/Valkey
with the bloomkit module, whichever listens on the port.

Usage: python3 scripts/cdn_admission.py PORT (a server on 127.0.0.1 with no key `cdn:*`).

In production the key would be `AF.RESERVE cdn:seen 0.001 50000000 PERIOD 86400`: 50 M
distinct URLs a day, two generations, rotated by the server every day, so an object is
remembered for one to two days after its last request. Here the rotations are explicit
(`AF.ROTATE`), so the script runs in a moment and checks each step.
"""

import sys

import redis

KEY = "cdn:seen"


def admit(r, url):
    """Whether an edge should cache `url` now: AF.ADD answers 1 for a first sighting
    within the window (do not cache yet) and 0 for a repeat (cache it)."""
    return r.execute_command("AF.ADD", KEY, url) == 0


def main(port):
    r = redis.Redis(port=port)
    r.delete(KEY)
    r.execute_command("AF.RESERVE", KEY, 0.001, 100000, "GENERATIONS", 2)
    assert r.type(KEY) == b"BKaging--", r.type(KEY)

    # Day 1: the first request of an object is not admitted, the second is.
    assert not admit(r, "/video/1.mp4"), "first request"
    assert admit(r, "/video/1.mp4"), "second request, same day"
    assert not admit(r, "/img/once.jpg"), "a one-hit wonder"

    # Midnight: the day's generation becomes the previous one.
    r.execute_command("AF.ROTATE", KEY)
    assert admit(r, "/img/once.jpg"), "second request, the next day: still in the window"
    assert not admit(r, "/css/new.css"), "first request on day 2"

    # Two more midnights: day 2's requests are out of the window.
    r.execute_command("AF.ROTATE", KEY)
    r.execute_command("AF.ROTATE", KEY)
    assert r.execute_command("AF.EXISTS", KEY, "/css/new.css") == 0
    assert not admit(r, "/css/new.css"), "a second request after the window is a first"

    info = r.execute_command("AF.INFO", KEY)
    # A map in RESP3; name/value pairs in RESP2.
    fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
    print(
        "generations:", fields[b"Generations"],
        "items per generation:", fields[b"Items per generation"],
    )
    r.delete(KEY)
    print("all CDN admission checks passed")


if __name__ == "__main__":
    main(int(sys.argv[1]))
