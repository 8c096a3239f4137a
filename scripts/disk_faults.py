#!/usr/bin/env python3
"""Real disk faults against a real `bloomkit serve`: what clients are told, and what survives.

The unit tests in crates/bloomkit-server/src/persist/disk_tests.rs make the log's `write`
fail through a hook; this script makes real file systems fail under the real binary:

  tmpfs-full      a 4 MiB tmpfs filled up while 4 clients write, then freed (always, everysec)
  ext4-readonly   an ext4 file system that an error remounts read-only (errors=remount-ro)
  immutable       the log file made immutable (chattr +i: EPERM), then writable again
  old-gen-cut     a finished log generation cut at a record boundary
  newest-deleted  the newest log generation deleted while older ones remain
  dir-removed     the data directory removed while the server runs
  snapshot-fails  a snapshot that keeps failing, for 30 s, with 70 MB of log
  tail-cut        the newest generation cut to half after a clean stop

Each scenario prints what was acknowledged, refused and found after a restart. The first
three need root (mount, losetup, chattr); run them on a scratch machine:

    cargo build --release -p bloomkit-cli
    sudo python3 scripts/disk_faults.py --bloomkit target/release/bloomkit [scenario...]

Only the standard library is used. Everything mounted or started is undone on exit.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from compare_redisbloom import Conn, encode


class Client(Conn):
    """A blocking RESP client (compare_redisbloom's connection) whose replies come back as
    values: str, int, bytes, list, None, or RespError."""

    def __init__(self, addr):
        super().__init__(int(addr.rsplit(":", 1)[1]))

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError(f"unexpected reply {line!r}")

    def send(self, *args):
        self.sock.sendall(encode(args))

    def call(self, *args):
        self.send(*args)
        return self.reply()

    def pipeline(self, commands, batch=256):
        replies = []
        for i in range(0, len(commands), batch):
            part = commands[i : i + batch]
            for c in part:
                self.send(*c)
            replies.extend(self.reply() for _ in part)
        return replies

    def info(self, section="persistence"):
        reply = self.call("INFO", section)
        if isinstance(reply, RespError):
            # The one INFO that ran as the log failed waited for what the log then lost.
            return {"error": reply}
        text = reply.decode()
        return dict(
            line.split(":", 1) for line in text.split("\r\n") if ":" in line
        )

    def close(self):
        self.sock.close()


class RespError(str):
    pass


class Server:
    """`bloomkit serve` on a directory; SIGKILLed if still running at exit."""

    running = []

    def __init__(self, bloomkit, directory, *flags):
        self.proc = subprocess.Popen(
            [bloomkit, "serve", "--port", "0", "--dir", directory, *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            err = self.proc.stderr.read()
            self.proc.wait()
            raise StartFailed(err.strip() or line)
        self.addr = line.split()[-1]
        Server.running.append(self)

    def client(self):
        return Client(self.addr)

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        Server.running.remove(self)
        return self.proc.stderr.read()

    def shutdown(self, *args):
        c = self.client()
        c.send("SHUTDOWN", *args)
        try:
            c.reply()
        except (ConnectionError, OSError):
            pass
        code = self.proc.wait(timeout=30)
        Server.running.remove(self)
        return code, self.proc.stderr.read()


class StartFailed(Exception):
    pass


def outcome(bloomkit, directory, items):
    """Starts a server on `directory` and says what it did: stopped (and why), or started
    (with how many of `items` it has, and what it warned about)."""
    try:
        server = Server(bloomkit, directory)
    except StartFailed as e:
        return f"start-up stopped: {e}"
    c = server.client()
    found = check_all(c, items)
    c.close()
    warnings = server.kill().strip()
    said = f"; it said: {warnings}" if warnings else ", without a word"
    return f"started; found {found} of {len(items)} acknowledged items{said}"


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


class Writers:
    """`n` clients adding unique items one at a time, until stopped. Keeps what each was
    told: acknowledged items, MISCONF refusals, and errors for commands that ran."""

    def __init__(self, addr, n, tag):
        self.stop = threading.Event()
        self.acked, self.refused, self.held, self.other = [], 0, 0, []
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._run, args=(addr, f"{tag}:{i}"), daemon=True)
            for i in range(n)
        ]
        for t in self.threads:
            t.start()

    def _run(self, addr, name):
        c = Client(addr)
        i = 0
        while not self.stop.is_set():
            item = f"{name}:{i}"
            i += 1
            try:
                r = c.call("BF.ADD", "items", item)
            except (ConnectionError, OSError) as e:
                with self.lock:
                    self.other.append(f"{item}: {e}")
                return
            with self.lock:
                if isinstance(r, RespError):
                    if "this command ran" in r:
                        self.held += 1
                    elif r.startswith("MISCONF"):
                        self.refused += 1
                    else:
                        self.other.append(r)
                    time.sleep(0.01)
                else:
                    self.acked.append(item)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join()
        return self


def check_all(client, items):
    replies = client.pipeline([("BF.EXISTS", "items", it) for it in items])
    return sum(1 for r in replies if r == 1)


def wait_for(what, condition, timeout=15):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)


def attempt(addr, *command):
    """One command on a new connection: its reply, or what happened instead."""
    try:
        c = Client(addr)
        r = c.call(*command) if command[0] != "INFO" else c.info(command[1])
        c.close()
        return r
    except (ConnectionError, OSError) as e:
        return f"no reply: the connection was closed ({e})"


def write_status(addr):
    info = attempt(addr, "INFO", "persistence")
    return info.get("aof_last_write_status") if isinstance(info, dict) else None


def degraded_round(bloomkit, data, policy, make_fault, clear_fault, label):
    """Writers run; a fault comes; reads go on; the fault goes (if it can); a SIGKILL and a
    restart find every acknowledged write."""
    server = Server(bloomkit, data, "--appendfsync", policy)
    writers = Writers(server.addr, 4, label)
    time.sleep(0.5)
    fault_detail = make_fault()
    try:
        wait_for("writes refused", lambda: write_status(server.addr) != "ok", timeout=10)
    except TimeoutError:
        pass
    with writers.lock:
        at_failure = len(writers.acked)
    time.sleep(1.0)
    with writers.lock:
        a_second_later, refused = len(writers.acked), writers.refused
    info = attempt(server.addr, "INFO", "persistence")
    result = {
        "label": label,
        "policy": policy,
        "fault": fault_detail,
        "acked before the log failed": at_failure,
        "acked in the second after": a_second_later - at_failure,
        "PING while failing": attempt(server.addr, "PING"),
        "HELLO while failing": str(attempt(server.addr, "HELLO"))[:40],
        "read while failing": attempt(server.addr, "BF.EXISTS", "items", writers.acked[0]),
        "a write while failing": attempt(server.addr, "BF.ADD", "items", "probe"),
        "INFO aof_last_write_status": info.get("aof_last_write_status") if isinstance(info, dict) else info,
        "INFO aof_last_write_error": info.get("aof_last_write_error") if isinstance(info, dict) else None,
    }
    if clear_fault is not None:
        clear_fault()
        t0 = time.time()
        try:
            wait_for("writes accepted again", lambda: write_status(server.addr) == "ok")
            result["writes accepted again after (s)"] = round(time.time() - t0, 2)
        except TimeoutError:
            result["writes accepted again after (s)"] = "never, within 15 s"
        time.sleep(0.5)
    w = writers.finish()
    server.kill()
    result["refused with MISCONF"] = w.refused
    result["errors for commands that ran (held back)"] = w.held
    result["connections closed or other errors"] = len(w.other)
    result["acked in all"] = len(w.acked)
    return result, w.acked


def verify_after_restart(bloomkit, data, policy, result, acked):
    """Restarts on `data`, counts the acknowledged items found, reports, and insists."""
    server = Server(bloomkit, data, "--appendfsync", policy)
    c = server.client()
    found = check_all(c, acked)
    c.close()
    server.kill()
    report(result, found)
    assert found == len(acked), "acknowledged writes lost"


def report(result, found):
    print(f"== {result['label']} ({result['policy']})")
    for k, v in result.items():
        if k not in ("label", "policy"):
            print(f"   {k}: {v}")
    print(f"   found after SIGKILL and restart: {found} of {result['acked in all']}")


def scenario_tmpfs_full(bloomkit):
    for policy in ["always", "everysec"]:
        mnt = tempfile.mkdtemp(prefix="bk-tmpfs-")
        sh("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt)
        try:
            data = os.path.join(mnt, "data")
            filler = os.path.join(mnt, "filler")

            def fill():
                fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
                try:
                    while True:
                        os.write(fd, b"\0" * 4096)
                except OSError as e:
                    return f"tmpfs full ({e.strerror})"
                finally:
                    os.close(fd)

            def free():
                os.remove(filler)

            result, acked = degraded_round(bloomkit, data, policy, fill, free, "tmpfs-full")
            verify_after_restart(bloomkit, data, policy, result, acked)
        finally:
            for s in list(Server.running):
                s.kill()
            sh("umount", mnt, check=False)
            os.rmdir(mnt)


def unmount_ext4(img, mnt):
    for s in list(Server.running):
        s.kill()
    data = os.path.join(mnt, "data")
    for name in os.listdir(data) if os.path.isdir(data) else []:
        sh("chattr", "-i", os.path.join(data, name), check=False)
    sh("umount", mnt, check=False)
    os.rmdir(mnt)
    os.remove(img)


def ext4_image():
    img = tempfile.mktemp(prefix="bk-ext4-", suffix=".img")
    sh("truncate", "-s", "32M", img)
    sh("mkfs.ext4", "-q", img)
    mnt = tempfile.mkdtemp(prefix="bk-ext4-")
    sh("mount", "-o", "loop,errors=remount-ro", img, mnt)
    return img, mnt


def scenario_ext4_readonly(bloomkit):
    img, mnt = ext4_image()
    try:
        data = os.path.join(mnt, "data")
        dev = os.path.basename(sh("findmnt", "-n", "-o", "SOURCE", mnt).stdout.strip())

        def go_readonly():
            with open(f"/sys/fs/ext4/{dev}/trigger_fs_error", "w") as f:
                f.write("1")
            return "ext4 remounted read-only by an error (errors=remount-ro)"

        result, acked = degraded_round(bloomkit, data, "always", go_readonly, None, "ext4-readonly")
        # A read-only ext4 comes back through an unmount, a check and a mount.
        sh("umount", mnt)
        sh("e2fsck", "-fy", img, check=False)
        sh("mount", "-o", "loop", img, mnt)
        verify_after_restart(bloomkit, data, "always", result, acked)
    finally:
        unmount_ext4(img, mnt)


def scenario_immutable(bloomkit):
    img, mnt = ext4_image()
    try:
        data = os.path.join(mnt, "data")

        def logs():
            return sorted(
                os.path.join(data, n) for n in os.listdir(data) if n.startswith("appendonly.")
            )

        def lock():
            sh("chattr", "+i", logs()[-1])
            return "chattr +i on the log being written (EPERM)"

        def unlock():
            sh("chattr", "-i", logs()[-1])

        result, acked = degraded_round(bloomkit, data, "everysec", lock, unlock, "immutable")
        verify_after_restart(bloomkit, data, "everysec", result, acked)
    finally:
        unmount_ext4(img, mnt)


def three_generations(bloomkit, data):
    """3,150 acknowledged items over generations 1, 2 and 3: two BGSAVEs that fail (a
    directory stands where dump.bks would go) each start a generation."""
    server = Server(bloomkit, data)
    os.makedirs(os.path.join(data, "dump.bks"))
    c = server.client()
    assert c.call("BF.RESERVE", "items", "0.0001", "10000") == "OK"
    items = []
    for g in range(3):
        batch = [f"g{g}:{i:04}" for i in range(1050)]
        replies = c.pipeline([("BF.ADD", "items", it) for it in batch])
        assert not any(isinstance(r, RespError) for r in replies), replies[:3]
        items += batch
        if g < 2:
            c.call("BGSAVE")
            wait_for("the BGSAVE", lambda: c.info()["rdb_bgsave_in_progress"] == "0")
    c.close()
    server.kill()
    os.rmdir(os.path.join(data, "dump.bks"))
    return items


def scenario_old_gen_cut(bloomkit):
    with tempfile.TemporaryDirectory(prefix="bk-gen-") as d:
        data = os.path.join(d, "data")
        items = three_generations(bloomkit, data)
        path = os.path.join(data, "appendonly.2.aof")
        # Cut at a record boundary: each BF.ADD record here is the same size.
        size = os.path.getsize(path)
        record = (size - 24) // 1050
        cut = 24 + record * 200
        os.truncate(path, cut)
        print("== old-gen-cut: appendonly.2.aof cut at a record boundary (850 of its 1,050 items)")
        print(f"   {outcome(bloomkit, data, items)}")
        os.truncate(path, 24)
        print("== old-gen-cut: appendonly.2.aof cut to its bare header")
        print(f"   {outcome(bloomkit, data, items)}")


def scenario_newest_deleted(bloomkit):
    with tempfile.TemporaryDirectory(prefix="bk-gen-") as d:
        data = os.path.join(d, "data")
        items = three_generations(bloomkit, data)
        os.remove(os.path.join(data, "appendonly.3.aof"))
        print("== newest-deleted: appendonly.3.aof deleted, 1 and 2 remain")
        print(f"   {outcome(bloomkit, data, items)}")


def scenario_dir_removed(bloomkit):
    with tempfile.TemporaryDirectory(prefix="bk-rm-") as d:
        data = os.path.join(d, "data")
        server = Server(bloomkit, data)
        c = server.client()
        for i in range(50):
            assert c.call("BF.ADD", "items", f"before:{i}") == 1
        shutil.rmtree(data)
        replies = [c.call("BF.ADD", "items", f"after:{i}") for i in range(50)]
        acked = sum(1 for r in replies if not isinstance(r, RespError))
        read = c.call("BF.EXISTS", "items", "before:3")
        c.close()
        code, stderr = server.shutdown()
        print("== dir-removed: the data directory removed while serving")
        print(f"   later writes acknowledged: {acked} of 50; the first reply: {replies[0]}")
        print(f"   a later reply: {replies[-1]}; a read: {read}")
        print(f"   shutdown exit status {code}; stderr: {stderr.strip()}")


def scenario_snapshot_fails(bloomkit):
    with tempfile.TemporaryDirectory(prefix="bk-snap-") as d:
        data = os.path.join(d, "data")
        server = Server(bloomkit, data)
        c = server.client()
        # 70 MB of log: the automatic snapshot wants one past 64 MiB.
        os.makedirs(os.path.join(data, "dump.bks"))
        item = "x" * 1000
        commands = [("CF.ADD", f"k{i % 64}", f"{item}{i}") for i in range(70_000)]
        c.pipeline(commands, batch=1000)
        logs = lambda: sorted(n for n in os.listdir(data) if n.startswith("appendonly."))
        first = logs()
        time.sleep(30)
        later = logs()
        info = c.info()
        c.close()
        server.kill()
        print("== snapshot-fails: dump.bks cannot be written, 70 MB of log, 30 s")
        print(f"   log files before: {len(first)}, after 30 s: {len(later)} ({', '.join(later)})")
        print(f"   rdb_last_bgsave_status: {info.get('rdb_last_bgsave_status')}")


def scenario_tail_cut(bloomkit):
    with tempfile.TemporaryDirectory(prefix="bk-tail-") as d:
        data = os.path.join(d, "data")
        server = Server(bloomkit, data)
        c = server.client()
        items = [f"t:{i}" for i in range(3000)]
        c.pipeline([("BF.ADD", "items", it) for it in items])
        c.close()
        server.shutdown("NOSAVE")
        path = os.path.join(data, "appendonly.1.aof")
        os.truncate(path, os.path.getsize(path) // 2 + 7)
        print("== tail-cut: the newest generation cut to half (inside a record) after a clean stop")
        print(f"   {outcome(bloomkit, data, items)}")


SCENARIOS = {
    "tmpfs-full": scenario_tmpfs_full,
    "ext4-readonly": scenario_ext4_readonly,
    "immutable": scenario_immutable,
    "old-gen-cut": scenario_old_gen_cut,
    "newest-deleted": scenario_newest_deleted,
    "dir-removed": scenario_dir_removed,
    "snapshot-fails": scenario_snapshot_fails,
    "tail-cut": scenario_tail_cut,
}
NEEDS_ROOT = {"tmpfs-full", "ext4-readonly", "immutable"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bloomkit", default="target/release/bloomkit")
    parser.add_argument("scenarios", nargs="*", help=", ".join(SCENARIOS))
    args = parser.parse_args()
    chosen = args.scenarios or list(SCENARIOS)
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        sys.exit(f"unknown scenario {', '.join(unknown)}: expected {', '.join(SCENARIOS)}")
    if os.geteuid() != 0 and NEEDS_ROOT & set(chosen):
        sys.exit(f"{', '.join(sorted(NEEDS_ROOT & set(chosen)))} need root (mount, chattr)")
    bloomkit = os.path.abspath(args.bloomkit)
    try:
        for name in chosen:
            SCENARIOS[name](bloomkit)
    finally:
        for s in list(Server.running):
            s.kill()


if __name__ == "__main__":
    main()
