"""serverlib.py -- what the test servers (echo.py, origin.py, dnsd.py)
share: their listening options, the port file, the stop signals, a TCP
listener and its bounded accept loop.  Standard library only."""

import ipaddress
import os
import select
import signal
import socket
import sys
import threading
import time


def listen_args(ap):
    """--bind, --port, --port-file and --lifetime, the same for every server."""
    ap.add_argument("--bind", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=0, help="port (default 0: any)")
    ap.add_argument("--port-file", required=True,
                    help="write the bound port here once listening")
    ap.add_argument("--lifetime", type=float, default=900,
                    help="exit after this many seconds (default 900)")


def check_bind(ap, args):
    """A server never resolves a name: --bind is an address."""
    try:
        ipaddress.ip_address(args.bind)
    except ValueError:
        ap.error("--bind takes an address, not a name")


def exit_on_signals():
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    signal.signal(signal.SIGINT, lambda s, f: sys.exit(0))


def tcp_listener(bind, port, backlog=128):
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    lsock = socket.socket(family, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((bind, port))
    lsock.listen(backlog)
    return lsock


def write_port_file(path, port):
    """Write atomically, so that a reader never sees half a number."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, path)


def accept_loop(lsock, deadline, slots, handle, log, full_msg=None):
    """Accept until the deadline, a thread per connection, at most as many
    at once as `slots` allows; handle(sock, "ADDR:PORT") releases its slot."""
    while time.monotonic() < deadline:
        r, _, _ = select.select([lsock], [], [], 1.0)
        if not r:
            continue
        try:
            sock, peer = lsock.accept()
        except OSError:
            continue
        if not slots.acquire(timeout=5.0):
            if full_msg:
                log(full_msg)
            sock.close()
            continue
        threading.Thread(target=handle, args=(sock, "%s:%d" % peer[:2]),
                         daemon=True).start()
