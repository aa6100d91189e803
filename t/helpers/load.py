#!/usr/bin/env python3
"""load.py -- many connections, counted exactly: the server and the clients
of the load, soak and fault tests (t5003, t4003, t5004).

  load.py serve --port-file FILE [--bind ADDR] [--port N] [--lifetime S]
      One thread, selectors: thousands of connections at once (echo.py
      has a thread each and stops at 256).  A connection whose first
      bytes are an HTTP request line ("GET /n/SIZE HTTP/1.1") is an HTTP
      origin, keep-alive: SIZE bytes of body (at most BODY_MAX), and two
      headers that tell the client what the audit log should count on
      the origin side (heads as the origin got and sent them):
      "X-Got: N", the bytes of the request head it received, and
      "X-Sent: N", the bytes of the whole response it sends.  Any other
      connection echoes every byte.  Logs "serve: open N" every 1000th
      connection and "serve: end in=N out=N" for none: 10,000 lines
      would be noise.

  load.py hold PROXY_PORT HOST:PORT N READY GO OUT [--threads T]
      N CONNECT tunnels to HOST:PORT (an echo), T threads opening them
      (default 16); each sends "ping I\\n" and reads its echo, so the
      proxy is past its peek.  Writes "held=K failed=F" to READY once all
      were tried (K = N when all hold), then waits (HOLD_SECONDS at most)
      for the file GO, does one more round-trip on each ("again I\\n"),
      closes them all and writes to OUT one JSON line per tunnel (see
      below) and "alive=K" to stdout.  The soft descriptor limit is
      raised to the hard one first.

  load.py churn PROXY_PORT --echo HOST:PORT --http HOST:PORT --out OUT
                [--lanes N] [--long N] [--seconds S] [--stop FILE]
                [--state FILE] [--pause MS]
      A steady load until the file STOP exists or S seconds (default 60,
      at most CHURN_SECONDS_MAX) have passed: N lanes (default 4), each a
      thread that takes turns opening a short tunnel (CONNECT, 1 to 2000
      bytes echoed, close) and a keep-alive HTTP connection (1 to 3
      absolute-form GETs of 0 to 5000 bytes, then close); plus --long
      tunnels (default 2) opened at the start and kept the whole time,
      each echoing a line every LONG_EVERY seconds.  --pause: each lane
      waits MS ms (default 0, at most 1000) between two connections, a
      steady rate rather than the most it can.  Every request is
      counted, made and answered; an answer that is not 200, a short
      echo or a connection the proxy drops is an error.  --state FILE is
      rewritten every second with "requests=N answered=N errors=N".  At
      the end, OUT gets one JSON line per connection, and stdout
      "requests=N answered=N errors=N connections=N long_alive=K/N".

OUT lines: {"client": "127.0.0.1:PORT", "kind": "connect"|"http",
"requests": N, "up": BYTES, "down": BYTES, "ok": true|false, "error":
TEXT|null, "t": SECONDS}: per connection (t: when it began, monotonic
seconds), what the audit log's close record must say
(bytes in the tunnel, not the CONNECT head and its 200; for HTTP the
origin's X-Got and X-Sent summed) and how many decision records it must
have.  Every connection that reached the proxy has its line, those that
failed too ("ok": false, up and down null when not counted): the proxy
may have records of them.  audit.py --tally compares them.

Only 127.0.0.1: the clients connect to the proxy's port there, the server
binds there; names go to the proxy as they are.  Every socket wait is
bounded (TIMEOUT), every loop by a count or a deadline.  Standard library
only.
"""

import argparse
import errno
import json
import os
import random
import re
import resource
import selectors
import socket
import sys
import threading
import time

import serverlib

