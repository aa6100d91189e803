#!/usr/bin/env python3
"""tcpinfo.py -- this namespace's TCP connections, from the kernel's socket
table (sock_diag netlink, as ss asks it), with each one's queues and
counters from its TCP_INFO; no text of another tool is parsed.

  tcpinfo.py [--sport N] [--dport N] [--state established|all] [--count]

One line a connection:

  SRC:SPORT DST:DPORT state=established rq=N wq=N acked=N received=N

rq and wq are the receive and send queues (ss's Recv-Q and Send-Q);
acked and received are tcpi_bytes_acked (which counts the SYN) and
tcpi_bytes_received.  With --count, only how many there are.  A
connection matches --sport or --dport when either of its ports is that
one on that side; given both, either matches (as ss's "or").

Imported (PYTHONPATH=t/helpers), by a test's own client:
  established(dport)        the established connections to port dport
  wait_established(dport)   waits (10 s at most) until there is one
"""
import argparse
import ipaddress
import socket
import struct
import sys
import time

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
INET_DIAG_INFO = 2
TCP_ESTABLISHED = 1
STATES = {1: "established", 2: "syn-sent", 3: "syn-recv", 4: "fin-wait-1",
          5: "fin-wait-2", 6: "time-wait", 7: "close", 8: "close-wait",
          9: "last-ack", 10: "listen", 11: "closing"}
# struct tcp_info: tcpi_bytes_acked and tcpi_bytes_received (u64)
OFF_BYTES_ACKED = 120
OFF_BYTES_RECEIVED = 128


def dump(family, states):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    # struct inet_diag_req_v2 with an empty inet_diag_sockid (48 bytes)
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP,
                      1 << (INET_DIAG_INFO - 1), 0, states) + bytes(48)
    hdr = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY,
                      NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
    s.send(hdr + req)
    out = []
    done = False
    while not done:
        data = s.recv(65536)
        off = 0
        while off + 16 <= len(data):
            length, kind, _, _, _ = struct.unpack_from("=IHHII", data, off)
            if length < 16:
                done = True
                break
            if kind == NLMSG_DONE:
                done = True
                break
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("=i", data, off + 16)[0]
                raise OSError(-err, "sock_diag")
            out.append(parse(family, data[off + 16:off + length]))
            off += (length + 3) & ~3
    s.close()
    return out


def parse(family, msg):
    fam, state, _, _, sport, dport = struct.unpack_from("=BBBBHH", msg, 0)
    src = msg[8:24]
    dst = msg[24:40]
    rq, wq = struct.unpack_from("=II", msg, 56)
    if family == socket.AF_INET:
        src, dst = ipaddress.IPv4Address(src[:4]), ipaddress.IPv4Address(dst[:4])
        fmt = "%s:%d"
    else:
        src, dst = ipaddress.IPv6Address(src), ipaddress.IPv6Address(dst)
        fmt = "[%s]:%d"
    c = {"src": fmt % (src, socket.ntohs(sport)),
         "dst": fmt % (dst, socket.ntohs(dport)),
         "sport": socket.ntohs(sport), "dport": socket.ntohs(dport),
         "state": STATES.get(state, str(state)), "rq": rq, "wq": wq,
         "acked": None, "received": None}
    off = 72  # struct inet_diag_msg, then attributes
    while off + 4 <= len(msg):
        alen, atype = struct.unpack_from("=HH", msg, off)
        if alen < 4:
            break
        if atype == INET_DIAG_INFO and alen - 4 >= OFF_BYTES_RECEIVED + 8:
            c["acked"], = struct.unpack_from("=Q", msg, off + 4 + OFF_BYTES_ACKED)
            c["received"], = struct.unpack_from("=Q", msg, off + 4 + OFF_BYTES_RECEIVED)
        off += (alen + 3) & ~3
    return c


def established(dport):
    """The established connections (IPv4 and IPv6) to port dport."""
    states = 1 << TCP_ESTABLISHED
    return [c for c in dump(socket.AF_INET, states) + dump(socket.AF_INET6, states)
            if c["dport"] == dport]


def wait_established(dport, seconds=10):
    """Waits until a connection to port dport is established: True, or
    False when there is none after seconds."""
    end = time.monotonic() + seconds
    while not established(dport):
        if time.monotonic() >= end:
            return False
        time.sleep(0.1)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sport", type=int)
    ap.add_argument("--dport", type=int)
    ap.add_argument("--state", choices=("established", "all"),
                    default="established")
    ap.add_argument("--count", action="store_true")
    a = ap.parse_args()
    states = 1 << TCP_ESTABLISHED if a.state == "established" else 0xffffffff
    conns = dump(socket.AF_INET, states) + dump(socket.AF_INET6, states)
    if a.sport is not None or a.dport is not None:
        conns = [c for c in conns
                 if (a.sport is not None and c["sport"] == a.sport) or
                 (a.dport is not None and c["dport"] == a.dport)]
    if a.count:
        print(len(conns))
        return 0
    for c in conns:
        print("%s %s state=%s rq=%d wq=%d acked=%s received=%s" % (
            c["src"], c["dst"], c["state"], c["rq"], c["wq"],
            c["acked"], c["received"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
