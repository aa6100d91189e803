#!/usr/bin/env python3
"""adversarial.py -- run the adversarial HTTP cases (t/data/adversarial/cases)
against intutic-proxy, one after the other, and record what happened.

  adversarial.py --cases FILE --proxy PORT --origin-port PORT
                 --origin-log FILE --audit FILE --out DIR [--only ID,...]

For each case: one client connection to 127.0.0.1:PORT (the proxy); the
case's bytes are sent (in pieces, see @WAIT@ below); the answers are read
until the proxy closes, or until as many answers as the case expects came
and then nothing for GRACE seconds (an answer more, such as the answer to
a smuggled request, still counts), or CASE_SECONDS are over.  Then the
client closes and the script waits (at most SETTLE_SECONDS) until the
audit log has the close record of that connection and the proxy's
intutic_connections_active is back to 1 (its own scrape).  It writes, in
OUT/ID/:

  request          the bytes sent
  raw              the bytes received
  answers          one line per answer: "STATUS" for an answer that has
                   no X-Intutic-Error header (the origin's, or the 200 of a
                   CONNECT), "STATUS:REASON" for the proxy's own refusal
  answers.expect   the case's expected answers, one a line, each
                   alternative ("403:denied/400:bad-request") resolved to
                   the one that is there and "origin" to the answer there
                   when it is an origin's: test_cmp answers.expect answers
  decisions        one line per decision record of the connection:
                   "PROTO:HOST:DECISION:REASON" ("-" for a null field:
                   the host of a request refused before it named one)
  decisions.expect the expected ones, cut to as many fields as the case
                   gives (a token without REASON matches any reason);
                   "*" in the case: a copy of decisions (not checked)
  origin.log       what the origin logged while the case ran (its request
                   lines, or nginx's access log lines)
  audit.jsonl      the audit records of the connection
  closes           how many close records the connection got
  active           intutic_connections_active at the end (1: only the
                   scrape itself)
  how              how the reading ended: eof, reset, idle, timeout

The cases file: one case a line, "#" lines and blank lines skipped,
five fields separated by " | ":

  ID | MODE | BYTES | ANSWERS | DECISIONS

ID letters, digits, '-' and '.'.  MODE forward (BYTES go to the proxy as
they are: absolute-form requests, CONNECTs), tunnel (first "CONNECT
allowed.test:PORT", its answer awaited, then BYTES inside the tunnel) or
mix (as forward; several requests of both forms on one connection).
BYTES: \\r \\n \\t \\\\ and \\xHH escapes; @PORT@ is the origin's port,
@PROXY@ the proxy's; @WAIT@ sends what came before it and waits for one
more answer before going on.  ANSWERS: tokens separated by ",", in the
order they come: STATUS, STATUS:REASON, "origin" (any answer without
X-Intutic-Error), alternatives joined by "/"; "-" for none.  DECISIONS:
PROTO:HOST:DECISION[:REASON] tokens separated by ",", "-" for none, "*"
for not checked.

Only 127.0.0.1 is ever connected to.  Every wait is bounded.  Standard
library only.
"""

import argparse
import json
import os
import re
import select
import socket
import sys
import time

# Limits: every wait and buffer is bounded.
CASE_SECONDS = 5.0        # reading one case's answers, at most
WAIT_SECONDS = 3.0        # an @WAIT@ for one more answer, at most
GRACE = 0.3               # quiet after the expected answers: nothing more
SETTLE_SECONDS = 5.0      # the close record and the connection count
SCRAPE_SECONDS = 2.0      # one /metrics request
LOG_LAG = 0.1             # for the origin to write its last line
READ_MAX = 1 << 20        # bytes of answers kept per case
CASES_MAX = 1000
LINE_MAX = 65536
POLL = 0.02

CONNECT = (b"CONNECT allowed.test:@PORT@ HTTP/1.1\r\n"
           b"Host: allowed.test:@PORT@\r\n\r\n@WAIT@")
FIELDS = 5
MODES = ("forward", "tunnel", "mix")


def die(msg):
    sys.stderr.write("adversarial: %s\n" % msg)
    sys.exit(2)


def unescape(text, where):
    """The BYTES field as bytes: \\r \\n \\t \\\\ \\xHH."""
    out = bytearray()
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out += c.encode("latin-1")
            i += 1
            continue
        if i + 1 >= n:
            die("%s: a '\\' ends the bytes" % where)
        e = text[i + 1]
        if e in "rnt\\":
            out += {"r": b"\r", "n": b"\n", "t": b"\t", "\\": b"\\"}[e]
            i += 2
        elif e == "x" and re.match(r"[0-9A-Fa-f]{2}\Z", text[i + 2:i + 4]):
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        else:
            die("%s: unknown escape '\\%s' (\\r \\n \\t \\\\ \\xHH)" % (where, e))
    return bytes(out)


