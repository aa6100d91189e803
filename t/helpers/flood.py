#!/usr/bin/env python3
"""flood.py -- an origin that sends more than it was asked for, and the
clients of intutic's memory-bound tests (t/t3503-memory-bounds.sh).

serve (the default; lib-proxy.sh starts it with --port-file first):
  Binds 127.0.0.1 (port 0 unless --port), writes the port to --port-file,
  serves until SIGTERM or --lifetime seconds: one thread, non-blocking
  sockets, every connection at once (at most CONNECTIONS_MAX).

  --mode http   reads an HTTP/1.1 request head, answers a small keep-alive
                200 (Content-Length, "X-Flood-Conn: ID"), then floods: writes
                bytes on that connection, unasked, as fast as they are taken.
                When the flood ends at its limit it reads the next request
                (what came meanwhile is kept, up to HEAD_MAX).
  --mode raw    floods from the accept on (a server-first protocol in a
                CONNECT tunnel); what it receives is counted and dropped.

  --sndbuf BYTES sets SO_SNDBUF on each connection (0: the kernel's own,
  which grows to tcp_wmem's maximum): less the kernel holds on the way.
  --stats FILE is rewritten every STATS_SECONDS with "conns=N flooded=B
  stalled=S": the connections open, the unasked bytes the kernel took on
  all of them so far, and how many floods could not write for the last
  STATS_SECONDS (a test waits for the total to stop growing: every
  receiver is full).

  A flood ends at --flood-bytes or --flood-seconds, whichever comes first
  (each at most FLOOD_BYTES_MAX, FLOOD_SECONDS_MAX).  stderr gets one line
  when a connection is accepted, when its flood stops at a limit, and when
  it ends:

    flood: conn ID PEER accepted
    flood: conn ID request N: GET / HTTP/1.1
    flood: conn ID flood-limit=bytes|time flooded=BYTES
    flood: conn ID end=HOW requests=N flooded=BYTES in=BYTES

  HOW says who ended it: reset (ECONNRESET), epipe (EPIPE), eof (the peer's
  FIN), other errors by errno name; idle (IDLE_TIMEOUT without a byte
  either way), shutdown (SIGTERM or --lifetime).  "flooded" counts the
  unasked bytes the kernel took: what the peer's side read or buffered.

get PROXY_PORT HOST:PORT --ready FILE --go FILE --out FILE:
  One client connection to the proxy: an absolute-form GET for
  http://HOST:PORT/, its answer read (Content-Length), "first STATUS CONN"
  written to --ready; then idle, reading nothing, until --go exists (at most
  --wait seconds); then a second GET on the same connection, and the line
  "second STATUS CONN" (or "second closed" / "second reset" / "second
  timeout") to --out.

hold PROXY_PORT HOST:PORT N --ready FILE --go FILE:
  N CONNECT tunnels from one process, each with a small SO_RCVBUF
  (--rcvbuf): the 200 read byte by byte (nothing past it), a line sent so
  that the proxy's peek lets the tunnel through, then never a read again.
  "held=N failed=F" goes to --ready once all are up; they close when --go
  exists (at most --wait seconds), and "closed=N" goes to stdout.

read PROXY_PORT HOST:PORT BYTES:
  One CONNECT tunnel that reads: prints "read=N" once BYTES came (or what
  came in --timeout seconds, exit status 1).

Standard library only; only the addresses given are connected to.
"""

import argparse
import errno
import os
import selectors
import socket
import sys
import time

import serverlib

CONNECTIONS_MAX = 1024
HEAD_MAX = 64 * 1024            # a request head, and what is kept meanwhile
READ_BLOCK = 64 * 1024
WRITE_BLOCK = 256 * 1024        # one send(2) of the flood
FLOOD_BYTES_MAX = 4 << 30
FLOOD_SECONDS_MAX = 120.0
IDLE_TIMEOUT = 30.0             # nothing either way: the connection is closed
TICK = 0.1                      # the loop looks at the limits this often
REQUESTS_PER_CONN_MAX = 1000
HOLD_MAX = 2000                 # tunnels of one hold
WAIT_MAX = 120.0                # get/hold: waiting for --go
CLIENT_TIMEOUT = 10.0           # a client's connect, head, answer
ANSWER_MAX = 1 << 20            # a client reads an answer's body up to this
READ_MAX = 1 << 30              # read: BYTES at most
STATS_SECONDS = 0.25            # --stats: rewritten this often

