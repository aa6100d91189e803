#!/usr/bin/env python3
"""dnsd.py -- a small DNS server (UDP and TCP) for intutic's proxy tests.

Binds 127.0.0.1 (port 0 unless --port), UDP and TCP on the same port,
writes the port to --port-file, serves until SIGTERM or --lifetime seconds.
The wire format (RFC 1035) is done by hand; standard library only.

The zone file has one directive a line ('#' starts a comment):

  NAME A ADDR [ADDR...]       IPv4 addresses (several lines add up)
  NAME AAAA ADDR [ADDR...]    IPv6 addresses
  NAME TTL SECONDS            the TTL of NAME's records (default --ttl)
  NAME SERVFAIL               answer SERVFAIL
  NAME REFUSED                answer REFUSED
  NAME TIMEOUT                never answer (UDP or TCP)
  NAME TRUNCATED              over UDP, an empty answer with the TC bit;
                              over TCP, the real answer
  NAME SLOW MS                answer after MS milliseconds (at most 30000)

Names are matched without regard to case or a trailing dot.  A known name
without records of the asked type gets an empty NOERROR answer; an unknown
name gets NXDOMAIN.  A UDP answer over 512 bytes is sent truncated (TC).
The question is echoed byte for byte, so resolvers that randomise the case
of names (evdns does) accept the answers.

With --query-log FILE every query is appended as "NAME TYPE PROTO"
(NAME lowercased, no trailing dot; TYPE A, AAAA, ... or TYPEnn; PROTO udp
or tcp).  SIGHUP re-reads the zone file.
"""

import argparse
import ipaddress
import select
import signal
import socket
import struct
import sys
import threading
import time

import serverlib

UDP_MAX = 512                 # answers over UDP without EDNS
TCP_MSG_MAX = 65535
QUERIES_PER_TCP_CONN_MAX = 1000
TCP_CONNECTIONS_MAX = 128
PENDING_SLOW_MAX = 256        # delayed answers in flight
IDLE_TIMEOUT = 30.0
SLOW_MS_MAX = 30000
ZONE_LINES_MAX = 100000

TYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX",
         16: "TXT", 28: "AAAA", 33: "SRV", 64: "SVCB", 65: "HTTPS", 255: "ANY"}
RCODE_NOERROR, RCODE_FORMERR, RCODE_SERVFAIL, RCODE_NXDOMAIN = 0, 1, 2, 3
RCODE_NOTIMP, RCODE_REFUSED = 4, 5


