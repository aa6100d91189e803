#!/usr/bin/env python3
"""origin.py -- an HTTP/1.1 origin server for intutic's proxy tests.

Binds 127.0.0.1 (port 0 unless --port), writes the port it got to
--port-file, serves until SIGTERM or --lifetime seconds.  Threaded,
keep-alive, optionally TLS.  Standard library only.  Each request line is
logged to stderr as "NAME: METHOD TARGET VERSION host=HOST".

Endpoints (GET unless said; HEAD works on every path and sends the headers
GET would send, without a body):

  /                 "hello from HOST" (the Host header)
  /bytes/N          N bytes with Content-Length
  /chunked/N        N bytes in chunked encoding, several chunks
  /close/N          N bytes, no Content-Length, delimited by closing the
                    connection; ?v=1.0 answers with an HTTP/1.0 status line
  /status/CODE      that status; 204 and 304 have no body
  /echo             (POST, PUT) the request body back; Content-Length or
                    chunked request bodies; Expect: 100-continue is answered
                    with "100 Continue" first.  Response headers
                    X-Body-Framing (length|chunked|none) and X-Expect say how
                    the body came
  /headers          the request's header lines, as received, one per line
  /request          the request line, then the header lines
  /slow?ms=N        waits N ms (at most 30000) before answering;
                    &after=headers sends the headers first, then waits
  /reset            headers, part of the body, then a TCP reset (SO_LINGER 0)
  /ws               WebSocket upgrade (101 with Sec-WebSocket-Accept), then
                    echoes each frame (text, binary, ping -> pong, close);
                    ?mode=raw echoes raw bytes after the 101 instead
  /files/NAME       the file NAME from --docroot (no '/' in NAME)

Every response has X-Origin: NAME (--name) and, over TLS, X-TLS-SNI: the
server name the client sent ("-" for none).  Request bodies sent to other
paths are read and discarded.
"""

import argparse
import base64
import hashlib
import os
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse

import serverlib

# Limits: every buffer, count and wait is bounded.
REQUEST_LINE_MAX = 8192
HEADER_BYTES_MAX = 65536
HEADER_COUNT_MAX = 100
BODY_MAX = 256 * 1024 * 1024          # buffered request bodies (/echo)
CHUNK_LINE_MAX = 1024
BYTES_MAX = 16 * 1024 * 1024 * 1024   # /bytes/N and friends
REQUESTS_PER_CONN_MAX = 10000
CONNECTIONS_MAX = 512
IDLE_TIMEOUT = 30.0                   # seconds without a byte from the client
TLS_HANDSHAKE_TIMEOUT = 10.0
SLOW_MS_MAX = 30000
WS_FRAME_MAX = 16 * 1024 * 1024
WS_FRAMES_MAX = 100000
BLOCK = 65536
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PATTERN = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"

REASONS = {
    100: "Continue", 101: "Switching Protocols", 200: "OK", 201: "Created",
    202: "Accepted", 204: "No Content", 206: "Partial Content",
    301: "Moved Permanently", 302: "Found", 303: "See Other",
    304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect",
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
    411: "Length Required", 413: "Content Too Large", 417: "Expectation Failed",
    426: "Upgrade Required", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
    504: "Gateway Timeout", 505: "HTTP Version Not Supported",
}


class BadRequest(Exception):
    def __init__(self, status, text):
        Exception.__init__(self, text)
        self.status = status


class Closed(Exception):
    """The client went away (or idled out) between or inside requests."""


def pattern_bytes(offset, n):
    """n bytes of the repeating pattern, starting at offset."""
    plen = len(PATTERN)
    start = offset % plen
    reps = (start + n) // plen + 1
    return (PATTERN * reps)[start:start + n]