BLOCK = (b"flood-" * (WRITE_BLOCK // 6 + 1))[:WRITE_BLOCK]


def log(msg):
    try:
        sys.stderr.write("flood: %s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def errname(e):
    if e.errno == errno.ECONNRESET:
        return "reset"
    if e.errno == errno.EPIPE:
        return "epipe"
    return errno.errorcode.get(e.errno, "error%s" % e.errno).lower()


# --- the server ---------------------------------------------------------------

class Conn:
    def __init__(self, cid, sock, peer, mode):
        self.id = cid
        self.sock = sock
        self.peer = peer
        self.inbuf = b""
        self.out = b""                  # an answer, written before a flood
        self.flooding = mode == "raw"
        self.flood_start = time.monotonic()
        self.flooded = 0                # of the current flood
        self.flooded_total = 0
        self.got = 0
        self.requests = 0
        self.last = time.monotonic()
        self.last_write = time.monotonic()


class Server:
    def __init__(self, args, lsock):
        self.mode = args.mode
        self.flood_bytes = args.flood_bytes
        self.flood_seconds = args.flood_seconds
        self.lsock = lsock
        self.sel = selectors.DefaultSelector()
        self.sndbuf = args.sndbuf
        self.stats = args.stats
        self.stats_next = 0.0
        self.flooded = 0                # over all connections, ever
        self.conns = {}
        self.next_id = 1

    def events_of(self, c):
        ev = selectors.EVENT_READ
        if c.out or c.flooding:
            ev |= selectors.EVENT_WRITE
        return ev

    def update(self, c):
        self.sel.modify(c.sock, self.events_of(c), c)

    def end(self, c, how):
        log("conn %d end=%s requests=%d flooded=%d in=%d"
            % (c.id, how, c.requests, c.flooded_total, c.got))
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        try:
            c.sock.close()
        except OSError:
            pass
        self.conns.pop(c.id, None)

    def accept(self):
        try:
            sock, peer = self.lsock.accept()
        except OSError:
            return
        if len(self.conns) >= CONNECTIONS_MAX:
            log("more than %d connections: one refused" % CONNECTIONS_MAX)
            sock.close()
            return
        sock.setblocking(False)
        if self.sndbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
        c = Conn(self.next_id, sock, "%s:%d" % peer[:2], self.mode)
        self.next_id += 1
        self.conns[c.id] = c
        log("conn %d %s accepted" % (c.id, c.peer))
        self.sel.register(sock, self.events_of(c), c)

    def answer(self, c):
        """Answers the requests in c.inbuf while not flooding."""
        while not c.flooding and not c.out:
            end = c.inbuf.find(b"\r\n\r\n")
            if end < 0:
                if len(c.inbuf) > HEAD_MAX:
                    self.end(c, "head-too-large")
                    return False
                return True
            head, c.inbuf = c.inbuf[:end], c.inbuf[end + 4:]
            c.requests += 1
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            log("conn %d request %d: %s" % (c.id, c.requests, line))
            if c.requests > REQUESTS_PER_CONN_MAX:
                self.end(c, "too-many-requests")
                return False
            body = b"flood conn %d request %d\n" % (c.id, c.requests)
            c.out = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                     b"Content-Length: %d\r\nX-Flood-Conn: %d\r\n\r\n"
                     % (len(body), c.id)) + body
        return True

    def on_read(self, c):
        try:
            data = c.sock.recv(READ_BLOCK)
        except BlockingIOError:
            return True
        except OSError as e:
            self.end(c, errname(e))
            return False
        if not data:
            self.end(c, "eof")
            return False
        c.got += len(data)
        c.last = time.monotonic()
        if self.mode == "raw":
            return True
        if len(c.inbuf) + len(data) > HEAD_MAX:
            self.end(c, "head-too-large")
            return False
        c.inbuf += data
        return self.answer(c)

    def stop_flood(self, c, why):
        log("conn %d flood-limit=%s flooded=%d" % (c.id, why, c.flooded))
        c.flooding = False
        if self.mode == "http":
            return self.answer(c)
        return True

    def on_write(self, c):
        try:
            if c.out:
                n = c.sock.send(c.out)
                c.out = c.out[n:]
                if not c.out:
                    c.flooding = True
                    c.flood_start = c.last_write = time.monotonic()
                    c.flooded = 0
                return True
            if not c.flooding:
                return True
            want = min(WRITE_BLOCK, self.flood_bytes - c.flooded)
            n = c.sock.send(BLOCK[:want])
        except BlockingIOError:
            return True
        except OSError as e:
            self.end(c, errname(e))
            return False
        c.flooded += n
        c.flooded_total += n
        self.flooded += n
        c.last = c.last_write = time.monotonic()
        if c.flooded >= self.flood_bytes:
            return self.stop_flood(c, "bytes")
        return True

    def write_stats(self, now):
        if not self.stats or now < self.stats_next:
            return
        self.stats_next = now + STATS_SECONDS
        stalled = sum(1 for c in self.conns.values()
                      if c.flooding and now - c.last_write >= STATS_SECONDS)
        tmp = "%s.tmp.%d" % (self.stats, os.getpid())
        with open(tmp, "w") as f:
            f.write("conns=%d flooded=%d stalled=%d\n"
                    % (len(self.conns), self.flooded, stalled))
        os.rename(tmp, self.stats)

    def tick(self):
        now = time.monotonic()
        self.write_stats(now)
        for c in list(self.conns.values()):
            if c.flooding and now - c.flood_start >= self.flood_seconds:
                if not self.stop_flood(c, "time"):
                    continue
            if c.id in self.conns:
                if now - c.last >= IDLE_TIMEOUT and not c.flooding:
                    self.end(c, "idle")
                else:
                    self.update(c)

    def run(self, deadline):
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        next_tick = time.monotonic() + TICK
        try:
            while time.monotonic() < deadline:
                for key, ev in self.sel.select(TICK):
                    if key.data is None:
                        self.accept()
                        continue
                    c = key.data
                    if c.id not in self.conns:
                        continue
                    if ev & selectors.EVENT_READ and not self.on_read(c):
                        continue
                    if ev & selectors.EVENT_WRITE and not self.on_write(c):
                        continue
                    self.update(c)
                if time.monotonic() >= next_tick:
                    self.tick()
                    next_tick = time.monotonic() + TICK
            log("lifetime over, exiting")
        finally:
            for c in list(self.conns.values()):
                self.end(c, "shutdown")


def serve(args):
    serverlib.exit_on_signals()
    lsock = serverlib.tcp_listener(args.bind, args.port, backlog=1024)
    lsock.setblocking(False)
    server = Server(args, lsock)
    serverlib.write_port_file(args.port_file, lsock.getsockname()[1])
    log("listening on %s port %d, mode %s, flood %d bytes or %g s"
        % (args.bind, lsock.getsockname()[1], args.mode, args.flood_bytes,
           args.flood_seconds))
    server.run(time.monotonic() + args.lifetime)


# --- the clients ----------------------------------------------------------------

def split_target(ap, text):
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        ap.error("expected HOST:PORT, got '%s'" % text)
    return host, int(port)


def read_head(sock):
    """The bytes up to and with the blank line, one recv(1) at a time (so
    nothing past the head is taken from the socket)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        if len(head) > HEAD_MAX:
            raise ValueError("a head over %d bytes" % HEAD_MAX)
        b = sock.recv(1)
        if not b:
            raise EOFError("closed after %d bytes of a head" % len(head))
        head += b
    return head


def answer_of(sock):
    """'STATUS CONN' of one answer, its body read (Content-Length)."""
    head = read_head(sock).decode("latin-1")
    lines = head.split("\r\n")
    status = lines[0].split(" ")[1] if " " in lines[0] else "?"
    length, conn = 0, "-"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        elif name.strip().lower() == "x-flood-conn":
            conn = value.strip()
    if length > ANSWER_MAX:
        raise ValueError("a body of %d bytes" % length)
    body = b""
    while len(body) < length:
        b = sock.recv(length - len(body))
        if not b:
            raise EOFError("closed in the body")
        body += b
    return "%s %s" % (status, conn)


def write_file(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.rename(tmp, path)


def wait_go(path, seconds):
    deadline = time.monotonic() + min(seconds, WAIT_MAX)
    while time.monotonic() < deadline and not os.path.exists(path):
        time.sleep(0.05)


def get(ap, args):
    host, port = split_target(ap, args.target)
    req = ("GET http://%s:%d/ HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
           % (host, port, host, port)).encode()
    s = socket.create_connection(("127.0.0.1", args.proxy),
                                 timeout=CLIENT_TIMEOUT)
    s.sendall(req)
    write_file(args.ready, "first " + answer_of(s))
    wait_go(args.go, args.wait)
    try:
        s.sendall(req)
        what = answer_of(s)
    except EOFError:
        what = "closed"
    except socket.timeout:
        what = "timeout"
    except OSError as e:
        what = errname(e)
    write_file(args.out, "second " + what)
    s.close()


def connect_tunnel(proxy, host, port, rcvbuf=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(CLIENT_TIMEOUT)
    s.connect(("127.0.0.1", proxy))
    s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
               % (host, port, host, port)).encode())
    head = read_head(s)
    if not head.startswith(b"HTTP/1.1 200"):
        raise ValueError(head.split(b"\r\n", 1)[0].decode("latin-1"))
    # Not TLS, not HTTP: the proxy's peek lets it through on a port the
    # allow entry names.
    s.sendall(b"hold\n")
    return s


def hold(ap, args):
    host, port = split_target(ap, args.target)
    if not 1 <= args.n <= HOLD_MAX:
        ap.error("N: 1 to %d" % HOLD_MAX)
    socks, failed = [], 0
    for i in range(args.n):
        try:
            socks.append(connect_tunnel(args.proxy, host, port, args.rcvbuf))
        except (OSError, ValueError, EOFError) as e:
            failed += 1
            log("hold: tunnel %d: %s" % (i + 1, e))
    write_file(args.ready, "held=%d failed=%d" % (len(socks), failed))
    wait_go(args.go, args.wait)
    for s in socks:
        s.close()
    print("closed=%d" % len(socks), flush=True)
    sys.exit(1 if failed else 0)


def read(ap, args):
    host, port = split_target(ap, args.target)
    if not 1 <= args.bytes <= READ_MAX:
        ap.error("BYTES: 1 to %d" % READ_MAX)
    s = connect_tunnel(args.proxy, host, port)
    deadline = time.monotonic() + min(args.timeout, WAIT_MAX)
    got = 0
    try:
        while got < args.bytes and time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            b = s.recv(min(READ_BLOCK, args.bytes - got))
            if not b:
                break
            got += len(b)
    except socket.timeout:
        pass
    s.close()
    print("read=%d" % got, flush=True)
    sys.exit(0 if got >= args.bytes else 1)


def main():
    ap = argparse.ArgumentParser(
        description="a flooding origin and the clients of the memory tests",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("serve")
    serverlib.listen_args(sp)
    sp.add_argument("--mode", choices=("http", "raw"), default="http")
    sp.add_argument("--flood-bytes", type=int, default=256 << 20)
    sp.add_argument("--flood-seconds", type=float, default=10.0)
    sp.add_argument("--sndbuf", type=int, default=0)
    sp.add_argument("--stats")
    gp = sub.add_parser("get")
    gp.add_argument("proxy", type=int)
    gp.add_argument("target")
    gp.add_argument("--ready", required=True)
    gp.add_argument("--go", required=True)
    gp.add_argument("--out", required=True)
    gp.add_argument("--wait", type=float, default=30.0)
    hp = sub.add_parser("hold")
    hp.add_argument("proxy", type=int)
    hp.add_argument("target")
    hp.add_argument("n", type=int)
    hp.add_argument("--ready", required=True)
    hp.add_argument("--go", required=True)
    hp.add_argument("--rcvbuf", type=int, default=4096)
    hp.add_argument("--wait", type=float, default=60.0)
    rp = sub.add_parser("read")
    rp.add_argument("proxy", type=int)
    rp.add_argument("target")
    rp.add_argument("bytes", type=int)
    rp.add_argument("--timeout", type=float, default=10.0)
    argv = sys.argv[1:]
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv.insert(0, "serve")     # as lib-proxy.sh starts a server
    args = ap.parse_args(argv)
    if args.cmd == "serve":
        serverlib.check_bind(sp, args)
        if not 1 <= args.flood_bytes <= FLOOD_BYTES_MAX:
            sp.error("--flood-bytes: 1 to %d" % FLOOD_BYTES_MAX)
        if not 0 < args.flood_seconds <= FLOOD_SECONDS_MAX:
            sp.error("--flood-seconds: more than 0, at most %g"
                     % FLOOD_SECONDS_MAX)
        serve(args)
    elif args.cmd == "get":
        get(ap, args)
    elif args.cmd == "hold":
        hold(ap, args)
    else:
        read(ap, args)


if __name__ == "__main__":
    main()
