#!/usr/bin/env python3
"""settingsd.py -- a workspace settings API for intutic's launcher tests.

Binds 127.0.0.1 (port 0 unless --port), writes the port it got to
--port-file, serves HTTP/1.1 (HTTPS with --tls) until SIGTERM or
--lifetime seconds.  Standard library only.

GET /api/v1/workspace/settings answers what --answer-file says, read again
for every request, so that a test changes the answer by rewriting the file.
Its first line is one of:

  level LEVEL       200, {"sandbox": {"enforcement": "LEVEL", ...}} with
                    other keys the client must ignore
  status CODE       that status, a short JSON body
  body              200 with the rest of the file as the body, byte for byte
  huge N            200 with an N-byte JSON body (Content-Length)
  huge-chunked N    the same, in chunks, without Content-Length
  slow MS           200 and Content-Length, the first 10 bytes of a good
                    body, then MS ms (at most 30000) before the rest
  redirect          302 to /elsewhere on this server, which would say off
  hang MS           nothing for MS ms (at most 30000), then close

With --etag, a "level LEVEL" answer carries an ETag (a hash of its body),
and a request whose If-None-Match names that tag gets 304 Not Modified
with the ETag and no body, as an API that lets clients revalidate does.

GET /api/v1/workspace/rules answers the --rules-file's content (200,
application/yaml), read again for every request, with an ETag as above
under --etag; a rules file whose first line is "status CODE" answers that
status instead.  Without --rules-file it is 404.

With --token-file, a request whose "Authorization: Bearer TOKEN" does not
carry the token in that file gets 401.  Each request is logged to stderr as
"settingsd: METHOD TARGET auth=ok|missing|wrong answer=WORDS inm=TAG|none"
(inm: the request's If-None-Match), then " -> 304" when so answered; the token
itself is never logged.  Any other target is 404.
"""

import argparse
import hashlib
import socket
import ssl
import sys
import threading
import time

import serverlib

# Limits: every buffer, count and wait is bounded.
HEAD_BYTES_MAX = 65536
CONNECTIONS_MAX = 64
IDLE_TIMEOUT = 10.0             # seconds for the request head
TLS_HANDSHAKE_TIMEOUT = 10.0
WAIT_MS_MAX = 30000             # slow, hang
HUGE_MAX = 64 * 1024 * 1024     # bytes of a huge body
ANSWER_FILE_MAX = 1024 * 1024   # bytes of the answer file
CHUNK = 16384

API_PATH = "/api/v1/workspace/settings"
RULES_PATH = "/api/v1/workspace/rules"
REASONS = {200: "OK", 302: "Found", 304: "Not Modified", 400: "Bad Request", 401: "Unauthorized",
           403: "Forbidden", 404: "Not Found", 500: "Internal Server Error",
           502: "Bad Gateway", 503: "Service Unavailable"}


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def good_body(level):
    return ('{"workspace": {"name": "t", "ids": [1, 2.5, -3e2, true, null]}, '
            '"sandbox": {"image": "x", "enforcement": "%s", "allow": []}, '
            '"note": "\\u00e9\\"{"}\n' % level).encode()


class Closed(Exception):
    pass