TIMEOUT = 10.0              # every socket operation of a client
HEAD_MAX = 8192             # a head either side
BODY_MAX = 1 << 20          # /n/SIZE
CONNS_MAX = 30000           # the server's connections at once
HOLD_SECONDS = 120          # hold: waiting for GO
HOLD_MAX = 20000            # hold: tunnels
CHURN_SECONDS_MAX = 300
LANES_MAX = 64
LONG_MAX = 64
LONG_EVERY = 0.5            # seconds between two echoes of a long tunnel
ECHO_BYTES_MAX = 2000
HTTP_REQUESTS_MAX = 3
HTTP_BODY_MAX = 5000
PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"
REQ_RE = re.compile(rb"^(GET|HEAD) (\S+) HTTP/1\.[01]\r\n")


def log(msg):
    try:
        sys.stderr.write("%s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def nofile_max():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def body_bytes(n):
    reps = n // len(PATTERN) + 1
    return (PATTERN * reps)[:n]


# --- the server -----------------------------------------------------------

class Peer:
    __slots__ = ("sock", "inb", "outb", "mode", "got", "sent", "eof")

    def __init__(self, sock):
        self.sock = sock
        self.inb = b""
        self.outb = bytearray()
        self.mode = None        # None until the first bytes: echo or http
        self.got = self.sent = 0
        self.eof = False


def http_answers(p):
    """Answer every complete request head in p.inb (keep-alive)."""
    for _ in range(1000):
        end = p.inb.find(b"\r\n\r\n")
        if end < 0:
            if len(p.inb) > HEAD_MAX:
                raise ValueError("request head too long")
            return
        head, p.inb = p.inb[:end + 4], p.inb[end + 4:]
        m = REQ_RE.match(head)
        if not m:
            raise ValueError("not a request: %r" % head[:60])
        path = m.group(2).decode("latin-1")
        n = 0
        if path.startswith("/n/") and path[3:].isdigit():
            n = min(int(path[3:]), BODY_MAX)
        body = body_bytes(n) if m.group(1) == b"GET" else b""
        # X-Sent has a fixed width: the head's length does not depend on it
        fmt = ("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
               "Content-Length: %d\r\nX-Got: %d\r\nX-Sent: %%010d\r\n\r\n"
               % (n, len(head)))
        total = len(fmt % 0) + len(body)
        p.outb += (fmt % total).encode() + body


def serve(args):
    nofile_max()
    serverlib.exit_on_signals()
    lsock = serverlib.tcp_listener(args.bind, args.port, backlog=4096)
    lsock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ, None)
    serverlib.write_port_file(args.port_file, lsock.getsockname()[1])
    log("serve: listening on %s port %d" % (args.bind, lsock.getsockname()[1]))
    deadline = time.monotonic() + args.lifetime
    nconns = opened = 0

    def close(p):
        nonlocal nconns
        sel.unregister(p.sock)
        p.sock.close()
        nconns -= 1

    while time.monotonic() < deadline:
        for key, ev in sel.select(1.0):
            if key.data is None:
                for _ in range(256):
                    try:
                        s, _ = lsock.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as e:
                        if e.errno in (errno.EMFILE, errno.ENFILE):
                            break
                        raise
                    if nconns >= CONNS_MAX:
                        s.close()
                        continue
                    s.setblocking(False)
                    sel.register(s, selectors.EVENT_READ, Peer(s))
                    nconns += 1
                    opened += 1
                    if opened % 1000 == 0:
                        log("serve: open %d" % opened)
                continue
            p = key.data
            try:
                if ev & selectors.EVENT_READ:
                    d = p.sock.recv(65536)
                    if not d:
                        p.eof = True
                    else:
                        p.got += len(d)
                        if p.mode is None:
                            p.mode = "http" if REQ_RE.match(d[:HEAD_MAX]) or \
                                d[:4] in (b"GET ", b"HEAD") else "echo"
                        if p.mode == "echo":
                            p.outb += d
                        else:
                            p.inb += d
                            http_answers(p)
                if p.outb:
                    n = p.sock.send(p.outb)
                    p.sent += n
                    del p.outb[:n]
            except (BlockingIOError, InterruptedError):
                pass
            except (OSError, ValueError):
                close(p)
                continue
            if p.eof and not p.outb:
                close(p)
                continue
            want = selectors.EVENT_READ if not p.eof and len(p.outb) < (1 << 20) else 0
            if p.outb:
                want |= selectors.EVENT_WRITE
            if want != key.events:
                sel.modify(p.sock, want or selectors.EVENT_WRITE, p)
    log("serve: lifetime over")


