#!/usr/bin/env python3
"""echo.py -- a TCP server for intutic's proxy tests (CONNECT tunnels).

Binds 127.0.0.1 (port 0 unless --port), writes the port to --port-file,
serves until SIGTERM or --lifetime seconds; a thread per connection.
Standard library only.

Modes (--mode):
  echo            sends back every byte it receives (the default)
  sink            reads and discards; logs the byte count at the end
  source N        sends N bytes of a fixed pattern, then closes
  banner TEXT     sends TEXT and CRLF first (like an SSH server), then echoes
  stall N         reads N bytes, then reads nothing more until the idle
                  timeout (a receiver that stopped)

--tls CERT KEY wraps every connection in TLS first (logging the SNI the
client sent).  Each connection's end is logged to stderr as
"echo: PEER in=N out=N".
"""

import argparse
import socket
import ssl
import sys
import threading
import time

import serverlib

CONNECTIONS_MAX = 256
IDLE_TIMEOUT = 30.0
BLOCK = 65536
READS_PER_CONN_MAX = 10 ** 7       # 640 GB at 64 KiB a read: a bound, not a limit
SOURCE_MAX = 16 * 1024 * 1024 * 1024
PATTERN = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"


def log(msg):
    try:
        sys.stderr.write("echo: %s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def pattern_bytes(offset, n):
    plen = len(PATTERN)
    start = offset % plen
    reps = (start + n) // plen + 1
    return (PATTERN * reps)[start:start + n]


class Echo:
    def __init__(self, args):
        self.mode = args.mode[0]
        self.arg = args.mode[1] if len(args.mode) > 1 else None
        self.ctx = None
        self.local = threading.local()
        if args.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args.tls[0], args.tls[1])
            ctx.sni_callback = self.on_sni
            self.ctx = ctx
        self.slots = threading.BoundedSemaphore(CONNECTIONS_MAX)

    def on_sni(self, sslobj, name, ctx):
        self.local.sni = name or ""

    def handle(self, sock, peer):
        got = sent = 0
        try:
            sock.settimeout(IDLE_TIMEOUT)
            if self.ctx is not None:
                self.local.sni = ""
                sock = self.ctx.wrap_socket(sock, server_side=True)
                log("%s: TLS, SNI %s" % (peer, self.local.sni or "-"))
            if self.mode == "source":
                n = int(self.arg)
                while sent < n:
                    k = min(BLOCK, n - sent)
                    sock.sendall(pattern_bytes(sent, k))
                    sent += k
                return
            if self.mode == "banner":
                data = self.arg.encode("utf-8") + b"\r\n"
                sock.sendall(data)
                sent += len(data)
            if self.mode == "stall":
                n = int(self.arg)
                while got < n:
                    data = sock.recv(min(BLOCK, n - got))
                    if not data:
                        return
                    got += len(data)
                log("%s: stalled after %d bytes" % (peer, got))
                time.sleep(IDLE_TIMEOUT)
                return
            for _ in range(READS_PER_CONN_MAX):
                data = sock.recv(BLOCK)
                if not data:
                    break
                got += len(data)
                if self.mode != "sink":
                    sock.sendall(data)
                    sent += len(data)
        except (OSError, ssl.SSLError) as e:
            log("%s: %s" % (peer, e))
        finally:
            log("%s in=%d out=%d" % (peer, got, sent))
            try:
                if self.mode == "source":
                    sock.shutdown(socket.SHUT_WR)
                    # let the client read everything before the close
                    sock.settimeout(5.0)
                    for _ in range(1000):
                        if not sock.recv(BLOCK):
                            break
            except (OSError, ssl.SSLError):
                pass
            try:
                sock.close()
            except OSError:
                pass
            self.slots.release()

    def run(self, lsock, deadline):
        serverlib.accept_loop(lsock, deadline, self.slots, self.handle, log)
        log("lifetime over, exiting")


def main():
    ap = argparse.ArgumentParser(
        description="TCP echo/sink/source/banner server for intutic's proxy tests",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    serverlib.listen_args(ap)
    ap.add_argument("--mode", nargs="+", default=["echo"],
                    metavar="MODE [ARG]",
                    help="echo (default), sink, source N, banner TEXT, stall N")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                    help="wrap connections in TLS with this certificate and key")
    args = ap.parse_args()
    serverlib.check_bind(ap, args)
    m = args.mode
    if not ((m[0] in ("echo", "sink") and len(m) == 1)
            or (m[0] in ("source", "stall") and len(m) == 2
                and m[1].isdigit() and int(m[1]) <= SOURCE_MAX)
            or (m[0] == "banner" and len(m) == 2)):
        ap.error("--mode: echo, sink, source N, banner TEXT or stall N")

    serverlib.exit_on_signals()
    server = Echo(args)
    lsock = serverlib.tcp_listener(args.bind, args.port)
    serverlib.write_port_file(args.port_file, lsock.getsockname()[1])
    log("listening on %s port %d, mode %s" % (args.bind, lsock.getsockname()[1],
                                             " ".join(m)))
    server.run(lsock, time.monotonic() + args.lifetime)


if __name__ == "__main__":
    main()
