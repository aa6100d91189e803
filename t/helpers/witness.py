#!/usr/bin/env python3
"""witness.py -- a second test host's listener that logs every byte it gets.

  witness.py --bind ADDR --port-file FILE [--port N] [--lifetime SECONDS]

Listens on ADDR with TCP and UDP on one port (--port, default 0: the
system picks one for TCP, and UDP takes the same number), writes that port to FILE once both
listen, and serves until SIGTERM or --lifetime.  Every TCP read and every
UDP datagram is logged to stdout, flushed at once, as one line:

  tcp PEER accepted
  tcp PEER data=TEXT
  tcp PEER end
  udp PEER data=TEXT

TEXT is the bytes with anything outside printable ASCII (and "\\") as \\xHH.
TCP data is echoed back; each datagram is answered with "ack:" and itself,
so that a flow is a two-way one (connection tracking then counts it as
established).  What the tests assert on is this log: what reached the host.
Standard library only; every wait is bounded.
"""

import argparse
import os
import select
import socket
import sys
import threading
import time

CONNECTIONS_MAX = 64
IDLE_TIMEOUT = 60.0
BLOCK = 65536


def text(data):
    out = []
    for b in data:
        if 0x20 <= b < 0x7f and b != 0x5c:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


lock = threading.Lock()


def log(line):
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def peer_text(addr):
    host, port = addr[0], addr[1]
    return ("[%s]:%d" % (host, port)) if ":" in host else ("%s:%d" % (host, port))


def serve_tcp(conn, addr):
    p = peer_text(addr)
    log("tcp %s accepted" % p)
    conn.settimeout(IDLE_TIMEOUT)
    try:
        while True:
            data = conn.recv(BLOCK)
            if not data:
                break
            log("tcp %s data=%s" % (p, text(data)))
            conn.sendall(data)
    except OSError:
        pass
    finally:
        log("tcp %s end" % p)
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=600.0)
    args = ap.parse_args()
    fam = socket.AF_INET6 if ":" in args.bind else socket.AF_INET
    tcp = socket.socket(fam, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((args.bind, args.port))
    port = tcp.getsockname()[1]
    tcp.listen(16)
    udp = socket.socket(fam, socket.SOCK_DGRAM)
    udp.bind((args.bind, port))
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(args.port_file + ".tmp", args.port_file)
    deadline = time.monotonic() + args.lifetime
    threads = 0
    while time.monotonic() < deadline:
        r, _, _ = select.select([tcp, udp], [], [], 0.5)
        if udp in r:
            data, addr = udp.recvfrom(BLOCK)
            log("udp %s data=%s" % (peer_text(addr), text(data)))
            udp.sendto(b"ack:" + data, addr)
        if tcp in r:
            conn, addr = tcp.accept()
            if threads >= CONNECTIONS_MAX:
                conn.close()
                continue
            threads += 1
            threading.Thread(target=serve_tcp, args=(conn, addr),
                             daemon=True).start()


if __name__ == "__main__":
    main()