def load_cases(path):
    cases = []
    seen = set()
    with open(path, encoding="latin-1") as f:
        for lineno, line in enumerate(f, 1):
            if lineno > CASES_MAX * 10:
                die("%s: too many lines" % path)
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            where = "%s:%d" % (path, lineno)
            parts = line.split(" | ")
            if len(parts) != FIELDS:
                die("%s: expected %d fields separated by ' | ', got %d"
                    % (where, FIELDS, len(parts)))
            cid, mode, data, answers, decisions = (p.strip() for p in parts)
            if not re.match(r"[A-Za-z0-9][A-Za-z0-9.-]*\Z", cid):
                die("%s: bad id '%s'" % (where, cid))
            if cid in seen:
                die("%s: id '%s' given twice" % (where, cid))
            seen.add(cid)
            if mode not in MODES:
                die("%s: mode '%s' is not one of %s" % (where, mode, ", ".join(MODES)))
            cases.append({
                "id": cid, "mode": mode, "where": where,
                "bytes": unescape(data, where),
                "answers": [] if answers == "-" else answers.split(","),
                "decisions": decisions,
            })
            if len(cases) > CASES_MAX:
                die("%s: more than %d cases" % (path, CASES_MAX))
    return cases


def parse_answers(buf, closed):
    """The complete answers at the start of buf: a list of tokens."""
    out = []
    pos = 0
    for _ in range(1000):
        end = buf.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        head = buf[pos:end].decode("latin-1").split("\r\n")
        body = end + 4
        m = re.match(r"HTTP/\d\.\d (\d{3})", head[0])
        if not m:
            out.append("junk")
            break
        status = int(m.group(1))
        fields = {}
        for h in head[1:]:
            k, _, v = h.partition(":")
            fields.setdefault(k.strip().lower(), v.strip())
        err = fields.get("x-intutic-error")
        token = "%d:%s" % (status, err) if err else "%d" % status
        if "content-length" in fields and fields["content-length"].isdigit():
            nxt = body + int(fields["content-length"])
            if nxt > len(buf):
                break
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            nxt = chunked_end(buf, body)
            if nxt < 0:
                break
        elif status < 200 or status in (204, 304) or 200 <= status < 300:
            # a 2xx without a length answers a CONNECT: no body
            nxt = body
        else:
            if not closed:
                break
            nxt = len(buf)
        out.append(token)
        pos = nxt
    return out


def chunked_end(buf, pos):
    for _ in range(100000):
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return -1
        try:
            n = int(buf[pos:eol].split(b";")[0], 16)
        except ValueError:
            return len(buf)
        if n == 0:
            end = buf.find(b"\r\n\r\n", eol)
            return -1 if end < 0 else end + 4
        pos = eol + 2 + n + 2
        if pos > len(buf):
            return -1
    return len(buf)


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS)
        self.sock.setblocking(False)
        self.buf = b""
        self.how = "open"
        self.port = self.sock.getsockname()[1]

    def read(self, timeout):
        """One read, waiting at most timeout; False once the peer closed."""
        if self.how != "open":
            return False
        r, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not r:
            return True
        try:
            d = self.sock.recv(65536)
        except BlockingIOError:
            return True
        except (ConnectionResetError, OSError):
            self.how = "reset"
            return False
        if not d:
            self.how = "eof"
            return False
        if len(self.buf) < READ_MAX:
            self.buf += d[:READ_MAX - len(self.buf)]
        return True

    def send(self, data):
        deadline = time.monotonic() + WAIT_SECONDS
        while data and self.how == "open" and time.monotonic() < deadline:
            _, w, _ = select.select([], [self.sock], [], POLL)
            if not w:
                continue
            try:
                n = self.sock.send(data)
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError, OSError):
                self.how = "reset"
                return
            data = data[n:]

    def count(self):
        return len(parse_answers(self.buf, self.how != "open"))

    def wait_answers(self, n, seconds):
        deadline = time.monotonic() + seconds
        while self.count() < n and time.monotonic() < deadline:
            if not self.read(min(POLL * 5, deadline - time.monotonic())):
                break

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def run_one(case, args):
    data = case["bytes"]
    if case["mode"] == "tunnel":
        data = CONNECT + data
    data = data.replace(b"@PORT@", str(args.origin_port).encode())
    data = data.replace(b"@PROXY@", str(args.proxy).encode())
    pieces = data.split(b"@WAIT@")
    c = Client(args.proxy)
    want = 0
    for piece in pieces[:-1]:
        c.send(piece)
        want = c.count() + 1
        c.wait_answers(want, WAIT_SECONDS)
    c.send(pieces[-1])
    want = max(want, len(case["answers"]))
    deadline = time.monotonic() + CASE_SECONDS
    quiet_since = None
    how = "timeout"
    while time.monotonic() < deadline:
        before = len(c.buf)
        if not c.read(POLL * 5):
            how = c.how
            break
        if c.count() >= want:
            if len(c.buf) != before or quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= GRACE:
                how = "idle"
                break
    c.close()
    return data, c, how