def log(msg):
    try:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Conn:
    """One client connection: a buffered reader over the socket."""

    def __init__(self, server, sock, peer, sni):
        self.server = server
        self.sock = sock
        self.peer = peer
        self.sni = sni
        self.buf = b""

    def fill(self):
        try:
            data = self.sock.recv(BLOCK)
        except socket.timeout:
            raise Closed("idle timeout")
        except (ConnectionError, ssl.SSLError, OSError) as e:
            raise Closed(str(e))
        if not data:
            raise Closed("eof")
        self.buf += data

    def readline(self, limit):
        """A line ending in LF (CRLF or bare LF), without the line end."""
        for _ in range(limit + 1):
            i = self.buf.find(b"\n")
            if i >= 0:
                line = self.buf[:i]
                self.buf = self.buf[i + 1:]
                if line.endswith(b"\r"):
                    line = line[:-1]
                return line
            if len(self.buf) > limit:
                raise BadRequest(431, "line too long")
            self.fill()
        raise BadRequest(431, "line too long")

    def read_exact(self, n):
        parts = []
        need = n
        if self.buf:
            take = self.buf[:need]
            self.buf = self.buf[len(take):]
            parts.append(take)
            need -= len(take)
        while need > 0:
            try:
                data = self.sock.recv(min(need, BLOCK))
            except socket.timeout:
                raise Closed("idle timeout in body")
            except (ConnectionError, ssl.SSLError, OSError) as e:
                raise Closed(str(e))
            if not data:
                raise Closed("eof in body")
            parts.append(data)
            need -= len(data)
        return b"".join(parts)

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (ConnectionError, ssl.SSLError, OSError) as e:
            raise Closed(str(e))


class Request:
    def __init__(self):
        self.method = ""
        self.target = ""
        self.version = ""
        self.line = b""
        self.raw_headers = []      # the header lines as received
        self.headers = []          # (lowercased name, value)
        self.path = ""
        self.query = {}
        self.body = b""
        self.framing = "none"
        self.expect = ""

    def get(self, name, default=""):
        name = name.lower()
        for k, v in self.headers:
            if k == name:
                return v
        return default

    def get_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k == name]

    def tokens(self, name):
        out = []
        for v in self.get_all(name):
            out.extend(t.strip().lower() for t in v.split(",") if t.strip())
        return out


def read_request(conn):
    """Read a request line and headers; None at a clean end of connection."""
    line = b""
    # Tolerate a few empty lines before a request (RFC 9112 section 2.2).
    for _ in range(4):
        try:
            line = conn.readline(REQUEST_LINE_MAX)
        except Closed:
            if conn.buf:
                raise
            return None
        if line:
            break
    if not line:
        return None
    req = Request()
    req.line = line
    parts = line.split(b" ")
    if len(parts) != 3:
        raise BadRequest(400, "bad request line")
    try:
        req.method = parts[0].decode("ascii")
        req.target = parts[1].decode("ascii")
        req.version = parts[2].decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest(400, "request line is not ASCII")
    if req.version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest(505, "unsupported version")
    total = 0
    for _ in range(HEADER_COUNT_MAX + 1):
        h = conn.readline(HEADER_BYTES_MAX)
        if not h:
            break
        total += len(h) + 2
        if total > HEADER_BYTES_MAX or len(req.raw_headers) >= HEADER_COUNT_MAX:
            raise BadRequest(431, "too many header bytes or lines")
        if h[:1] in (b" ", b"\t"):
            raise BadRequest(400, "obsolete line folding")
        name, sep, value = h.partition(b":")
        if not sep or not name or name != name.strip():
            raise BadRequest(400, "bad header line")
        req.raw_headers.append(h)
        req.headers.append((name.decode("latin-1").lower(),
                            value.strip().decode("latin-1")))
    else:
        raise BadRequest(431, "too many header lines")
    target = req.target
    if "://" in target:
        # absolute-form: route on the path, as RFC 9112 asks of a server
        u = urllib.parse.urlsplit(target)
        target = (u.path or "/") + ("?" + u.query if u.query else "")
    path, _, query = target.partition("?")
    req.path = path or "/"
    req.query = dict(urllib.parse.parse_qsl(query))
    return req


