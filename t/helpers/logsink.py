#!/usr/bin/env python3
"""logsink.py -- a stand-in for the syslog daemon or journald, for tests.

Binds a unix datagram socket at SOCKET (removed first if it is a socket
left over), writes --ready FILE once it does, and appends one JSON object a
line to --out for each datagram taken, flushed at once:

  --syslog   what syslog(3) sends to /dev/log, "<PRI>TIMESTAMP TAG[PID]: MSG":
             {"pri": N, "facility": N, "severity": N, "tag": "...",
              "pid": N, "msg": "...", "raw": "the datagram"}; a datagram
             of another shape has "raw" alone
  --journal  journald's native protocol (systemd.io/JOURNAL_NATIVE_PROTOCOL):
             "NAME=VALUE\\n", or "NAME\\n" + 64-bit LE length + VALUE + "\\n",
             as {"NAME": "VALUE", ...}; a datagram that breaks the protocol
             is {"malformed": "why"}

Ends on SIGTERM or SIGINT, after --max datagrams, or after --lifetime
seconds (default 120).  Standard library only.
"""

import argparse
import json
import os
import re
import signal
import socket
import stat
import struct
import sys
import time

DGRAM_MAX = 256 * 1024          # bytes of one datagram
MAX_DEFAULT = 10000             # datagrams before it ends
LIFETIME_DEFAULT = 120          # seconds
SYSLOG_RE = re.compile(
    rb'^<(\d{1,3})>([A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d) '
    rb'([^\[: ]+)\[(\d+)\]: (.*)$', re.S)


def parse_syslog(data):
    raw = data.decode("utf-8", "replace")
    m = SYSLOG_RE.match(data)
    if not m:
        return {"raw": raw}
    pri = int(m.group(1))
    return {"pri": pri, "facility": pri >> 3, "severity": pri & 7,
            "time": m.group(2).decode(), "tag": m.group(3).decode(),
            "pid": int(m.group(4)),
            "msg": m.group(5).decode("utf-8", "replace"), "raw": raw}


def parse_journal(data):
    fields = {}
    i = 0
    while i < len(data):
        nl = data.find(b"\n", i)
        if nl < 0:
            return {"malformed": "a field without its newline at %d" % i}
        line = data[i:nl]
        eq = line.find(b"=")
        if eq >= 0:
            name, value = line[:eq], line[eq + 1:]
            i = nl + 1
        else:
            name = line
            if nl + 9 > len(data):
                return {"malformed": "binary field %r cut" % name.decode()}
            (n,) = struct.unpack("<Q", data[nl + 1:nl + 9])
            start = nl + 9
            if start + n + 1 > len(data) or data[start + n:start + n + 1] != b"\n":
                return {"malformed": "binary field %r: bad length" % name.decode()}
            value = data[start:start + n]
            i = start + n + 1
        if not re.match(rb"^[A-Z0-9][A-Z0-9_]*$", name):
            return {"malformed": "bad field name %r" % name}
        fields[name.decode()] = value.decode("utf-8", "replace")
    return fields


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("socket")
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--syslog", action="store_true")
    kind.add_argument("--journal", action="store_true")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--max", type=int, default=MAX_DEFAULT)
    ap.add_argument("--lifetime", type=float, default=LIFETIME_DEFAULT)
    a = ap.parse_args()

    try:
        if stat.S_ISSOCK(os.lstat(a.socket).st_mode):
            os.unlink(a.socket)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(a.socket)
    os.chmod(a.socket, 0o666)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    with open(a.ready + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(a.ready + ".tmp", a.ready)
    end = time.monotonic() + a.lifetime
    with open(a.out, "a") as out:
        for _ in range(a.max):
            left = end - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                data = s.recv(DGRAM_MAX)
            except socket.timeout:
                break
            rec = parse_syslog(data) if a.syslog else parse_journal(data)
            out.write(json.dumps(rec) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