def log(msg):
    try:
        sys.stderr.write("dnsd: %s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Entry:
    def __init__(self):
        self.a = []
        self.aaaa = []
        self.ttl = None
        self.mode = None        # SERVFAIL, REFUSED, TIMEOUT
        self.truncated = False
        self.slow_ms = 0


def norm(name):
    return name.rstrip(".").lower()


def load_zone(path):
    zone = {}
    if not path:
        return zone
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            if lineno > ZONE_LINES_MAX:
                raise ValueError("%s: more than %d lines" % (path, ZONE_LINES_MAX))
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 2:
                raise ValueError("%s:%d: expected NAME DIRECTIVE" % (path, lineno))
            name, what, rest = norm(words[0]), words[1].upper(), words[2:]
            e = zone.setdefault(name, Entry())
            try:
                if what == "A":
                    if not rest:
                        raise ValueError("no address")
                    e.a.extend(ipaddress.IPv4Address(x).packed for x in rest)
                elif what == "AAAA":
                    if not rest:
                        raise ValueError("no address")
                    e.aaaa.extend(ipaddress.IPv6Address(x).packed for x in rest)
                elif what == "TTL" and len(rest) == 1:
                    e.ttl = int(rest[0])
                elif what in ("SERVFAIL", "REFUSED", "TIMEOUT") and not rest:
                    e.mode = what
                elif what == "TRUNCATED" and not rest:
                    e.truncated = True
                elif what == "SLOW" and len(rest) == 1:
                    e.slow_ms = min(int(rest[0]), SLOW_MS_MAX)
                else:
                    raise ValueError("unknown directive '%s'" % " ".join(words[1:]))
            except ValueError as err:
                raise ValueError("%s:%d: %s" % (path, lineno, err))
    return zone


def parse_query(msg):
    """(id, flags, qname_text, qtype, qclass, question_bytes) or raises."""
    if len(msg) < 12:
        raise ValueError("short header")
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", msg[:12])
    if qd != 1:
        raise ValueError("qdcount %d" % qd)
    labels = []
    i = 12
    for _ in range(128):
        if i >= len(msg):
            raise ValueError("truncated name")
        n = msg[i]
        if n == 0:
            i += 1
            break
        if n & 0xC0:
            raise ValueError("compressed question name")
        labels.append(msg[i + 1:i + 1 + n])
        i += 1 + n
    else:
        raise ValueError("too many labels")
    if i + 4 > len(msg):
        raise ValueError("truncated question")
    qtype, qclass = struct.unpack("!HH", msg[i:i + 4])
    qname = b".".join(labels).decode("latin-1")
    return qid, flags, qname, qtype, qclass, msg[12:i + 4]


class Dnsd:
    def __init__(self, args):
        self.zone_path = args.zone
        self.ttl = args.ttl
        self.qlog_path = args.query_log
        self.zone = load_zone(self.zone_path)
        self.lock = threading.RLock()   # SIGHUP reloads on the main thread
        self.pending = threading.BoundedSemaphore(PENDING_SLOW_MAX)
        self.tcp_slots = threading.BoundedSemaphore(TCP_CONNECTIONS_MAX)

    def reload(self):
        try:
            zone = load_zone(self.zone_path)
        except (OSError, ValueError) as e:
            log("reload failed, keeping the old zone: %s" % e)
            return
        with self.lock:
            self.zone = zone
        log("zone reloaded")

    def qlog(self, name, qtype, proto):
        if not self.qlog_path:
            return
        line = "%s %s %s\n" % (norm(name) or ".", TYPES.get(qtype, "TYPE%d" % qtype),
                               proto)
        with self.lock:
            with open(self.qlog_path, "a") as f:
                f.write(line)

    def answer(self, msg, proto):
        """(reply bytes or None for no answer, delay in seconds)."""
        try:
            qid, flags, qname, qtype, qclass, question = parse_query(msg)
        except ValueError as e:
            log("bad query over %s: %s" % (proto, e))
            if len(msg) < 2:
                return None, 0
            qid = struct.unpack("!H", msg[:2])[0]
            return struct.pack("!HHHHHH", qid, 0x8000 | RCODE_FORMERR, 0, 0, 0, 0), 0
        self.qlog(qname, qtype, proto)
        opcode = (flags >> 11) & 0xF
        rd = flags & 0x0100
        base = 0x8000 | 0x0400 | rd | (opcode << 11)   # QR, AA, RD copied

        def reply(rcode, answers=(), tc=False):
            fl = base | rcode | (0x0200 if tc else 0)
            return (struct.pack("!HHHHHH", qid, fl, 1, len(answers), 0, 0)
                    + question + b"".join(answers))

        if flags & 0x8000 or opcode != 0:
            return reply(RCODE_NOTIMP), 0
        with self.lock:
            e = self.zone.get(norm(qname))
        if e is None:
            return reply(RCODE_NXDOMAIN), 0
        delay = e.slow_ms / 1000.0
        if e.mode == "TIMEOUT":
            return None, 0
        if e.mode == "SERVFAIL":
            return reply(RCODE_SERVFAIL), delay
        if e.mode == "REFUSED":
            return reply(RCODE_REFUSED), delay
        if e.truncated and proto == "udp":
            return reply(RCODE_NOERROR, tc=True), delay
        ttl = self.ttl if e.ttl is None else e.ttl
        rrs = []
        if qclass in (1, 255):
            if qtype in (1, 255):
                rrs += [struct.pack("!HHHIH", 0xC00C, 1, 1, ttl, 4) + a for a in e.a]
            if qtype in (28, 255):
                rrs += [struct.pack("!HHHIH", 0xC00C, 28, 1, ttl, 16) + a
                        for a in e.aaaa]
        out = reply(RCODE_NOERROR, rrs)
        if proto == "udp" and len(out) > UDP_MAX:
            out = reply(RCODE_NOERROR, tc=True)
        return out, delay

    # --- UDP -----------------------------------------------------------
    def on_udp(self, usock):
        try:
            msg, peer = usock.recvfrom(TCP_MSG_MAX)
        except OSError:
            return
        out, delay = self.answer(msg, "udp")
        if out is None:
            return
        if delay <= 0:
            self.udp_send(usock, out, peer)
            return
        if not self.pending.acquire(blocking=False):
            log("too many delayed answers, dropping one")
            return

        def later():
            try:
                time.sleep(delay)
                self.udp_send(usock, out, peer)
            finally:
                self.pending.release()
        threading.Thread(target=later, daemon=True).start()

    @staticmethod
    def udp_send(usock, out, peer):
        try:
            usock.sendto(out, peer)
        except OSError as e:
            log("cannot answer %s: %s" % (peer, e))

    # --- TCP -----------------------------------------------------------
    def on_tcp(self, conn):
        try:
            conn.settimeout(IDLE_TIMEOUT)
            for _ in range(QUERIES_PER_TCP_CONN_MAX):
                hdr = self.recv_exact(conn, 2)
                if hdr is None:
                    return
                n = struct.unpack("!H", hdr)[0]
                msg = self.recv_exact(conn, n)
                if msg is None:
                    return
                out, delay = self.answer(msg, "tcp")
                if out is None:
                    # TIMEOUT: hold the connection, answer nothing
                    self.recv_exact(conn, 1)
                    return
                if delay > 0:
                    time.sleep(delay)
                conn.sendall(struct.pack("!H", len(out)) + out)
        except OSError:
            pass
        finally:
            conn.close()
            self.tcp_slots.release()

    @staticmethod
    def recv_exact(conn, n):
        buf = b""
        for _ in range(n + 1):
            if len(buf) >= n:
                return buf
            data = conn.recv(n - len(buf))
            if not data:
                return None
            buf += data
        return buf if len(buf) >= n else None

    def run(self, usock, tsock, deadline):
        while time.monotonic() < deadline:
            try:
                r, _, _ = select.select([usock, tsock], [], [], 1.0)
            except InterruptedError:
                continue
            if usock in r:
                self.on_udp(usock)
            if tsock in r:
                try:
                    conn, _ = tsock.accept()
                except OSError:
                    continue
                if not self.tcp_slots.acquire(blocking=False):
                    conn.close()
                    continue
                threading.Thread(target=self.on_tcp, args=(conn,), daemon=True).start()
        log("lifetime over, exiting")


def bind_pair(addr, port):
    """A UDP and a TCP socket on the same port; port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    last = None
    for _ in range(50):
        usock = socket.socket(family, socket.SOCK_DGRAM)
        usock.bind((addr, port))
        got = usock.getsockname()[1]
        tsock = socket.socket(family, socket.SOCK_STREAM)
        tsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tsock.bind((addr, got))
        except OSError as e:
            last = e
            usock.close()
            tsock.close()
            if port:
                break
            continue
        tsock.listen(64)
        return usock, tsock, got
    raise OSError("cannot bind UDP and TCP on one port: %s" % last)


def main():
    ap = argparse.ArgumentParser(
        description="DNS server for intutic's proxy tests (see the module text)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    serverlib.listen_args(ap)
    ap.add_argument("--zone", help="zone file (none: every name is NXDOMAIN)")
    ap.add_argument("--query-log", help="append each query here")
    ap.add_argument("--ttl", type=int, default=60, help="default TTL (60)")
    args = ap.parse_args()
    serverlib.check_bind(ap, args)

    serverlib.exit_on_signals()
    try:
        server = Dnsd(args)
    except (OSError, ValueError) as e:
        log(str(e))
        sys.exit(2)
    signal.signal(signal.SIGHUP, lambda s, f: server.reload())
    usock, tsock, port = bind_pair(args.bind, args.port)
    if args.query_log:
        open(args.query_log, "a").close()
    serverlib.write_port_file(args.port_file, port)
    log("listening on %s port %d (udp, tcp)" % (args.bind, port))
    server.run(usock, tsock, time.monotonic() + args.lifetime)


if __name__ == "__main__":
    main()