def read_body(conn, req, expect_ok):
    """Read the request body by its framing.  expect_ok: send 100 Continue
    when the client asked for it."""
    te = req.tokens("transfer-encoding")
    cl = req.get_all("content-length")
    req.expect = req.get("expect").lower()
    if req.expect == "100-continue" and req.version == "HTTP/1.1" and (te or cl):
        if expect_ok:
            conn.send(b"HTTP/1.1 100 Continue\r\n\r\n")
    if te:
        if te[-1] != "chunked":
            raise BadRequest(400, "transfer-encoding without chunked last")
        if cl:
            raise BadRequest(400, "both content-length and transfer-encoding")
        req.framing = "chunked"
        parts = []
        size_total = 0
        for _ in range(BODY_MAX + 1):
            sline = conn.readline(CHUNK_LINE_MAX)
            sz = sline.split(b";", 1)[0].strip()
            try:
                n = int(sz, 16)
            except ValueError:
                raise BadRequest(400, "bad chunk size")
            if n < 0:
                raise BadRequest(400, "bad chunk size")
            if n == 0:
                # trailer section, then the empty line
                for _ in range(HEADER_COUNT_MAX + 1):
                    if not conn.readline(HEADER_BYTES_MAX):
                        break
                else:
                    raise BadRequest(431, "too many trailer lines")
                break
            size_total += n
            if size_total > BODY_MAX:
                raise BadRequest(413, "body too large")
            parts.append(conn.read_exact(n))
            if conn.readline(2) != b"":
                raise BadRequest(400, "chunk not followed by CRLF")
        req.body = b"".join(parts)
    elif cl:
        if len(set(cl)) != 1 or not cl[0].isdigit():
            raise BadRequest(400, "bad content-length")
        n = int(cl[0])
        if n > BODY_MAX:
            raise BadRequest(413, "body too large")
        req.framing = "length"
        req.body = conn.read_exact(n)


