#!/usr/bin/env python3
"""tunnel.py -- CONNECT clients for what client.py does not do: many
tunnels held open, a server that speaks first, bytes one per write.

  tunnel.py get PROXY_PORT HOST:PORT TEXT
      sends TEXT, half-closes, writes what comes back to stdout
  tunnel.py hold PROXY_PORT HOST:PORT N READY GO
      N tunnels, each seeing a line echoed ("ping I\\n"); then writes N to
      the file READY, waits (30 s at most) until the file GO exists, and
      closes them all
  tunnel.py banner PROXY_PORT HOST:PORT
      reads the server's first line before sending anything, then
      "ping\\n"; prints "banner: LINE" and "then: WHAT CAME BACK"
  tunnel.py bytes PROXY_PORT HOST:PORT FILE
      sends FILE one byte per write, then half-closes; what comes back
      goes to stdout
  tunnel.py tls PROXY_PORT HOST:PORT SNI CA
      a TLS handshake (verified against CA) whose ClientHello goes one
      byte per write, then GET /; the response to stdout

Each opens a CONNECT tunnel through the proxy on 127.0.0.1:PROXY_PORT and
reads its answer one byte at a time, so that bytes a server sends first
are never taken for part of it; an answer other than 200 fails.  The
byte-per-write modes (banner, bytes, tls) set TCP_NODELAY.  Every socket
wait is bounded (10 s).  Standard library only.
"""

import os
import socket
import ssl
import sys
import time

TIMEOUT = 10            # every socket operation
HEAD_MAX = 4096         # the proxy's answer to CONNECT
BANNER_MAX = 1000       # banner: the server's first line
HOLD_SECONDS = 30       # hold: at most, waiting for GO
GAP = 0.002             # between two bytes, one per write


def tunnel(port, to, nodelay=False):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=TIMEOUT)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (to, to)).encode())
    buf = b""
    while not buf.endswith(b"\r\n\r\n"):
        d = s.recv(1)
        if not d or len(buf) > HEAD_MAX:
            sys.exit("no answer to CONNECT: %r" % buf)
        buf += d
    if not buf.startswith(b"HTTP/1.1 200 "):
        sys.exit("answer to CONNECT: %r" % buf)
    return s


def dribble(s, data):
    for i in range(len(data)):
        s.send(data[i:i + 1])
        time.sleep(GAP)


def read_all(s):
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d


def get(port, to, text):
    s = tunnel(port, to)
    s.sendall(text.encode())
    s.shutdown(socket.SHUT_WR)
    out = sys.stdout.buffer
    while True:
        d = s.recv(65536)
        if not d:
            break
        out.write(d)


def hold(port, to, n, ready, go):
    socks = []
    for i in range(n):
        s = tunnel(port, to)
        msg = b"ping %d\n" % i
        s.sendall(msg)
        got = b""
        while len(got) < len(msg):
            d = s.recv(100)
            if not d:
                sys.exit("tunnel %d: closed after %r" % (i, got))
            got += d
        if got != msg:
            sys.exit("tunnel %d: echo %r" % (i, got))
        socks.append(s)
    with open(ready, "w") as f:
        f.write("%d\n" % n)
    deadline = time.monotonic() + HOLD_SECONDS
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("no %s after %d s" % (go, HOLD_SECONDS))
        time.sleep(0.05)
    for s in socks:
        s.close()


def banner(port, to):
    s = tunnel(port, to, nodelay=True)
    line = b""
    while not line.endswith(b"\r\n"):
        d = s.recv(1)
        if not d or len(line) > BANNER_MAX:
            sys.exit("no banner: %r" % line)
        line += d
    print("banner: %s" % line.decode().rstrip("\r\n"))
    s.sendall(b"ping\n")
    s.shutdown(socket.SHUT_WR)
    print("then: %s" % read_all(s).decode("latin-1").rstrip("\n"))


def send_bytes(port, to, path):
    s = tunnel(port, to, nodelay=True)
    with open(path, "rb") as f:
        dribble(s, f.read())
    s.shutdown(socket.SHUT_WR)
    sys.stdout.buffer.write(read_all(s))


def tls(port, to, sni, ca):
    s = tunnel(port, to, nodelay=True)
    ctx = ssl.create_default_context(cafile=ca)
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(inb, outb, server_hostname=sni)
    hello = True
    while True:
        try:
            conn.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            done = False
        out = outb.read()
        if out and hello:
            sys.stderr.write("ClientHello: %d bytes, one a write\n" % len(out))
            dribble(s, out)
            hello = False
        elif out:
            s.sendall(out)
        if done:
            break
        d = s.recv(65536)
        if not d:
            sys.exit("closed in the handshake")
        inb.write(d)
    conn.write(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % to).encode())
    s.sendall(outb.read())
    resp = b""
    while True:
        try:
            d = conn.read(65536)
            if not d:
                break
            resp += d
        except ssl.SSLWantReadError:
            d = s.recv(65536)
            if not d:
                break
            inb.write(d)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            break
    sys.stdout.write(resp.decode("latin-1"))


MODES = {
    "get": (1, lambda p, t, a: get(p, t, a[0])),
    "hold": (3, lambda p, t, a: hold(p, t, int(a[0]), a[1], a[2])),
    "banner": (0, lambda p, t, a: banner(p, t)),
    "bytes": (1, lambda p, t, a: send_bytes(p, t, a[0])),
    "tls": (2, lambda p, t, a: tls(p, t, a[0], a[1])),
}


def main():
    args = sys.argv[1:]
    if args and args[0] not in MODES:
        sys.exit("tunnel.py: unknown mode %s" % args[0])
    if len(args) < 3 or len(args) != 3 + MODES[args[0]][0]:
        sys.exit("usage:\n" + __doc__.split("\n\n")[1])
    MODES[args[0]][1](args[1], args[2], args[3:])


if __name__ == "__main__":
    main()
