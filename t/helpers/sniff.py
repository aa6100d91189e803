#!/usr/bin/env python3
"""sniff.py — every frame an interface receives, one line each (t9003).

    sniff.py --iface IF --out FILE [--ready FILE]

Listens with an AF_PACKET socket on IF (run it inside the namespace that
holds IF) and appends to FILE one line per frame received (not the ones
sent from IF): the time, the ethertype, and for IPv4 the source,
destination, protocol and (TCP) flags or (ICMP) type.  Writes --ready once
listening.  Runs until SIGTERM.
"""
import argparse
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def describe(frame):
    etype = struct.unpack("!H", frame[12:14])[0]
    words = ["type=0x%04x" % etype]
    if etype == 0x0800 and len(frame) >= 34:
        ip = frame[14:]
        hl = (ip[0] & 0x0F) * 4
        proto = ip[9]
        words += ["src=" + socket.inet_ntoa(ip[12:16]),
                  "dst=" + socket.inet_ntoa(ip[16:20]), "proto=%d" % proto]
        l4 = ip[hl:]
        if proto == 6 and len(l4) >= 14:
            words.append("tcp-flags=0x%02x" % l4[13])
        elif proto == 1 and len(l4) >= 1:
            words.append("icmp-type=%d" % l4[0])
    elif etype == 0x0806 and len(frame) >= 42:
        words += ["arp-sender=" + socket.inet_ntoa(frame[28:32]),
                  "arp-target=" + socket.inet_ntoa(frame[38:42])]
    return " ".join(words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ready")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    s.bind((a.iface, 0))
    with open(a.out, "a", buffering=1) as out:
        if a.ready:
            with open(a.ready, "w") as r:
                r.write("ready\n")
        while True:
            frame, addr = s.recvfrom(65535)
            if addr[2] == PACKET_OUTGOING:
                continue
            out.write("%.3f %s\n" % (time.time(), describe(frame)))


if __name__ == "__main__":
    main()