class Handler:
    """Serves one connection, request after request."""

    def __init__(self, server, conn):
        self.server = server
        self.conn = conn

    def base_headers(self):
        h = [("X-Origin", self.server.name)]
        if self.conn.sni is not None:
            h.append(("X-TLS-SNI", self.conn.sni or "-"))
        return h

    def head(self, req, status, headers, reason=None, version=None):
        if reason is None:
            reason = REASONS.get(status, "Status")
        ver = version or "HTTP/1.1"
        out = ["%s %d %s\r\n" % (ver, status, reason)]
        for k, v in self.base_headers() + headers:
            out.append("%s: %s\r\n" % (k, v))
        out.append("\r\n")
        self.conn.send("".join(out).encode("latin-1"))

    def simple(self, req, status, body, ctype="text/plain", extra=None,
               keep=True):
        """A response with Content-Length; returns whether to keep alive."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        headers = [("Content-Type", ctype)]
        if status not in (204, 304) and not (100 <= status < 200):
            headers.append(("Content-Length", str(len(body))))
        else:
            body = b""
        if extra:
            headers.extend(extra)
        if not keep:
            headers.append(("Connection", "close"))
        self.head(req, status, headers)
        if req is None or req.method != "HEAD":
            self.conn.send(body)
        return keep

    def send_pattern(self, n):
        off = 0
        while off < n:
            k = min(BLOCK, n - off)
            self.conn.send(pattern_bytes(off, k))
            off += k

    def number(self, text, limit):
        if not text.isdigit() or int(text) > limit:
            raise BadRequest(400, "bad number '%s'" % text[:20])
        return int(text)

    def serve(self):
        for _ in range(REQUESTS_PER_CONN_MAX):
            try:
                req = read_request(self.conn)
            except BadRequest as e:
                log("%s: bad request from %s: %s" % (self.server.name,
                                                     self.conn.peer, e))
                self.simple(None, e.status, "%s\n" % e, keep=False)
                return
            if req is None:
                return
            log("%s: %s host=%s" % (self.server.name,
                                    req.line.decode("latin-1"),
                                    req.get("host", "-")))
            keep = req.version == "HTTP/1.1"
            if "close" in req.tokens("connection"):
                keep = False
            if req.version == "HTTP/1.0" and "keep-alive" in req.tokens("connection"):
                keep = True
            try:
                keep = self.dispatch(req, keep)
            except BadRequest as e:
                self.simple(req, e.status, "%s\n" % e, keep=False)
                return
            if not keep:
                return

    def dispatch(self, req, keep):
        p = req.path
        m = req.method
        if p == "/ws" and m == "GET":
            self.websocket(req)
            return False
        # Read the request body first, whatever the path, so that the
        # connection stays in step; only /echo asks for it (100-continue).
        read_body(self.conn, req, expect_ok=(p == "/echo"))
        if p == "/":
            return self.simple(req, 200, "hello from %s\n" % req.get("host", "-"),
                               keep=keep)
        if p.startswith("/bytes/"):
            n = self.number(p[7:], BYTES_MAX)
            self.head(req, 200, [("Content-Type", "application/octet-stream"),
                                 ("Content-Length", str(n))]
                      + ([] if keep else [("Connection", "close")]))
            if m != "HEAD":
                self.send_pattern(n)
            return keep
        if p.startswith("/chunked/"):
            n = self.number(p[9:], BYTES_MAX)
            if req.version == "HTTP/1.0":
                # no chunked encoding for an HTTP/1.0 client
                return self.close_delimited(req, n, "HTTP/1.0")
            self.head(req, 200, [("Content-Type", "application/octet-stream"),
                                 ("Transfer-Encoding", "chunked")]
                      + ([] if keep else [("Connection", "close")]))
            if m != "HEAD":
                size = max(1, min(16384, (n + 3) // 4))
                off = 0
                while off < n:
                    k = min(size, n - off)
                    self.conn.send(b"%x\r\n" % k + pattern_bytes(off, k) + b"\r\n")
                    off += k
                self.conn.send(b"0\r\n\r\n")
            return keep
        if p.startswith("/close/"):
            n = self.number(p[7:], BYTES_MAX)
            ver = "HTTP/1.0" if req.query.get("v") == "1.0" else "HTTP/1.1"
            return self.close_delimited(req, n, ver)
        if p.startswith("/status/"):
            code = self.number(p[8:], 999)
            if code < 200:
                raise BadRequest(400, "status must be 200 to 999")
            return self.simple(req, code, "status %d\n" % code, keep=keep)
        if p == "/echo":
            if m not in ("POST", "PUT"):
                return self.simple(req, 405, "use POST or PUT\n",
                                   extra=[("Allow", "POST, PUT")], keep=keep)
            extra = [("X-Body-Framing", req.framing)]
            if req.expect:
                extra.append(("X-Expect", req.expect))
            return self.simple(req, 200, req.body, "application/octet-stream",
                               extra=extra, keep=keep)
        if p == "/headers":
            body = b"".join(h + b"\n" for h in req.raw_headers)
            return self.simple(req, 200, body, keep=keep)
        if p == "/request":
            body = req.line + b"\n" + b"".join(h + b"\n" for h in req.raw_headers)
            return self.simple(req, 200, body, keep=keep)
        if p == "/slow":
            ms = self.number(req.query.get("ms", "1000"), SLOW_MS_MAX)
            body = "slept %d ms\n" % ms
            if req.query.get("after") == "headers":
                self.head(req, 200, [("Content-Type", "text/plain"),
                                     ("Content-Length", str(len(body)))])
                time.sleep(ms / 1000.0)
                if m != "HEAD":
                    self.conn.send(body.encode())
                return keep
            time.sleep(ms / 1000.0)
            return self.simple(req, 200, body, keep=keep)
        if p == "/reset":
            self.head(req, 200, [("Content-Type", "application/octet-stream"),
                                 ("Content-Length", "1000000")])
            if m != "HEAD":
                self.send_pattern(1000)
                time.sleep(0.1)
            self.reset()
            return False
        if p.startswith("/files/"):
            name = p[7:]
            root = self.server.docroot
            if not root or not name or "/" in name or name.startswith("."):
                return self.simple(req, 404, "no such file\n", keep=keep)
            try:
                with open(os.path.join(root, name), "rb") as f:
                    data = f.read(BODY_MAX + 1)
            except OSError:
                return self.simple(req, 404, "no such file\n", keep=keep)
            if len(data) > BODY_MAX:
                return self.simple(req, 500, "file too large\n", keep=keep)
            return self.simple(req, 200, data, "application/octet-stream",
                               keep=keep)
        return self.simple(req, 404, "not found: %s\n" % p, keep=keep)

    def close_delimited(self, req, n, version):
        self.head(req, 200, [("Content-Type", "application/octet-stream"),
                             ("Connection", "close")], version=version)
        if req.method != "HEAD":
            self.send_pattern(n)
        return False

    def reset(self):
        """Close with a TCP RST: SO_LINGER on, timeout 0."""
        try:
            self.conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      struct.pack("ii", 1, 0))
        except OSError:
            pass

    # --- WebSocket (RFC 6455), just enough to echo ---------------------
    def websocket(self, req):
        key = req.get("sec-websocket-key")
        if ("websocket" not in req.tokens("upgrade")
                or "upgrade" not in req.tokens("connection") or not key):
            self.simple(req, 426, "websocket upgrade required\n",
                        extra=[("Upgrade", "websocket")], keep=False)
            return
        try:
            if len(base64.b64decode(key, validate=True)) != 16:
                raise ValueError("key length")
        except ValueError:
            self.simple(req, 400, "bad Sec-WebSocket-Key\n", keep=False)
            return
        accept = base64.b64encode(hashlib.sha1(key.encode("ascii") + WS_GUID)
                                  .digest()).decode("ascii")
        self.head(req, 101, [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                             ("Sec-WebSocket-Accept", accept)])
        if req.query.get("mode") == "raw":
            self.raw_echo()
            return
        for _ in range(WS_FRAMES_MAX):
            try:
                fin_op, payload = self.ws_read_frame()
            except BadRequest:
                self.conn.send(self.ws_frame(0x8, struct.pack("!H", 1002)))
                return
            op = fin_op & 0x0F
            if op == 0x8:
                self.conn.send(self.ws_frame(0x8, payload[:2]))
                return
            if op == 0x9:
                self.conn.send(self.ws_frame(0xA, payload))
            elif op == 0xA:
                pass
            else:
                self.conn.send(self.ws_frame(op, payload, fin_op & 0x80))

    def raw_echo(self):
        if self.conn.buf:
            self.conn.send(self.conn.buf)
            self.conn.buf = b""
        for _ in range(WS_FRAMES_MAX):
            try:
                self.conn.fill()
            except Closed:
                return
            self.conn.send(self.conn.buf)
            self.conn.buf = b""

    def ws_read_frame(self):
        b0, b1 = self.conn.read_exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.conn.read_exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.conn.read_exact(8))[0]
        if n > WS_FRAME_MAX:
            raise BadRequest(400, "frame too large")
        mask = self.conn.read_exact(4) if b1 & 0x80 else None
        data = self.conn.read_exact(n)
        if mask is None:
            raise BadRequest(400, "client frame not masked")
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        return b0, data

    @staticmethod
    def ws_frame(op, payload, fin=0x80):
        n = len(payload)
        if n < 126:
            hdr = struct.pack("!BB", fin | op, n)
        elif n < 65536:
            hdr = struct.pack("!BBH", fin | op, 126, n)
        else:
            hdr = struct.pack("!BBQ", fin | op, 127, n)
        return hdr + payload


class Server:
    def __init__(self, args):
        self.name = args.name
        self.docroot = args.docroot
        self.ctx = None
        if args.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args.tls[0], args.tls[1])
            ctx.set_alpn_protocols(["http/1.1"])
            ctx.sni_callback = self.on_sni
            self.ctx = ctx
        self.slots = threading.BoundedSemaphore(CONNECTIONS_MAX)
        self.local = threading.local()

    def on_sni(self, sslobj, name, ctx):
        # The handshake runs in the connection's own thread.
        self.local.sni = name or ""

    def handle(self, sock, peer):
        sni = None
        try:
            sock.settimeout(TLS_HANDSHAKE_TIMEOUT)
            if self.ctx is not None:
                self.local.sni = ""
                try:
                    sock = self.ctx.wrap_socket(sock, server_side=True)
                except (ssl.SSLError, OSError) as e:
                    log("%s: TLS handshake with %s failed: %s" % (self.name, peer, e))
                    return
                sni = self.local.sni
            sock.settimeout(IDLE_TIMEOUT)
            conn = Conn(self, sock, peer, sni)
            try:
                Handler(self, conn).serve()
            except Closed:
                pass
        finally:
            try:
                sock.close()
            except OSError:
                pass
            self.slots.release()

    def run(self, lsock, deadline):
        serverlib.accept_loop(lsock, deadline, self.slots, self.handle, log,
                              "%s: too many connections, closing one" % self.name)
        log("%s: lifetime over, exiting" % self.name)


def main():
    ap = argparse.ArgumentParser(
        description="HTTP/1.1 origin for intutic's proxy tests (see the module text)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    serverlib.listen_args(ap)
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                    help="serve HTTPS with this certificate and key")
    ap.add_argument("--name", default="origin", help="X-Origin and log name")
    ap.add_argument("--docroot", help="directory served under /files/")
    args = ap.parse_args()
    serverlib.check_bind(ap, args)

    serverlib.exit_on_signals()
    server = Server(args)
    lsock = serverlib.tcp_listener(args.bind, args.port)
    serverlib.write_port_file(args.port_file, lsock.getsockname()[1])
    log("%s: listening on %s port %d%s" % (args.name, args.bind,
                                          lsock.getsockname()[1],
                                          " (TLS)" if args.tls else ""))
    server.run(lsock, time.monotonic() + args.lifetime)


if __name__ == "__main__":
    main()
