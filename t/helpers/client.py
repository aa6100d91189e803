#!/usr/bin/env python3
"""client.py -- small clients for intutic's tests, where curl does not fit.

  client.py dns --server [ADDR:]PORT [--tcp] NAME [TYPE]
      One DNS query (TYPE A, AAAA or a number; default A).  Prints
      "rcode=NAME tc=0|1 answers=N" and then one line per answer,
      "NAME TYPE TTL ADDRESS".  Exit 0 when an answer came, whatever its
      rcode; 1 on a timeout.

  client.py tcp --to HOST:PORT [--proxy ADDR:PORT] [--tls] [--send TEXT]
                [--send-file FILE] [--read N] [--half-close]
      Connects (through the proxy with CONNECT when --proxy is given, then
      TLS when --tls), sends, and writes what comes back to stdout until
      the peer closes or --read N bytes came.  --half-close shuts down
      the sending side once everything is sent.

  client.py ws --to HOST:PORT [--proxy ADDR:PORT [--forward]] [--tls]
               [--host NAME] [--path /ws] [--header 'NAME: VALUE']...
               --message TEXT
      A WebSocket upgrade (with the --header lines), one text frame, the
      echo, a close handshake.
      Prints the status line of the answer, then "echo: TEXT" and
      "close: CODE".  --forward sends the upgrade to the proxy in
      absolute form (ws://) instead of tunnelling with CONNECT.

TLS options: --cacert FILE (verify against it; without it, no
verification), --sni NAME (default: the host of --to).
No name is ever looked up: --server, --proxy and (without --proxy) --to
take an address; a name in --to goes to the proxy as it is.
Every wait is bounded by --timeout (default 10 s).  Standard library only.
"""

import argparse
import base64
import hashlib
import ipaddress
import os
import random
import socket
import ssl
import struct
import sys

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN",
          4: "NOTIMP", 5: "REFUSED"}
TYPES = {"A": 1, "AAAA": 28, "CNAME": 5, "MX": 15, "TXT": 16, "ANY": 255,
         "HTTPS": 65}
READ_MAX = 1 << 34
HEAD_MAX = 65536
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def die(msg, code=2):
    sys.stderr.write("client: %s\n" % msg)
    sys.exit(code)


def split_hostport(s, default_host=None):
    host, sep, port = s.rpartition(":")
    if not sep:
        if default_host is None:
            die("expected HOST:PORT, got '%s'" % s)
        host, port = default_host, s
    host = host.strip("[]")
    if not port.isdigit():
        die("bad port in '%s'" % s)
    return host, int(port)