# --- clients ----------------------------------------------------------------

class Failed(Exception):
    pass


class TunnelFailed(Failed):
    """A CONNECT that reached the proxy and failed: .me is the client's
    address, for its record (the proxy may have records of it)."""

    def __init__(self, me, msg):
        Failed.__init__(self, msg)
        self.me = me


def connect_tunnel(port, target):
    """A CONNECT tunnel through the proxy: (socket, client address).  A
    failure once connected raises TunnelFailed."""
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    me = "%s:%d" % s.getsockname()[:2]
    try:
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            d = s.recv(1)       # one at a time: nothing of the tunnel is taken
            if not d or len(head) > HEAD_MAX:
                raise Failed("%s: no answer to CONNECT: %r" % (me, head[:80]))
            head += d
        if not head.startswith(b"HTTP/1.1 200 "):
            raise Failed("%s: answer to CONNECT: %r" % (me, head[:80]))
    except (OSError, Failed) as e:
        s.close()
        raise TunnelFailed(me, str(e) if isinstance(e, Failed) else "%s: %s" % (me, e))
    return s, me


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        d = s.recv(min(65536, n - len(out)))
        if not d:
            raise Failed("closed after %d of %d bytes" % (len(out), n))
        out += d
    return out


def echo(s, data):
    s.sendall(data)
    got = recv_exact(s, len(data))
    if got != data:
        raise Failed("echo differs: %r" % got[:40])


def record(out, me, kind, requests, up, down, error=None, t=None):
    out.append({"client": me, "kind": kind, "requests": requests, "up": up,
                "down": down, "ok": error is None, "error": error,
                "t": round(t if t is not None else time.monotonic(), 6)})


def write_records(path, recs):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
    os.rename(tmp, path)