class Server:
    def __init__(self, args):
        self.answer_file = args.answer_file
        self.etag = args.etag
        self.rules_file = args.rules_file
        self.token = None
        if args.token_file:
            with open(args.token_file, "rb") as f:
                self.token = f.read().strip()
        self.ctx = None
        if args.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args.tls[0], args.tls[1])
            self.ctx = ctx
        self.slots = threading.BoundedSemaphore(CONNECTIONS_MAX)

    def answer(self):
        with open(self.answer_file, "rb") as f:
            data = f.read(ANSWER_FILE_MAX + 1)
        if len(data) > ANSWER_FILE_MAX:
            raise ValueError("answer file larger than %d bytes" % ANSWER_FILE_MAX)
        first, _, rest = data.partition(b"\n")
        return first.decode().split(), rest

    def read_head(self, sock):
        buf = b""
        while b"\r\n\r\n" not in buf:
            if len(buf) > HEAD_BYTES_MAX:
                raise Closed()
            data = sock.recv(4096)
            if not data:
                raise Closed()
            buf += data
        head = buf.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            raise Closed()
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return parts[0], parts[1], headers

    @staticmethod
    def send_head(sock, status, headers):
        out = "HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, "Status"))
        for name, value in headers:
            out += "%s: %s\r\n" % (name, value)
        out += "Connection: close\r\n\r\n"
        sock.sendall(out.encode())

    def send(self, sock, status, body, ctype="application/json"):
        self.send_head(sock, status, [("Content-Type", ctype),
                                      ("Content-Length", str(len(body)))])
        sock.sendall(body)

    def auth(self, headers):
        if self.token is None:
            return "ok"
        value = headers.get("authorization")
        if value is None:
            return "missing"
        if value.encode() == b"Bearer " + self.token:
            return "ok"
        return "wrong"

    def serve_rules(self, sock, headers):
        auth = self.auth(headers)
        with open(self.rules_file, "rb") as f:
            body = f.read(ANSWER_FILE_MAX + 1)
        inm = headers.get("if-none-match")
        tag = None
        if self.etag:
            tag = '"%s"' % hashlib.sha256(body).hexdigest()[:16]
        status = 200
        first = body.split(b"\n", 1)[0].split()
        if len(first) == 2 and first[0] == b"status":
            status, tag = int(first[1]), None
        not_modified = auth == "ok" and tag is not None and inm == tag
        log("settingsd: GET %s auth=%s inm=%s%s" % (
            RULES_PATH, auth, inm or "none", " -> 304" if not_modified else ""))
        if auth != "ok":
            self.send(sock, 401, b'{"error": "unauthorized"}\n')
        elif not_modified:
            self.send_head(sock, 304, [("ETag", tag)])
        elif status != 200:
            self.send(sock, status, b'{"error": "as told"}\n')
        else:
            extra = [("ETag", tag)] if tag is not None else []
            self.send_head(sock, 200, [("Content-Type", "application/yaml"),
                                       ("Content-Length", str(len(body)))] + extra)
            sock.sendall(body)

    def serve(self, sock, host_port):
        method, target, headers = self.read_head(sock)
        if target == "/elsewhere":
            log("settingsd: %s %s" % (method, target))
            self.send(sock, 200, good_body("off"))
            return
        if method == "GET" and target == RULES_PATH and self.rules_file:
            self.serve_rules(sock, headers)
            return
        if method != "GET" or target != API_PATH:
            log("settingsd: %s %s -> 404" % (method, target))
            self.send(sock, 404, b'{"error": "not found"}\n')
            return
        auth = self.auth(headers)
        words, rest = self.answer()
        inm = headers.get("if-none-match")
        kind = words[0] if words else ""
        tag = None
        if self.etag and kind == "level" and len(words) == 2:
            tag = '"%s"' % hashlib.sha256(good_body(words[1])).hexdigest()[:16]
        not_modified = auth == "ok" and tag is not None and inm == tag
        log("settingsd: %s %s auth=%s answer=%s inm=%s%s" % (
            method, target, auth, " ".join(words), inm or "none",
            " -> 304" if not_modified else ""))
        if auth != "ok":
            self.send(sock, 401, b'{"error": "unauthorized"}\n')
            return
        if not_modified:
            self.send_head(sock, 304, [("ETag", tag)])
            return
        if kind == "level" and len(words) == 2:
            body = good_body(words[1])
            extra = [("ETag", tag)] if tag is not None else []
            self.send_head(sock, 200, [("Content-Type", "application/json"),
                                       ("Content-Length", str(len(body)))] + extra)
            sock.sendall(body)
        elif kind == "status" and len(words) == 2:
            self.send(sock, int(words[1]), b'{"error": "as told"}\n')
        elif kind == "body":
            self.send(sock, 200, rest)
        elif kind in ("huge", "huge-chunked") and len(words) == 2:
            n = min(int(words[1]), HUGE_MAX)
            body = b'{"sandbox": {"enforcement": "off"}}'
            pad = b" " * max(0, n - len(body) - 1)
            if kind == "huge":
                self.send_head(sock, 200, [("Content-Type", "application/json"),
                                           ("Content-Length", str(len(pad) + len(body) + 1))])
                sock.sendall(pad)
                sock.sendall(body + b"\n")
            else:
                self.send_head(sock, 200, [("Content-Type", "application/json"),
                                           ("Transfer-Encoding", "chunked")])
                data = pad + body + b"\n"
                for i in range(0, len(data), CHUNK):
                    piece = data[i:i + CHUNK]
                    sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sock.sendall(b"0\r\n\r\n")
        elif kind == "slow" and len(words) == 2:
            body = good_body("off")
            self.send_head(sock, 200, [("Content-Type", "application/json"),
                                       ("Content-Length", str(len(body)))])
            sock.sendall(body[:10])
            time.sleep(min(int(words[1]), WAIT_MS_MAX) / 1000.0)
            sock.sendall(body[10:])
        elif kind == "redirect":
            self.send_head(sock, 302, [("Location", "http://%s/elsewhere" % host_port),
                                       ("Content-Length", "0")])
        elif kind == "hang" and len(words) == 2:
            time.sleep(min(int(words[1]), WAIT_MS_MAX) / 1000.0)
        else:
            log("settingsd: bad answer file: %r" % (words,))
            self.send(sock, 500, b'{"error": "bad answer file"}\n')

    def handle(self, sock, peer):
        try:
            sock.settimeout(TLS_HANDSHAKE_TIMEOUT)
            if self.ctx is not None:
                try:
                    sock = self.ctx.wrap_socket(sock, server_side=True)
                except (ssl.SSLError, OSError) as e:
                    log("settingsd: TLS handshake with %s failed: %s" % (peer, e))
                    return
            sock.settimeout(IDLE_TIMEOUT)
            host_port = "%s:%d" % sock.getsockname()[:2]
            try:
                self.serve(sock, host_port)
            except (Closed, ConnectionError, ssl.SSLError, OSError, ValueError) as e:
                log("settingsd: connection from %s: %s" % (peer, e or "closed"))
        finally:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass
            self.slots.release()


def main():
    ap = argparse.ArgumentParser(
        description="workspace settings API for intutic's tests (see the module text)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    serverlib.listen_args(ap)
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                    help="serve HTTPS with this certificate and key")
    ap.add_argument("--answer-file", required=True,
                    help="what to answer (read for every request)")
    ap.add_argument("--token-file", help="the bearer token to expect")
    ap.add_argument("--rules-file", help="what /api/v1/workspace/rules answers")
    ap.add_argument("--etag", action="store_true",
                    help="tag level answers, answer 304 to a matching If-None-Match")
    args = ap.parse_args()
    serverlib.check_bind(ap, args)

    serverlib.exit_on_signals()
    server = Server(args)
    lsock = serverlib.tcp_listener(args.bind, args.port)
    serverlib.write_port_file(args.port_file, lsock.getsockname()[1])
    log("settingsd: listening on %s port %d%s" % (args.bind, lsock.getsockname()[1],
                                                 " (TLS)" if args.tls else ""))
    serverlib.accept_loop(lsock, time.monotonic() + args.lifetime, server.slots,
                          server.handle, log, "settingsd: too many connections")
    log("settingsd: lifetime over, exiting")


if __name__ == "__main__":
    main()