def address(host):
    """Where this client connects must be an address: it looks no name up
    (the machine's resolver is not for tests)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        die("'%s' is a name: connect to an address (names go to the proxy)" % host)
    return host


# --- DNS ---------------------------------------------------------------
def dns_query(args):
    host, port = split_hostport(args.server, "127.0.0.1")
    qtype = TYPES.get(args.type.upper()) or (int(args.type) if args.type.isdigit() else None)
    if qtype is None:
        die("unknown type '%s'" % args.type)
    qid = random.randrange(65536)
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in args.name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode("ascii")
    q += b"\0" + struct.pack("!HH", qtype, 1)
    try:
        if args.tcp:
            s = socket.create_connection((address(host), port), timeout=args.timeout)
            s.sendall(struct.pack("!H", len(q)) + q)
            n = struct.unpack("!H", recv_exact(s, 2))[0]
            r = recv_exact(s, n)
            s.close()
        else:
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                              socket.SOCK_DGRAM)
            s.settimeout(args.timeout)
            s.sendto(q, (address(host), port))
            for _ in range(10):
                r, _ = s.recvfrom(65535)
                if r[:2] == q[:2]:
                    break
            else:
                die("no answer with our id")
            s.close()
    except socket.timeout:
        print("timeout")
        sys.exit(1)
    except (OSError, EOFError) as e:
        die("query failed: %s" % e, 1)
    rid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", r[:12])
    if rid != qid:
        die("answer id %d, query id %d" % (rid, qid))
    print("rcode=%s tc=%d answers=%d" % (RCODES.get(flags & 0xF, str(flags & 0xF)),
                                         1 if flags & 0x0200 else 0, an))
    i = 12
    for _ in range(qd):
        _, i = read_name(r, i)
        i += 4
    for _ in range(an):
        name, i = read_name(r, i)
        typ, cls, ttl, rdlen = struct.unpack("!HHIH", r[i:i + 10])
        i += 10
        rdata = r[i:i + rdlen]
        i += rdlen
        if typ == 1 and rdlen == 4:
            text = socket.inet_ntop(socket.AF_INET, rdata)
        elif typ == 28 and rdlen == 16:
            text = socket.inet_ntop(socket.AF_INET6, rdata)
        else:
            text = rdata.hex()
        tname = {v: k for k, v in TYPES.items()}.get(typ, "TYPE%d" % typ)
        print("%s %s %d %s" % (name, tname, ttl, text))


def read_name(msg, i):
    labels = []
    end = None
    for _ in range(128):
        n = msg[i]
        if n == 0:
            i += 1
            break
        if n & 0xC0 == 0xC0:
            if end is None:
                end = i + 2
            i = ((n & 0x3F) << 8) | msg[i + 1]
            continue
        labels.append(msg[i + 1:i + 1 + n].decode("latin-1"))
        i += 1 + n
    return ".".join(labels), (end if end is not None else i)


def recv_exact(s, n):
    buf = b""
    for _ in range(n + 1):
        if len(buf) >= n:
            return buf
        d = s.recv(n - len(buf))
        if not d:
            raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += d
    return buf


# --- connections ---------------------------------------------------------
def read_head(s, exact=False):
    """Read an HTTP response head; returns (status line, rest of buffer).
    exact: one byte at a time, so that nothing after the head is read
    (a CONNECT answer, after which a server may speak first)."""
    buf = b""
    for _ in range(HEAD_MAX):
        if b"\r\n\r\n" in buf:
            break
        if len(buf) > HEAD_MAX:
            die("response head too long")
        d = s.recv(1 if exact else 4096)
        if not d:
            die("connection closed before a response head (%r)" % buf[:200], 1)
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def connect(args):
    """Connect to --to, through --proxy with CONNECT if given, then TLS."""
    host, port = split_hostport(args.to)
    if args.proxy and not getattr(args, "forward", False):
        phost, pport = split_hostport(args.proxy, "127.0.0.1")
        s = socket.create_connection((address(phost), pport), timeout=args.timeout)
        auth = "%s:%d" % (host if ":" not in host else "[%s]" % host, port)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (auth, auth)).encode())
        head, rest = read_head(s, exact=True)
        status = head.split("\r\n", 1)[0]
        sys.stderr.write("client: proxy said: %s\n" % status)
        parts = status.split(" ")
        if len(parts) < 2 or not parts[1].startswith("2"):
            print(status)
            sys.exit(3)
        if rest:
            die("proxy sent bytes after its CONNECT answer")
    elif args.proxy:
        phost, pport = split_hostport(args.proxy, "127.0.0.1")
        s = socket.create_connection((address(phost), pport), timeout=args.timeout)
    else:
        s = socket.create_connection((address(host), port), timeout=args.timeout)
    if args.tls:
        if args.cacert:
            ctx = ssl.create_default_context(cafile=args.cacert)
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        s = ctx.wrap_socket(s, server_hostname=args.sni or host)
    return s, host, port


def tcp(args):
    s, _, _ = connect(args)
    data = b""
    if args.send is not None:
        data += args.send.encode("utf-8")
    if args.send_file:
        with open(args.send_file, "rb") as f:
            data += f.read()
    if data:
        s.sendall(data)
    if args.half_close:
        if isinstance(s, ssl.SSLSocket):
            die("--half-close does not work over TLS")
        s.shutdown(socket.SHUT_WR)
    out = sys.stdout.buffer
    got = 0
    want = args.read if args.read is not None else READ_MAX
    try:
        while got < want:
            d = s.recv(min(65536, want - got))
            if not d:
                break
            out.write(d)
            got += len(d)
    except socket.timeout:
        if args.read is not None:
            die("timeout after %d of %d bytes" % (got, args.read), 1)
    except (ConnectionError, ssl.SSLError) as e:
        out.flush()
        die("after %d bytes: %s" % (got, e), 1)
    out.flush()
    s.close()


def ws(args):
    s, host, port = connect(args)
    key = base64.b64encode(os.urandom(16)).decode()
    hosthdr = args.host or ("%s:%d" % (host, port))
    target = args.path
    if args.proxy and args.forward:
        target = "%s://%s%s" % ("wss" if args.tls else "ws", hosthdr, args.path)
    req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
           "Sec-WebSocket-Version: 13\r\n%s\r\n" % (
               target, hosthdr, key, "".join(h + "\r\n" for h in args.header)))
    s.sendall(req.encode())
    head, rest = read_head(s)
    lines = head.split("\r\n")
    print(lines[0])
    if " 101 " not in lines[0] + " ":
        sys.exit(1)
    want = base64.b64encode(hashlib.sha1(key.encode() + WS_GUID).digest()).decode()
    got = [l.split(":", 1)[1].strip() for l in lines[1:]
           if l.lower().startswith("sec-websocket-accept:")]
    if got != [want]:
        die("bad Sec-WebSocket-Accept %r, want %r" % (got, want), 1)
    buf = [rest]

    def recv_n(n):
        for _ in range(n + 1):
            if len(buf[0]) >= n:
                break
            d = s.recv(65536)
            if not d:
                die("connection closed in a frame", 1)
            buf[0] += d
        r, buf[0] = buf[0][:n], buf[0][n:]
        return r

    def send_frame(op, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            hdr = struct.pack("!BB", 0x80 | op, 0x80 | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", 0x80 | op, 0x80 | 126, n)
        else:
            hdr = struct.pack("!BBQ", 0x80 | op, 0x80 | 127, n)
        s.sendall(hdr + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))

    def read_frame():
        b0, b1 = recv_n(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", recv_n(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", recv_n(8))[0]
        if b1 & 0x80:
            die("server frame is masked", 1)
        return b0 & 0x0F, recv_n(n)

    send_frame(0x1, args.message.encode("utf-8"))
    op, payload = read_frame()
    if op != 0x1:
        die("expected a text frame, got opcode %d" % op, 1)
    print("echo: %s" % payload.decode("utf-8"))
    send_frame(0x8, struct.pack("!H", 1000))
    op, payload = read_frame()
    if op != 0x8:
        die("expected a close frame, got opcode %d" % op, 1)
    print("close: %d" % (struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 0))
    s.close()


def main():
    ap = argparse.ArgumentParser(description="test clients (see the module text)",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dns", help="one DNS query")
    d.add_argument("--server", required=True, help="[ADDR:]PORT")
    d.add_argument("--tcp", action="store_true")
    d.add_argument("name")
    d.add_argument("type", nargs="?", default="A")
    for name in ("tcp", "ws"):
        p = sub.add_parser(name, help="%s client" % name)
        p.add_argument("--to", required=True, help="HOST:PORT")
        p.add_argument("--proxy", help="ADDR:PORT of an HTTP proxy")
        p.add_argument("--tls", action="store_true")
        p.add_argument("--cacert")
        p.add_argument("--sni")
        if name == "tcp":
            p.add_argument("--send")
            p.add_argument("--send-file")
            p.add_argument("--read", type=int)
            p.add_argument("--half-close", action="store_true")
        else:
            p.add_argument("--forward", action="store_true")
            p.add_argument("--host")
            p.add_argument("--path", default="/ws")
            p.add_argument("--message", required=True)
            p.add_argument("--header", action="append", default=[],
                           help="one more request header, 'NAME: VALUE'")
    for p in (d,) + tuple(sub.choices[n] for n in ("tcp", "ws")):
        p.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    {"dns": dns_query, "tcp": tcp, "ws": ws}[args.cmd](args)


if __name__ == "__main__":
    main()