def hold(args):
    nofile_max()
    n = min(args.n, HOLD_MAX)
    socks = [None] * n
    errors = []
    failed = []     # the records of tunnels that did not open
    lock = threading.Lock()
    nxt = [0]

    def opener():
        for _ in range(n):
            with lock:
                i = nxt[0]
                if i >= n:
                    return
                nxt[0] += 1
            t = time.monotonic()
            try:
                s, me = connect_tunnel(args.proxy, args.target)
            except (OSError, Failed) as e:
                with lock:
                    errors.append("tunnel %d: %s" % (i, e))
                    if isinstance(e, TunnelFailed):
                        record(failed, e.me, "connect", 1, None, None, str(e), t)
                continue
            msg = b"ping %d\n" % i
            try:
                echo(s, msg)
                socks[i] = (s, me, len(msg), t)
            except (OSError, Failed) as e:
                s.close()
                with lock:
                    errors.append("tunnel %d: %s" % (i, e))
                    record(failed, me, "connect", 1, None, None, str(e), t)

    threads = [threading.Thread(target=opener, daemon=True)
               for _ in range(max(1, min(args.threads, 64)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HOLD_SECONDS)
    held = sum(1 for x in socks if x is not None)
    for e in errors[:5]:
        log("hold: %s" % e)
    with open(args.ready + ".tmp", "w") as f:
        f.write("held=%d failed=%d\n" % (held, n - held))
    os.rename(args.ready + ".tmp", args.ready)
    deadline = time.monotonic() + HOLD_SECONDS
    while not os.path.exists(args.go):
        if time.monotonic() > deadline:
            log("hold: no %s after %d s" % (args.go, HOLD_SECONDS))
            break
        time.sleep(0.05)
    recs, alive = failed, 0
    for i, x in enumerate(socks):
        if x is None:
            continue
        s, me, up, t = x
        msg = b"again %d\n" % i
        err = None
        try:
            echo(s, msg)
            up += len(msg)
            alive += 1
        except (OSError, Failed) as e:
            err = str(e)
            if alive + 5 > i:
                log("hold: tunnel %d (%s): %s" % (i, me, e))
        s.close()
        record(recs, me, "connect", 1, up, up if err is None else None, err, t)
    write_records(args.out, recs)
    print("alive=%d" % alive, flush=True)


class Churn:
    def __init__(self, args):
        self.a = args
        self.lock = threading.Lock()
        self.recs = []
        self.requests = self.answered = self.errors = 0
        self.first_errors = []
        self.stop = threading.Event()
        self.long_alive = 0

    def count(self, requests=0, answered=0, error=None):
        with self.lock:
            self.requests += requests
            self.answered += answered
            if error is not None:
                self.errors += 1
                if len(self.first_errors) < 10:
                    self.first_errors.append(error)

    def done(self, me, kind, requests, up, down, error=None, t=None):
        with self.lock:
            record(self.recs, me, kind, requests, up, down, error, t)

    def tunnel(self, rnd):
        self.count(requests=1)
        t = time.monotonic()
        try:
            s, me = connect_tunnel(self.a.proxy, self.a.echo)
        except TunnelFailed as e:
            self.done(e.me, "connect", 1, None, None, str(e), t)
            raise
        self.count(answered=1)
        data = body_bytes(rnd.randint(1, ECHO_BYTES_MAX))
        try:
            echo(s, data)
        except (OSError, Failed) as e:
            self.done(me, "connect", 1, len(data), None, str(e), t)
            s.close()
            raise Failed("%s: %s" % (me, e))
        s.close()
        self.done(me, "connect", 1, len(data), len(data), None, t)

    def http(self, rnd):
        host = self.a.http
        t = time.monotonic()
        s = socket.create_connection(("127.0.0.1", self.a.proxy), timeout=TIMEOUT)
        me = "%s:%d" % s.getsockname()[:2]
        up = down = made = 0
        buf = b""
        try:
            for _ in range(rnd.randint(1, HTTP_REQUESTS_MAX)):
                if self.stop.is_set() and made:
                    break
                n = rnd.randint(0, HTTP_BODY_MAX)
                req = ("GET http://%s/n/%d HTTP/1.1\r\nHost: %s\r\n"
                       "User-Agent: load.py\r\n\r\n" % (host, n, host)).encode()
                made += 1
                self.count(requests=1)
                s.sendall(req)
                while b"\r\n\r\n" not in buf:
                    d = s.recv(65536)
                    if not d or len(buf) > HEAD_MAX:
                        raise Failed("no answer: %r" % buf[:80])
                    buf += d
                head, _, buf = buf.partition(b"\r\n\r\n")
                status = head.split(b"\r\n")[0]
                hdr = {}
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    hdr[k.strip().lower()] = v.strip()
                if not status.startswith(b"HTTP/1.1 200 "):
                    raise Failed("answer %r" % status)
                length = int(hdr.get(b"content-length", b"-1"))
                if length != n or b"x-got" not in hdr:
                    raise Failed("answer without the origin's counts: %r" % head[:200])
                while len(buf) < n:
                    d = s.recv(65536)
                    if not d:
                        raise Failed("body cut at %d of %d" % (len(buf), n))
                    buf += d
                body, buf = buf[:n], buf[n:]
                if body != body_bytes(n):
                    raise Failed("body differs")
                up += int(hdr[b"x-got"])
                down += int(hdr[b"x-sent"])
                self.count(answered=1)
        except (OSError, Failed, ValueError) as e:
            s.close()
            self.done(me, "http", made, None, None, str(e), t)
            raise Failed("%s: %s" % (me, e))
        s.close()
        self.done(me, "http", made, up, down, None, t)

    def lane(self, i):
        rnd = random.Random(i * 7919 + os.getpid())
        turn = i % 2
        while not self.stop.is_set():
            try:
                if turn == 0:
                    self.tunnel(rnd)
                else:
                    self.http(rnd)
            except (OSError, Failed) as e:
                self.count(error=str(e))
                time.sleep(0.05)
            turn = 1 - turn
            if self.a.pause > 0:
                self.stop.wait(min(self.a.pause, 1000) / 1000.0)

    def long_tunnel(self, i, ready):
        t = time.monotonic()
        try:
            s, me = connect_tunnel(self.a.proxy, self.a.echo)
        except (OSError, Failed) as e:
            if isinstance(e, TunnelFailed):
                self.done(e.me, "connect", 1, None, None, str(e), t)
            self.count(requests=1, error="long %d: %s" % (i, e))
            ready.release()
            return
        self.count(requests=1, answered=1)
        ready.release()
        up, err, k = 0, None, 0
        try:
            while not self.stop.wait(LONG_EVERY):
                msg = b"long %d line %d\n" % (i, k)
                echo(s, msg)
                up += len(msg)
                k += 1
            msg = b"long %d last\n" % i
            echo(s, msg)
            up += len(msg)
        except (OSError, Failed) as e:
            err = "long %d (%s) after %d lines: %s" % (i, me, k, e)
            self.count(error=err)
        s.close()
        self.done(me, "connect", 1, up, up if err is None else None, err, t)
        if err is None:
            with self.lock:
                self.long_alive += 1

    def state(self):
        if not self.a.state:
            return
        with self.lock:
            line = "requests=%d answered=%d errors=%d\n" % (
                self.requests, self.answered, self.errors)
        with open(self.a.state + ".tmp", "w") as f:
            f.write(line)
        os.rename(self.a.state + ".tmp", self.a.state)

    def run(self):
        nlong = max(0, min(self.a.long, LONG_MAX))
        ready = threading.Semaphore(0)
        longs = [threading.Thread(target=self.long_tunnel, args=(i, ready), daemon=True)
                 for i in range(nlong)]
        for t in longs:
            t.start()
        for _ in longs:
            ready.acquire(timeout=TIMEOUT + 1)
        lanes = [threading.Thread(target=self.lane, args=(i,), daemon=True)
                 for i in range(max(1, min(self.a.lanes, LANES_MAX)))]
        for t in lanes:
            t.start()
        end = time.monotonic() + min(self.a.seconds, CHURN_SECONDS_MAX)
        while time.monotonic() < end:
            if self.a.stop and os.path.exists(self.a.stop):
                break
            self.state()
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        self.stop.set()
        for t in lanes + longs:
            t.join(TIMEOUT * 4)
        self.state()
        for e in self.first_errors:
            log("churn: %s" % e)
        write_records(self.a.out, self.recs)
        print("requests=%d answered=%d errors=%d connections=%d long_alive=%d/%d"
              % (self.requests, self.answered, self.errors, len(self.recs),
                 self.long_alive, nlong), flush=True)


def main():
    ap = argparse.ArgumentParser(
        description="load server and counting clients for intutic's tests",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("serve")
    serverlib.listen_args(sp)
    hp = sub.add_parser("hold")
    hp.add_argument("proxy", type=int)
    hp.add_argument("target")
    hp.add_argument("n", type=int)
    hp.add_argument("ready")
    hp.add_argument("go")
    hp.add_argument("out")
    hp.add_argument("--threads", type=int, default=16)
    cp = sub.add_parser("churn")
    cp.add_argument("proxy", type=int)
    cp.add_argument("--echo", required=True)
    cp.add_argument("--http", required=True)
    cp.add_argument("--out", required=True)
    cp.add_argument("--lanes", type=int, default=4)
    cp.add_argument("--long", type=int, default=2)
    cp.add_argument("--seconds", type=float, default=60)
    cp.add_argument("--stop")
    cp.add_argument("--state")
    cp.add_argument("--pause", type=float, default=0)
    argv = sys.argv[1:]
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv.insert(0, "serve")     # as lib-proxy.sh starts a server
    args = ap.parse_args(argv)
    if args.cmd == "serve":
        serverlib.check_bind(sp, args)
        serve(args)
    elif args.cmd == "hold":
        hold(args)
    else:
        Churn(args).run()


if __name__ == "__main__":
    main()