def scrape_active(port):
    """intutic_connections_active from the proxy's /metrics, or None."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=SCRAPE_SECONDS)
    except OSError:
        return None
    buf = b""
    try:
        s.settimeout(SCRAPE_SECONDS)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        for _ in range(10000):
            d = s.recv(65536)
            if not d or len(buf) > READ_MAX:
                break
            buf += d
    except OSError:
        return None
    finally:
        s.close()
    m = re.search(rb"^intutic_connections_active (\d+)", buf, re.M)
    return int(m.group(1)) if m else None


def audit_of(path, offset, client):
    """The complete audit lines after offset whose client is client."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read()
    except OSError:
        return []
    out = []
    for line in text.split(b"\n")[:-1]:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("client") == client:
            out.append(rec)
    return out


def size_of(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def resolve(expect, got, origin_ok):
    """The expected tokens with each alternative resolved against got."""
    out = []
    for i, tok in enumerate(expect):
        have = got[i] if i < len(got) else None
        alts = tok.split("/")
        pick = alts[0]
        for a in alts:
            if a == "origin" and have is not None and origin_ok(have):
                pick = have
                break
            if a == have:
                pick = a
                break
        out.append(pick)
    return out


def decision_tokens(recs):
    """PROTO:HOST:DECISION:REASON of each decision record; "-" for a field
    that is null or missing (the host of a request refused before it named
    one)."""
    def f(r, k):
        v = r.get(k)
        return "-" if v is None or v == "" else str(v)
    return ["%s:%s:%s:%s" % (f(r, "proto"), f(r, "host"), f(r, "decision"),
                              f(r, "reason"))
            for r in recs if r.get("event") == "decision"]


def write(path, text):
    with open(path, "w", encoding="latin-1") as f:
        f.write(text)


def lines(tokens):
    return "".join(t + "\n" for t in tokens)


def main():
    ap = argparse.ArgumentParser(description="run t/data/adversarial/cases "
                                 "against intutic-proxy (see the module text)",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--proxy", type=int, required=True, help="the proxy's port")
    ap.add_argument("--origin-port", type=int, required=True)
    ap.add_argument("--origin-log", required=True)
    ap.add_argument("--audit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="ID,... : only these cases")
    ap.add_argument("--list", action="store_true",
                    help="print 'ID MODE' for each case and stop")
    args = ap.parse_args()
    cases = load_cases(args.cases)
    if args.list:
        for c in cases:
            print("%s %s" % (c["id"], c["mode"]))
        return
    if args.only:
        only = set(args.only.split(","))
        cases = [c for c in cases if c["id"] in only]
    for case in cases:
        d = os.path.join(args.out, case["id"])
        os.makedirs(d, exist_ok=True)
        log_at = size_of(args.origin_log)
        audit_at = size_of(args.audit)
        data, c, how = run_one(case, args)
        client = "127.0.0.1:%d" % c.port
        deadline = time.monotonic() + SETTLE_SECONDS
        recs, active = [], None
        while True:
            recs = audit_of(args.audit, audit_at, client)
            closes = sum(1 for r in recs if r.get("event") == "close")
            active = scrape_active(args.proxy)
            if (closes >= 1 and active == 1) or time.monotonic() >= deadline:
                break
            time.sleep(POLL)
        time.sleep(LOG_LAG)
        recs = audit_of(args.audit, audit_at, client)
        with open(args.origin_log, "rb") as f:
            f.seek(log_at)
            seen = f.read(READ_MAX)
        got = parse_answers(c.buf, True)
        expect = resolve(case["answers"], got, lambda t: ":" not in t)
        dec = decision_tokens(recs)
        if case["decisions"] == "*":
            dec_expect = list(dec)
        elif case["decisions"] == "-":
            dec_expect = []
        else:
            dec_expect = case["decisions"].split(",")
            # a token without a reason matches any reason
            for i, t in enumerate(dec_expect):
                if i < len(dec) and t.count(":") == 2:
                    dec[i] = dec[i].rsplit(":", 1)[0]
        with open(os.path.join(d, "request"), "wb") as f:
            f.write(data.replace(b"@WAIT@", b""))
        with open(os.path.join(d, "raw"), "wb") as f:
            f.write(c.buf)
        with open(os.path.join(d, "origin.log"), "wb") as f:
            f.write(seen)
        write(os.path.join(d, "answers"), lines(got))
        write(os.path.join(d, "answers.expect"), lines(expect))
        write(os.path.join(d, "decisions"), lines(dec))
        write(os.path.join(d, "decisions.expect"), lines(dec_expect))
        write(os.path.join(d, "audit.jsonl"),
              "".join(json.dumps(r) + "\n" for r in recs))
        write(os.path.join(d, "closes"),
              "%d\n" % sum(1 for r in recs if r.get("event") == "close"))
        write(os.path.join(d, "active"), "%s\n" % active)
        write(os.path.join(d, "how"), how + "\n")
        print("%s: %s, answers %s, decisions %s" % (case["id"], how,
              ",".join(got) or "-", ",".join(decision_tokens(recs)) or "-"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
