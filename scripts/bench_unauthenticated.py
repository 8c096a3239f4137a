#!/usr/bin/env python3
"""What clients that never authenticate can do to a server with a password.

Usage (after `cargo build --release`):
    python3 scripts/bench_unauthenticated.py BINARY

Starts `BINARY serve --port 0 --requirepass pw` three times on scratch directories:
(a) measures VmRSS before and after three connections each send the header of a 60 MiB
ECHO argument and 59 MiB of it; (b) with --maxmemory 64mb and CONFIG SET maxmemory-policy
allkeys-lru, 40 BF.RESERVE k 0.01 1000000 (55 MB), then one such connection: counts DBSIZE;
(c) the same under noeviction: answers another client's BF.ADD. Plain sockets only.
"""
import socket, subprocess, sys, tempfile, time
binary = sys.argv[1]
def rss(pid):
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"): return int(l.split()[1]) * 1024
def enc(*a):
    o=[b"*%d\r\n"%len(a)]
    for x in a:
        x=x.encode() if isinstance(x,str) else x
        o.append(b"$%d\r\n%s\r\n"%(len(x),x))
    return b"".join(o)
def start(extra):
    d=tempfile.mkdtemp()
    p=subprocess.Popen([binary,"serve","--port","0","--dir",d+"/data","--requirepass","pw","--appendfsync","no","--loglevel","warning"]+extra,stdout=subprocess.PIPE,text=True)
    port=int(p.stdout.readline().rsplit(":",1)[1]); return p,port
def conn(port):
    s=socket.create_connection(("127.0.0.1",port)); return s
def call(s,*a):
    s.sendall(enc(*a)); return s.recv(1<<20)
def stranger(port, mb):
    s=conn(port); s.settimeout(5)
    sent=0
    try:
        s.sendall(b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % (mb<<20))
        chunk=b"a"*(1<<20)
        for _ in range(mb-1):
            s.sendall(chunk); sent+=1
    except OSError: pass
    return s, sent
# (a) three clients sending 60 MiB each, unauthenticated
p,port=start([])
time.sleep(0.3); r0=rss(p.pid)
ss=[stranger(port,60) for _ in range(3)]
time.sleep(0.5); r1=rss(p.pid)
print("(a) 3 unauthenticated clients x 60 MiB: grew %.1f MiB (MiB each got through: %s)" % ((r1-r0)/2**20, [x[1] for x in ss]))
for s,_ in ss: s.close()
p.terminate(); p.wait()
# (b) maxmemory 64mb allkeys-lru: 40 keys, one unfinished 60 MB request
p,port=start(["--maxmemory","64mb"])
a=conn(port); call(a,"AUTH","pw"); call(a,"CONFIG","SET","maxmemory-policy","allkeys-lru")
for i in range(40):
    call(a,"BF.RESERVE","k%d"%i,"0.01","1000000")
print("  used_memory before:", [l for l in call(a,"INFO","memory").decode().split("\r\n") if l.startswith("used_memory:")])
s,_=stranger(port,60)
time.sleep(0.5)
n=int(call(a,"DBSIZE").decode()[1:].strip())
print("(b) allkeys-lru 64mb, one unfinished 60 MB unauthenticated request: %d of 40 keys left" % n)
s.close(); p.terminate(); p.wait()
# (c) noeviction: other client's write
p,port=start(["--maxmemory","64mb"])
a=conn(port); call(a,"AUTH","pw")
i=0
while True:
    r=call(a,"BF.RESERVE","k%d"%i,"0.01","1000000")
    if not r.startswith(b"+OK"): break
    i+=1
    if i>=40: break
s,_=stranger(port,60); time.sleep(0.5)
print("(c) noeviction 64mb, 40 keys, one unfinished 60 MB unauthenticated request: BF.ADD ->", call(a,"BF.ADD","k0","x"))
s.close(); p.terminate(); p.wait()
